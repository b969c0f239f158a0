"""``judge/pairs.py``: base-vs-head jobs: a job's loop, the pair order, and the gate's operating characteristics.

A job's loop: what it counts, what it says while it runs, and pairs run again for foreign load.

Operating characteristics of the base-vs-head gate, from real sessions and a simulation fitted to them:
``scripts/method_tables.py`` reads the measured sessions (``tests/data/pair_sessions.json``;
``scripts/pair_sessions.py`` makes them on the CPU machine class), fits a noise model
per session (log img/s on arm and run index: each session's run noise and their
spread, the within-pair correlation, the drift), and drives the plugin's own decision
and stopping rule (:func:`pytest_bpsperf.judge.pairs.decide_pairs`, pairs until
decided, up to ``max_pairs``) with runs drawn from it, each job in a session of its
own. docs/method.md ("What the verdicts can detect") holds its tables; these tests
check the page against the data, the goal at the defaults, and that the simulation
and the replay of real sessions are the plugin's decision.
"""

from __future__ import annotations

import importlib.util
import json
import math
import random
import sys
from functools import lru_cache
from types import SimpleNamespace

import pytest

from helpers.paths import ROOT
from helpers.verdicts import paired_verdict
from pytest_bpsperf.config.settings import OPTIONS_BY_NAME
from pytest_bpsperf.judge.pairs import FOREIGN, Pair, PairedJob, first_arm

SETTINGS = dict(
    tolerance=0.10, confidence=0.99, session_spread=0.25, normalize="off", repeats=1, max_pairs=12, foreign_load=0.25
)


def spec(**settings):
    return SimpleNamespace(
        nodeid="t.py::test_x[default]",
        test="t.py::test_x",
        trick=SimpleNamespace(name="default"),
        repeat=0,
        settings=SimpleNamespace(**{**SETTINGS, **settings}),
    )


def run(img: float, foreign: "float | None" = 0.0):
    """What a pair needs of a run: its img/s, its foreign load, a job to belong to."""
    return SimpleNamespace(
        img_per_sec=img, foreign_cores=foreign, job=None, spec=spec(), measurement=SimpleNamespace(breakdown=None)
    )


class Runner:
    """Runs pair ``index`` as told: the ratio, whether the base run fails, the foreign load of each arm."""

    def __init__(self, job: PairedJob, ratios, *, fail_base=(), foreign=None, limit=0.25):
        self.job, self.ratios, self.fail_base, self.foreign, self.limit = job, ratios, set(fail_base), foreign, limit
        self.asked = []

    def __call__(self, _spec, index, first):
        self.asked.append(index)
        base_load, head_load = (self.foreign or {}).get(index, (0.0, 0.0))
        pair = Pair(
            index,
            first,
            base=None if index in self.fail_base else run(100.0, base_load),
            head=run(100.0 * self.ratios(index), head_load),
        )
        if pair.base is None:
            pair.dropped = "base run failed: worker-0 died"
        return self.job.add(pair, foreign_limit=self.limit)


def job_with(ratios, **kw):
    said = []
    job = PairedJob("k", profile_id="p", seed=1, say=said.append, on_verdict=lambda *a: None)
    runner = Runner(job, ratios, **kw)
    job._run_pair = runner  # noqa: SLF001 - the job's own runner, as the gate gives it
    runner(None, 0, job.first_arm(0))
    return job, runner, said


def test_the_progress_counts_valid_pairs_against_max_pairs_whatever_was_dropped():
    rng = random.Random(4)
    # noisy enough to stay undecided: the job runs to max_pairs, replacing two pairs of failed base runs
    job, runner, said = job_with(lambda i: math.exp(rng.gauss(0, 0.3)), fail_base={1, 2})
    job.assert_within_baseline(run(100.0))
    numbers = [int(line.split(": pair ")[1].split(" of at most")[0]) for line in said]
    assert max(numbers) <= SETTINGS["max_pairs"] and job.valid_pairs <= SETTINGS["max_pairs"]
    assert numbers == sorted(numbers) and numbers[-1] == job.valid_pairs
    assert "(2 dropped for a failed base run)" in said[-1]
    assert len(job.pairs) == job.valid_pairs + 2


def test_a_pair_whose_runs_saw_different_foreign_load_is_run_again_and_the_verdict_says_so():
    # pair 0 ran with a neighbour beside its head run: dropped and replaced; the rest agree
    job, runner, said = job_with(lambda i: 1.0 + 0.002 * (i % 3), foreign={0: (0.02, 0.95)})
    job.assert_within_baseline(run(100.0))
    first = job.pairs[0]
    assert first.dropped.startswith(FOREIGN) and "base 0.02, head 0.95 cores" in first.dropped
    assert job.foreign_dropped == 1 and job.valid_pairs == len(job.pairs) - 1
    text = job.verdict.figures()
    assert job.verdict.status == "ok" and "(1 pair run again: its two runs saw different foreign load)" in text
    assert job.verdict.pairs[0]["base_foreign_cores"] == 0.02 and job.verdict.pairs[0]["ratio"] is None


