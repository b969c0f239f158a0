"""``stats/sequential.py``: base against head in one session, a sequential test on interleaved runs.

The per-look levels computed ahead (pytest_bpsperf/stats/look_levels.json): the simulation's own
output, read instead of simulating, never used when made with another design.

The repeated looks of the base-vs-head gate are calibrated: each check crosses its limit at the stated rate.
:func:`pytest_bpsperf.stats.sequential.look_level` gives every look of a check the
same nominal level, chosen so that over all looks the check crosses at its
one-sided rate (0.5% for the noise check at 99%, 10% for the tolerance checks).
These tests measure the rate with an implementation of their own (numpy, another
seed, the estimator's least squares written out again), so a level that is not
corrected for the looks, or corrected to another rate, fails them; and they
measure the whole rule's false alarms with the tolerance out of the way (0), where
only the noise check stands between unchanged code and a regression.
"""

from __future__ import annotations

import inspect
import json
import math
import random

import pytest

from pytest_bpsperf.judge.pairs import decide_pairs
from pytest_bpsperf.stats import rule
from pytest_bpsperf.stats import sequential as paired
from pytest_bpsperf.stats.sequential import PairRuns, estimate, look_level
from pytest_bpsperf.stats.tdist import t_quantile


@pytest.fixture
def no_simulation(monkeypatch):
    """Any simulation from here on fails the test: only the file may answer."""

    def refuse(*args):
        raise AssertionError(f"simulated {args}")

    monkeypatch.setattr(paired, "_smallest_p", refuse)


def test_the_file_holds_the_defaults_and_is_of_todays_design():
    doc = json.loads(paired.LEVELS_FILE.read_text())
    assert doc["design"] == paired.simulation_design()
    for alpha in ((1 - 0.99) / 2, rule.TOLERANCE_LEVEL):  # the default confidence and the tolerance checks
        assert paired.level_key("ancova", 3, 20, alpha) in doc["levels"]


@pytest.mark.parametrize("design", [(3, 20, (1 - 0.99) / 2), (3, 20, rule.TOLERANCE_LEVEL), (4, 12, (1 - 0.95) / 2)])
def test_a_shipped_level_is_the_number_the_simulation_gives(design):
    first, last, alpha = design
    shipped = paired.computed_levels()[paired.level_key("ancova", first, last, alpha)]
    assert shipped == paired.simulated_look_level(first, last, alpha, "ancova")


def test_a_session_of_a_shipped_design_reads_the_level_and_simulates_nothing(no_simulation):
    level = paired.look_level(3, 20, (1 - 0.99) / 2)
    assert 0 < level < 0.005  # stricter per look than over all looks
    c = paired.paired_compare(
        [paired.PairRuns(i, 0.0, 0.01 * (i % 2), i % 2 == 0) for i in range(5)],
        tolerance=0.1,
        confidence=0.99,
        first_look=3,
        last_look=20,
    )
    assert c.looks == 3


def test_a_design_the_file_lacks_is_simulated(no_simulation):
    with pytest.raises(AssertionError, match="simulated"):
        paired.look_level(3, 41, 0.005)


def test_a_file_of_another_design_or_unreadable_is_not_used(tmp_path, monkeypatch):
    other = tmp_path / "look_levels.json"
    doc = json.loads(paired.LEVELS_FILE.read_text())
    doc["design"]["seed"] += 1
    other.write_text(json.dumps(doc))
    monkeypatch.setattr(paired, "LEVELS_FILE", other)
    paired.computed_levels.cache_clear()
    try:
        assert paired.computed_levels() == {}
        other.write_text("{not json")
        paired.computed_levels.cache_clear()
        assert paired.computed_levels() == {}
    finally:
        monkeypatch.undo()
        paired.computed_levels.cache_clear()
    assert paired.computed_levels()  # the shipped file again


np = pytest.importorskip("numpy")

FIRST, LAST = 3, 20  # the default design: first look after 3 pairs, max_pairs 20


