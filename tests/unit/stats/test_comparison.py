"""``stats/comparison.py``: summaries and decisions on the one statistical method: regressions, noise, significance."""

from __future__ import annotations

import json
import math
import random

import pytest

from pytest_bpsperf.stats import (
    compare,
    scaling_efficiency,
    significance,
    summarize,
)


def _noisy(rng: random.Random, centre: float, rel_noise: float, n: int) -> list:
    return [centre * (1.0 + rng.uniform(-rel_noise, rel_noise)) for _ in range(n)]


# --- summary ----------------------------------------------------------------


def test_summary_values():
    s = summarize([1.0, 2.0, 3.0, 4.0])
    assert s.n == 4
    assert s.median == 2.5
    assert s.mean == 2.5
    assert s.stdev == pytest.approx(1.2909944487358056)
    assert (s.min, s.max) == (1.0, 4.0)
    assert s.rel_spread == pytest.approx(1.2909944487358056 / 2.5)
    assert json.loads(json.dumps(s.as_dict())) == s.as_dict()
    assert set(s.as_dict()) == {"n", "median", "mean", "stdev", "min", "max", "rel_spread"}


def test_summary_single_sample_has_no_spread():
    s = summarize([7.0])
    assert s.stdev == 0.0 and s.rel_spread == 0.0 and s.median == 7.0


# --- Student t ----------------------------------------------------------------


def test_verdict_and_matrix_share_one_method():
    rng = random.Random(3)
    a, b = _noisy(rng, 1000, 0.05, 4), _noisy(rng, 900, 0.05, 4)
    c = compare(a, b, tolerance=0.05, confidence=0.95)
    s = significance(a, b)
    assert c.p_value == pytest.approx(s.p_value)
    assert c.change_pct == pytest.approx(s.change_pct)


# --- compare ------------------------------------------------------------------


def test_clear_regression():
    rng = random.Random(1)
    base = _noisy(rng, 1000, 0.02, 5)
    cur = _noisy(rng, 700, 0.02, 5)
    c = compare(base, cur, tolerance=0.1, confidence=0.95)
    assert c.verdict == "regression"
    assert c.change_pct == pytest.approx(-30, abs=3)
    assert c.ci_low < c.ratio < c.ci_high < 1.0
    assert c.p_value is not None and c.p_value < 0.001
    assert c.noise_estimated and c.dof == 8
    assert "log" in c.method


@pytest.mark.parametrize("seed", range(6))
def test_noise_only_is_never_a_regression_and_undecided_is_inconclusive(seed):
    rng = random.Random(seed)
    c = compare(_noisy(rng, 1000, 0.2, 3), _noisy(rng, 1000, 0.2, 3), tolerance=0.1, confidence=0.95)
    assert c.verdict != "regression"
    assert c.verdict == ("inconclusive" if not c.decided else c.verdict)
    assert c.decided == (c.verdict != "inconclusive")


def test_noise_only_false_regression_rate_is_small():
    # Unchanged code must not fail: over many seeds the false alarm rate
    # stays near the one-sided 2.5% of a 95% two-sided interval.
    alarms = 0
    for seed in range(400):
        rng = random.Random(seed)
        c = compare(_noisy(rng, 1000, 0.2, 3), _noisy(rng, 1000, 0.2, 3), tolerance=0.1, confidence=0.95)
        alarms += c.verdict == "regression"
    assert alarms / 400 <= 0.05


def test_real_drop_is_found_with_enough_repeats():
    hits = sum(
        compare(
            _noisy(random.Random(s), 1000, 0.05, 3),
            _noisy(random.Random(s + 7919), 700, 0.05, 3),
            tolerance=0.1,
            confidence=0.95,
        ).verdict
        == "regression"
        for s in range(100)
    )
    assert hits >= 95


def test_improvement():
    rng = random.Random(3)
    c = compare(_noisy(rng, 4337, 0.03, 4), _noisy(rng, 6057, 0.03, 4), tolerance=0.1, confidence=0.95)
    assert c.verdict == "improvement"
    assert c.change_pct == pytest.approx(40, abs=5)
    assert c.ci_low > 1.0


def test_drop_within_huge_noise_is_inconclusive_and_says_what_it_could_detect():
    c = compare([1000, 400, 1600], [700, 280, 1120], tolerance=0.1, confidence=0.95)
    assert c.change_pct == pytest.approx(-30)
    assert c.verdict == "inconclusive" and not c.decided
    assert c.min_detectable_change_pct > 30
    assert c.margin_pct > 30


def test_drop_within_tolerance_is_ok_even_without_noise():
    c = compare([1000, 1000, 1000], [950, 950, 950], tolerance=0.1, confidence=0.95)
    assert c.verdict == "ok"
    # without noise the smallest drop that fails is half the tolerance (what must pass ends there)
    assert c.min_detectable_change_pct == pytest.approx(5)
    assert compare([1000, 1000, 1000], [940, 940, 940], tolerance=0.1, confidence=0.95).verdict == "regression"


