"""Operating characteristics of the base-vs-head gate: false alarms over all looks, slowdowns caught.

From real sessions (``tests/data/pair_sessions.json``: ``scripts/pair_sessions.py`` on the CPU
machine class, unchanged code and two slowdowns as real code changes, interleaved) come

- the verdicts those sessions reached (replayed here with the committed decision), and
- the noise of a run within a session, and its drift: in each session a line through log
  img/s against the run's place in the session, per arm; the residual SD is the run noise,
  the slopes' spread the drift from session to session.

A seeded simulation then drives the real decision (:func:`pytest_bpsperf.judge.pairs.decide_pairs`)
and the real stopping rule (pairs until decided, up to ``max_pairs``) with runs drawn from
that noise and drift, in the alternating order of a real session. The figures are stated in the
docs/method.md ("What the verdicts can detect").
"""

from __future__ import annotations

import json
import math
import random

import pytest
from helpers.paths import DATA as DATA_DIR, ROOT

from pytest_bpsperf.judge.pairs import decide_pairs, first_arm
from pytest_bpsperf.stats.paired import MIN_PAIRS

DATA = DATA_DIR / "pair_sessions.json"


def sessions(kind: "str | None" = None) -> list:
    found = json.loads(DATA.read_text())["sessions"]
    return [s for s in found if kind is None or s["kind"] == kind]


def _line(ys: "list[float]", xs: "list[float]") -> "tuple[float, float, list[float]]":
    """Least squares ``y = a + b x``: (a, b, residuals)."""
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    a = my - b * mx
    return a, b, [y - a - b * x for x, y in zip(xs, ys)]


def noise_and_drift() -> "tuple[float, float, float]":
    """(run SD, mean drift per run, SD of the drift between sessions), on log img/s, from every session."""
    ss, dof, slopes = 0.0, 0, []
    for s in sessions():
        for arm in ("base", "head"):
            runs = [(i, math.log(r["img_per_sec"])) for i, r in enumerate(s["runs"]) if r["arm"] == arm]
            if len(runs) < 3:
                continue
            _a, b, res = _line([y for _i, y in runs], [float(i) for i, _y in runs])
            ss += sum(r * r for r in res)
            dof += len(runs) - 2
            slopes.append(b)
    mean = sum(slopes) / len(slopes)
    sd = math.sqrt(sum((b - mean) ** 2 for b in slopes) / (len(slopes) - 1))
    return math.sqrt(ss / dof), mean, sd


RUN_SD, DRIFT, DRIFT_SD = noise_and_drift()


def simulate_job(rng: random.Random, change: float, *, tolerance: float = 0.15, confidence: float = 0.99,
                 max_pairs: int = 12, seed: int = 0) -> "tuple[str, int]":
    """One job of pairs, as the plugin runs it: (verdict status, pairs taken)."""
    slope = rng.gauss(DRIFT, DRIFT_SD)
    table: list = []
    t = 0
    while True:
        index = len(table)
        order = ("base", "head") if first_arm(seed, "job", index) == "base" else ("head", "base")
        img = {}
        for arm in order:
            img[arm] = math.exp(slope * t + rng.gauss(0.0, RUN_SD) + (change if arm == "head" else 0.0))
            t += 1
        table.append({"pair": index + 1, "order": "-".join(order), "base_img_per_sec": img["base"],
                      "head_img_per_sec": img["head"], "ratio": img["head"] / img["base"]})
        v = decide_pairs(nodeid="t", test="t", trick="x", profile_id="p", key="k", pairs=table, tolerance=tolerance,
                         confidence=confidence, first_look=MIN_PAIRS, max_pairs=max_pairs)
        if v.comparison.decided or len(table) >= max_pairs:
            return v.status, len(table)


def rates(change: float, trials: int, seed: int, **gate) -> "tuple[float, float, float]":
    """(share called regression, share inconclusive, mean pairs) of ``trials`` simulated jobs."""
    rng = random.Random(seed)
    out = [simulate_job(rng, change, seed=k, **gate) for k in range(trials)]
    n = len(out)
    return (sum(s == "regression" for s, _ in out) / n, sum(s == "inconclusive" for s, _ in out) / n,
            sum(p for _, p in out) / n)


def test_the_noise_comes_from_real_sessions_of_each_kind():
    kinds = {s["kind"] for s in sessions()}
    assert {"aa", "s15", "s25"} <= kinds
    assert all(len(sessions(k)) >= 10 for k in ("aa", "s15", "s25"))
    assert 0.005 < RUN_SD < 0.15
    assert abs(DRIFT) < 0.05


def test_real_sessions_replayed_give_the_verdicts_they_gave():
    # the committed decision on each session's own pair table is what that session reported
    for s in sessions():
        (job,) = s["jobs"]
        v = decide_pairs(nodeid="t", test="t", trick="x", profile_id="p", key="k", pairs=job["pair_table"],
                         tolerance=0.15, confidence=0.99, first_look=MIN_PAIRS, max_pairs=12)
        assert v.status == job["status"], s["index"]
    # unchanged code never regressed; both slowdowns were caught
    assert all(s["jobs"][0]["status"] != "regression" for s in sessions("aa"))
    assert all(s["jobs"][0]["status"] == "regression" for s in sessions("s25"))


def test_false_alarms_over_all_looks_stay_at_the_nominal_rate():
    # one-sided 0.5% at 99% over every look of a job, with the drift measured here
    false_alarms, _inconclusive, _pairs = rates(0.0, trials=4000, seed=1)
    assert false_alarms <= 0.008


def test_a_15_percent_drop_is_caught_at_least_90_percent_of_the_time():
    caught, _inconclusive, pairs = rates(math.log(0.85), trials=1000, seed=2)
    assert caught >= 0.9
    assert pairs <= 12


@pytest.mark.parametrize("name, change, tolerance", [
    ("unchanged", 0.0, 0.15),
    ("10% slower", math.log(0.90), 0.15),
    ("10% slower", math.log(0.90), 0.10),
    ("15% slower", math.log(0.85), 0.15),
    ("25% slower", math.log(0.75), 0.15),
])
def test_figures_in_the_method_page_are_these(name, change, tolerance):
    # docs/method.md quotes these simulated rates; a change of method or noise data must update it.
    page = (ROOT / "docs" / "method.md").read_text()
    caught, inconclusive, pairs = rates(change, trials=1000, seed=7, tolerance=tolerance)
    row = f"| {name}, tolerance {tolerance:.0%} | {caught:.1%} | {inconclusive:.1%} | {pairs:.1f} |"
    assert row in page, row