def null_t(estimator: str, sims: int, last: int, seed: int) -> "tuple[np.ndarray, np.ndarray]":
    """t statistics (sims x looks) of null sequences (iid normal runs, arms alternating, base first), and dofs."""
    rng = np.random.default_rng(seed)
    y = rng.standard_normal((sims, 2 * last))  # run k of the job: slot k
    head = np.array([(k % 2) if (k // 2) % 2 == 0 else 1 - (k % 2) for k in range(2 * last)], float)
    slot = np.arange(2 * last, dtype=float)
    ts, dofs = [], []
    for n in range(FIRST, last + 1):
        m = 2 * n
        if estimator == "paired":
            d = (y[:, :m] * np.where(head[:m] == 1, 1.0, -1.0)).reshape(sims, n, 2).sum(2)
            t = d.mean(1) / (d.std(1, ddof=1) / math.sqrt(n))
            dof = n - 1
        else:
            X = np.stack([np.ones(m), head[:m], slot[:m]], 1)
            inv = np.linalg.inv(X.T @ X)
            beta = y[:, :m] @ X @ inv  # least squares of every sequence at once
            resid = y[:, :m] - beta @ X.T
            dof = m - 3
            se = np.sqrt((resid * resid).sum(1) / dof * inv[1, 1])
            t = beta[:, 1] / se
        ts.append(t)
        dofs.append(dof)
    return np.stack(ts, 1), np.array(dofs)


def crossing_rate(t: "np.ndarray", dofs: "np.ndarray", level: float) -> float:
    """Share of sequences whose t reaches -t_{1-level}(dof) at one look or more."""
    limits = np.array([t_quantile(1.0 - level, int(d)) for d in dofs])
    return float((t <= -limits).any(1).mean())


SIMS = 40_000
STATS = {est: null_t(est, SIMS, LAST, seed=99) for est in paired.ESTIMATORS}


def whole_rule_false_alarms(jobs: int, seed: int, tolerance: float = 0.0) -> float:
    """Share of unchanged jobs called a regression by the plugin's decision and stopping rule."""
    rng = random.Random(seed)
    called = 0
    for _ in range(jobs):
        table: list = []
        for index in range(LAST):
            order = ("base-head", "head-base")[index % 2]
            base, head = math.exp(rng.gauss(0, 0.05)), math.exp(rng.gauss(0, 0.05))
            table.append(
                {
                    "pair": index + 1,
                    "order": order,
                    "base_img_per_sec": base,
                    "head_img_per_sec": head,
                    "ratio": head / base,
                }
            )
            v = decide_pairs(
                nodeid="t",
                test="t",
                trick="x",
                profile_id="p",
                key="k",
                pairs=table,
                tolerance=tolerance,
                confidence=0.99,
                first_look=FIRST,
                max_pairs=LAST,
            )
            if v.comparison.decided:
                break
        called += v.status == "regression"
    return called / jobs


def test_the_independent_statistic_is_the_estimators_own():
    # the numpy least squares above computes what stats.paired.estimate computes, run for run
    rng = random.Random(3)
    for est in paired.ESTIMATORS:
        for n in (3, 7):
            pairs = [PairRuns(i, rng.gauss(0, 0.05), rng.gauss(0, 0.05), i % 2 == 0) for i in range(n)]
            e = estimate(pairs, est)
            ys = []
            for p in pairs:
                ys += [p.log_base, p.log_head] if p.base_first else [p.log_head, p.log_base]
            y = np.array([ys])
            head = np.array([(k % 2) if (k // 2) % 2 == 0 else 1 - (k % 2) for k in range(2 * n)], float)
            X = np.stack([np.ones(2 * n), head, np.arange(2 * n, dtype=float)], 1)
            if est == "ancova":
                beta, *_ = np.linalg.lstsq(X, y[0], rcond=None)
                assert e.diff == pytest.approx(beta[1], abs=1e-12)
            else:
                assert e.diff == pytest.approx(np.mean([p.log_ratio for p in pairs]), abs=1e-12)


@pytest.mark.parametrize("estimator", paired.ESTIMATORS)
@pytest.mark.parametrize("alpha", [0.005, rule.TOLERANCE_LEVEL])
def test_each_check_crosses_at_its_rate_over_all_looks(estimator, alpha):
    t, dofs = STATS[estimator]
    rate = crossing_rate(t, dofs, look_level(FIRST, LAST, alpha, estimator))
    se = math.sqrt(alpha * (1 - alpha) / SIMS)
    # at most the rate (with this simulation's error), and not far below it: the level errs safe by
    # two Monte Carlo errors of its own simulation (about 3% of alpha at 0.5%, 1% at 10%), no more
    assert alpha * (1 - 2 / math.sqrt(alpha * 50_000)) - 4 * se <= rate <= alpha + 3 * se


@pytest.mark.parametrize("estimator", paired.ESTIMATORS)
@pytest.mark.parametrize("alpha", [0.005, rule.TOLERANCE_LEVEL])
def test_the_check_sees_a_level_left_uncorrected_or_changed(estimator, alpha):
    # what the test above would measure if look_level forgot the looks, or were off by a factor 2
    t, dofs = STATS[estimator]
    se = math.sqrt(alpha * (1 - alpha) / SIMS)
    level = look_level(FIRST, LAST, alpha, estimator)
    assert crossing_rate(t, dofs, alpha) > alpha + 3 * se  # no correction for repeated looks
    assert crossing_rate(t, dofs, 2 * level) > alpha + 3 * se
    assert crossing_rate(t, dofs, level / 2) < alpha * (1 - 2 / math.sqrt(alpha * 50_000)) - 4 * se


def test_one_look_is_the_fixed_sample_test_and_more_looks_need_a_smaller_level():
    assert look_level(5, 5, 0.05) == 0.05
    assert look_level(3, 12, 0.005) > look_level(3, 20, 0.005)  # more looks, more chances to cross by luck
    with pytest.raises(ValueError, match="alpha"):
        look_level(3, 20, 0.3)
    with pytest.raises(ValueError, match="estimator"):
        look_level(3, 20, 0.05, "median")


def test_the_whole_rule_with_the_tolerance_out_of_the_way_keeps_false_alarms_at_the_noise_rate():
    # tolerance 0: a regression needs only the noise check (99%: 0.5% over all looks); stopping on an
    # ok or an improvement only removes chances to cross
    assert whole_rule_false_alarms(2500, seed=11) <= 0.005 + 3 * math.sqrt(0.005 * 0.995 / 2500)


def test_the_whole_rule_check_sees_a_missing_correction(monkeypatch):
    # the same jobs with every look at the nominal level: false alarms far beyond 0.5%
    monkeypatch.setattr(paired, "look_level", lambda first, last, alpha, estimator="ancova": alpha)
    assert whole_rule_false_alarms(1500, seed=11) > 0.005 + 3 * math.sqrt(0.005 * 0.995 / 2500) + 0.005


def test_paired_comparison_takes_its_last_look_from_the_caller():
    # the last look is the max_pairs setting: the table's, passed in
    from pytest_bpsperf.stats.sequential import paired_compare

    assert inspect.signature(paired_compare).parameters["last_look"].default is inspect.Parameter.empty