def test_foreign_load_reruns_are_bounded_and_the_rest_are_kept_and_named():
    loud = {i: (0.0, 1.0) for i in range(10)}  # a neighbour beside every head run
    job, runner, said = job_with(lambda i: 1.0 + 0.002 * (i % 3), foreign=loud)
    job.assert_within_baseline(run(100.0))
    assert job.foreign_dropped == PairedJob.MAX_FOREIGN
    assert job.foreign_kept >= 1 and job.verdict.status != "inconclusive"
    assert (
        f"kept although their runs saw different foreign load (after {PairedJob.MAX_FOREIGN} re-runs)"
        in job.verdict.figures()
        or "kept although its runs" in job.verdict.figures()
    )


def test_equal_foreign_load_on_both_runs_is_no_reason_to_run_again():
    job, runner, said = job_with(lambda i: 1.0, foreign={i: (1.0, 1.1) for i in range(10)})
    job.assert_within_baseline(run(100.0))
    assert job.foreign_dropped == 0 and job.verdict.status == "ok"


def test_pair_order_alternates_from_a_seeded_start():
    for seed in range(20):
        orders = [first_arm(seed, "k", i) for i in range(6)]
        assert orders[0::2] == [orders[0]] * 3 and orders[1::2] == [orders[1]] * 3 and orders[0] != orders[1]
    # the start depends on the seed (and the job), so both starts occur
    assert {first_arm(seed, "k", 0) for seed in range(20)} == {"base", "head"}
    assert first_arm(7, "k", 0) == first_arm(7, "k", 0)


_spec = importlib.util.spec_from_file_location("method_tables", ROOT / "scripts" / "method_tables.py")
tables = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("method_tables", tables)  # its dataclasses look their module up
_spec.loader.exec_module(tables)

EARLIER = tables.DATA.relative_to(tables.ROOT).as_posix()  # the sessions of the earlier rule
CAMPAIGNS = {
    "xeon": "tests/data/pair_sessions_xeon_2026-12-02.jsonl",
    "genoa": "tests/data/pair_sessions_genoa_2026-12-02.jsonl",
}


@lru_cache(maxsize=None)
def sessions_of(data: str):
    return tables.load(ROOT / data)


@lru_cache(maxsize=None)
def noise_of(data: str):
    return tables.fit(sessions_of(data))


SESSIONS = sessions_of(EARLIER)
NOISE = noise_of(EARLIER)
DEFAULTS = tables.Gate()


@lru_cache(maxsize=None)
def rates(change_pct: float, tolerance: float = DEFAULTS.tolerance, jobs: int = tables.JOBS, data: str = EARLIER):
    return tables.rates(noise_of(data), change_pct, tables.Gate(tolerance=tolerance), jobs=jobs)


def test_the_defaults_are_the_gates():
    assert (DEFAULTS.tolerance, DEFAULTS.max_pairs) == (
        OPTIONS_BY_NAME["tolerance"].default,
        OPTIONS_BY_NAME["max_pairs"].default,
    )


def test_the_noise_comes_from_real_sessions_of_each_kind():
    kinds = {s.kind for s in SESSIONS}
    assert "aa" in kinds and len(kinds) >= 3
    assert all(sum(s.kind == k for s in SESSIONS) >= 10 for k in kinds)
    assert 0.005 < NOISE.sd_median < 0.15
    assert 0.0 <= NOISE.rho < 0.9 and abs(NOISE.drift) < 0.05
    assert NOISE.seconds_per_run > 0