def test_single_runs_fall_back_to_default_noise():
    c = compare([1000], [700], tolerance=0.1, confidence=0.95)
    assert not c.noise_estimated
    assert "default relative noise 25%" in c.method
    assert c.verdict == "inconclusive"  # 30% is inside the assumed noise of single runs
    assert c.p_value > 0.05  # the same method's p, from the assumed noise
    expected_margin = 1.959964 * math.log(1.25) * math.sqrt(2)
    assert c.min_detectable_change_pct == pytest.approx(100 * -math.expm1(-expected_margin), rel=1e-5)
    assert compare([1000], [400], tolerance=0.1, confidence=0.95).verdict == "regression"
    # The default is a parameter: a quieter assumption detects the 30% drop.
    assert compare([1000], [700], tolerance=0.1, default_rel_noise=0.05, confidence=0.95).verdict == "regression"


def test_comparison_as_dict_is_json():
    c = compare([1000, 1010], [990, 1001], tolerance=0.05, confidence=0.95)
    d = json.loads(json.dumps(c.as_dict()))
    assert d["verdict"] == "ok"
    assert d["baseline_summary"]["n"] == 2
    assert {
        "ratio",
        "change_pct",
        "margin_pct",
        "min_detectable_change_pct",
        "ci_low",
        "ci_high",
        "p_value",
        "method",
        "tolerance",
    } <= set(d)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"tolerance": -0.1},
        {"tolerance": 1.0},
        {"tolerance": 0.1, "confidence": 1.0},
        {"tolerance": 0.1, "default_rel_noise": 0.0},
    ],
)
def test_compare_rejects_bad_parameters(kwargs):
    with pytest.raises(ValueError):
        compare([1.0, 2.0], [1.0, 2.0], **{"confidence": 0.95, **kwargs})


def test_compare_rejects_non_positive_throughput():
    with pytest.raises(ValueError, match="current"):
        compare([1000.0], [0.0], tolerance=0.1, confidence=0.95)


# --- significance ---------------------------------------------------------------


def test_significant_trick():
    rng = random.Random(5)
    s = significance(_noisy(rng, 4337, 0.05, 4), _noisy(rng, 6057, 0.05, 4))
    assert s.significant and s.p_value is not None and s.p_value < 0.01
    assert s.change_pct == pytest.approx(40, abs=8)
    assert "pooled t" in s.method


def test_same_distribution_not_significant():
    flags = 0
    for seed in range(200):
        rng = random.Random(seed)
        flags += significance(_noisy(rng, 1000, 0.2, 4), _noisy(rng, 1000, 0.2, 4)).significant
    assert flags / 200 < 0.1


def test_single_sample_is_not_tested_unless_steps_are_given():
    s = significance([4337.0], [6057.0])
    assert s.p_value is None and not s.significant
    assert "not tested" in s.method
    assert s.change_pct == pytest.approx(100 * (6057 / 4337 - 1))
    steps = significance([430, 436, 440, 432], [600, 610, 598, 605], sample_kind="steps")
    assert steps.significant
    assert "per-step" in steps.method and "optimistic" in steps.method


def test_significance_rejects_unknown_sample_kind():
    with pytest.raises(ValueError, match="sample_kind"):
        significance([1.0, 2.0], [1.0, 2.0], sample_kind="epochs")


# --- scaling --------------------------------------------------------------------


def test_scaling_efficiency():
    assert scaling_efficiency(3600.0, 4, 1000.0) == pytest.approx(0.9)
    assert scaling_efficiency(2000.0, 2, 1000.0) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        scaling_efficiency(100.0, 0, 10.0)
    with pytest.raises(ValueError):
        scaling_efficiency(100.0, 2, 0.0)


def test_a_prior_narrows_a_one_session_margin_and_pools_with_several():
    from pytest_bpsperf.stats import BetweenPrior

    prior = BetweenPrior(tau2=0.05**2, dof=20, sessions=21, groups=3, source="s")
    assumed = compare([[100, 101, 99]], [50, 51], tolerance=0.15, confidence=0.99, session_spread=0.25)
    pooled = compare([[100, 101, 99]], [50, 51], tolerance=0.15, confidence=0.99, session_spread=0.25, prior=prior)
    assert assumed.verdict == "inconclusive" and assumed.between_source == "assumed"
    assert pooled.verdict == "regression" and pooled.between_source == "pooled" and not pooled.between_assumed
    assert pooled.margin_pct < assumed.margin_pct
    several = [[100, 101], [96, 97], [104, 103]]
    own = compare(several, [90], tolerance=0.15, confidence=0.99, session_spread=0.25)
    both = compare(several, [90], tolerance=0.15, confidence=0.99, session_spread=0.25, prior=prior)
    assert own.between_source == "estimated" and both.between_source == "pooled"
    assert both.dof == own.dof + 20