def test_the_fit_recovers_a_known_noise_model():
    # sessions drawn from a model with per-session noise and within-pair correlation give it back
    truth = tables.Noise(
        sd_median=0.05,
        sd_spread=0.3,
        rho=0.3,
        drift=0.0,
        drift_sd=0.0,
        sessions=0,
        seconds_fixed=10.0,
        seconds_per_run=20.0,
    )
    rng = random.Random(5)
    made = []
    for k in range(150):
        sd = truth.sd_median * math.exp(rng.gauss(0.0, truth.sd_spread))
        table = []
        for i in range(4 + k % 5):
            u = rng.gauss(0.0, 1.0)
            b, h = (
                math.exp(sd * (math.sqrt(truth.rho) * u + math.sqrt(1 - truth.rho) * rng.gauss(0.0, 1.0)))
                for _ in range(2)
            )
            table.append(
                {
                    "pair": i + 1,
                    "order": ("base-head", "head-base")[i % 2],
                    "base_img_per_sec": b,
                    "head_img_per_sec": h,
                    "ratio": h / b,
                }
            )
        runs = 2 * len(table)
        made.append(
            tables.Session(
                k, "aa", 0.0, tuple(table), "ok", len(table), 10.0 + 20.0 * runs, runs, "tolerance-interval", DEFAULTS
            )
        )
    got = tables.fit(made)
    assert got.sd_median == pytest.approx(0.05, rel=0.08)
    assert got.sd_spread == pytest.approx(0.3, abs=0.08)
    assert got.rho == pytest.approx(0.3, abs=0.1)
    assert (got.seconds_fixed, got.seconds_per_run) == (pytest.approx(10.0), pytest.approx(20.0))


def test_real_sessions_replayed_give_the_verdicts_they_gave():
    # a session measured with today's rule, replayed on its own pairs and gate, reaches its own verdict
    for s in SESSIONS:
        if s.rule == "tolerance-interval":
            assert tables.replay(s, s.gate) == (s.status, s.pairs), s.index
    # and, whatever rule they ran under, today's decision passes every unchanged one it can replay
    replays = [tables.replay(s, DEFAULTS) for s in SESSIONS if s.kind == "aa"]
    assert all(r is None or r[0] != "regression" for r in replays)
    assert sum(r is not None for r in replays) >= 5


def test_a_simulated_job_is_the_plugins_decision():
    # no noise: the first look decides, and a drop of the tolerance fails where half of it passes
    quiet = tables.Noise(1e-6, 0.0, 0.0, 0.0, 0.0, 0, 0.0, 1.0)
    rng = random.Random(1)
    assert tables.simulate_job(rng, quiet, 0.0, DEFAULTS, "k") == ("ok", DEFAULTS.first_look)
    assert tables.simulate_job(rng, quiet, math.log(0.9), DEFAULTS, "k")[0] == "regression"
    assert tables.simulate_job(rng, quiet, math.log(0.96), DEFAULTS, "k")[0] == "ok"


def test_with_the_tolerance_out_of_the_way_false_alarms_stay_at_the_noise_rate():
    # tolerance 0: only the noise check (0.5% over all looks at 99%) stands between a job and a regression,
    # with the fitted drift and correlation of real sessions
    r = rates(0.0, tolerance=0.0, jobs=1500)
    assert r.regression <= 0.005 + 3 * math.sqrt(0.005 * 0.995 / 1500)


# the goal holds on the runners it was measured to hold on: the data of the earlier rule, and the Xeon
# campaign at today's (22 sessions of each kind); the AMD EPYC family 25 model 17 runner's noise is about
# twice the Xeon's and its fit misses it (docs/method.md says by how much)
GOAL_DATA = {"earlier": EARLIER, "xeon": CAMPAIGNS["xeon"]}


@pytest.mark.parametrize("runner", sorted(GOAL_DATA))
def test_the_goal_at_the_defaults(runner):
    # the brief: a drop of half the tolerance (5%) fails at most 10% of the time, one of the tolerance (10%)
    # at least 90%; unchanged code fails at most 1% and is inconclusive at most 2%
    data = GOAL_DATA[runner]
    assert rates(-5.0, data=data).regression <= 0.10
    assert rates(-10.0, data=data).regression >= 0.90
    unchanged = rates(0.0, data=data)
    assert unchanged.regression <= 0.01 and unchanged.inconclusive <= 0.02


def test_the_method_page_holds_what_the_data_give():
    page = (ROOT / "docs" / "method.md").read_text()
    block = tables.render(SESSIONS, EARLIER)
    assert block in page, "docs/method.md is stale: run .venv/bin/python scripts/method_tables.py --write"


@pytest.mark.parametrize("section", sorted(CAMPAIGNS))
def test_the_method_page_holds_what_each_campaign_gives(section):
    data = CAMPAIGNS[section]
    block = tables.render(sessions_of(data), data, section)
    assert block in (ROOT / "docs" / "method.md").read_text(), (
        f"docs/method.md is stale: run scripts/method_tables.py --data {data} --section {section} --write"
    )


def test_no_interval_before_the_first_look():
    v = paired_verdict((0.9, 0.95))
    assert v.status == "inconclusive" and not v.comparison.decided
    assert v.comparison.ci_low is None and v.comparison.margin_pct is None
    assert "no interval before 3 pairs" in v.figures()
    assert json.loads(json.dumps(v.as_dict()))["ci_low"] is None
