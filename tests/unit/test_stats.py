"""Unit tests of pytest_bpsperf.stats: steady state, t distribution, decisions."""

from __future__ import annotations

import json
import math
import random
import re

import pytest

from pytest_bpsperf import stats
from pytest_bpsperf.stats import (
    compare,
    detect_steady_state,
    log_difference,
    scaling_efficiency,
    significance,
    summarize,
    t_cdf,
    t_quantile,
)


def _noisy(rng: random.Random, centre: float, rel_noise: float, n: int) -> list:
    return [centre * (1.0 + rng.uniform(-rel_noise, rel_noise)) for _ in range(n)]


# --- steady state -----------------------------------------------------------


def test_slow_first_steps_are_warmup():
    times = [5.0, 2.0, 1.5, 1.0, 1.02, 0.98, 1.01, 1.0, 0.99, 1.0, 1.0]
    st = detect_steady_state(times)
    assert st.warmup_steps == (0, 1, 2)
    assert st.steady_steps == tuple(range(3, 11))
    assert st.reliable
    assert "3 warm-up" in st.method


def test_flat_series_keeps_all_but_step_0():
    st = detect_steady_state([1.0] * 10)
    assert st.warmup_steps == (0,)
    assert st.steady_steps == tuple(range(1, 10))
    assert st.reliable


def test_step_0_is_warmup_even_when_fast():
    # A cached graph can make step 0 fast; it still includes the connection.
    st = detect_steady_state([0.5] + [1.0] * 9)
    assert st.warmup_steps == (0,)


def test_uneven_warmup_needs_a_settled_run():
    # A single fast step inside the warm-up must not end it.
    st = detect_steady_state([8, 3, 1, 2.5, 1, 1, 1, 1, 1, 1, 1, 1])
    assert st.warmup_steps == (0, 1, 2, 3)


def test_late_spike_does_not_discard_the_measurement():
    st = detect_steady_state([8] + [1] * 8 + [10] + [1] * 8)
    assert st.warmup_steps == (0,)
    assert 9 in st.steady_steps


@pytest.mark.parametrize("seed", range(8))
def test_noisy_series_finds_the_warmup(seed):
    rng = random.Random(seed)
    times = [10.0, 3.0, 2.5] + _noisy(rng, 0.5, 0.2, 40)
    st = detect_steady_state(times)
    assert st.warmup_steps == (0, 1, 2)
    assert st.reliable


def test_noisy_series_rarely_misjudged():
    # Statistical property over many seeds, not a lucky pick of seeds.
    wrong = 0
    for seed in range(300):
        rng = random.Random(1000 + seed)
        times = [10.0, 3.0, 2.5] + _noisy(rng, 0.5, 0.4, 30)
        st = detect_steady_state(times)
        wrong += st.warmup_steps != (0, 1, 2) or not st.reliable
    assert wrong / 300 < 0.05


def test_drifting_series_is_unreliable():
    st = detect_steady_state([2 - i / 20 for i in range(21)])
    assert not st.reliable
    assert "drifting" in st.method


def test_never_settling_series_keeps_last_min_steady():
    # Step 1 is still slow and no run of 5 settled steps fits after it: the
    # last min_steady steps are kept anyway, flagged as unreliable.
    st = detect_steady_state([9.0, 9.0, 1.0, 1.0, 1.0, 1.0], min_steady=5)
    assert st.warmup_steps == (0,)
    assert st.steady_steps == (1, 2, 3, 4, 5)
    assert not st.reliable
    assert "never settled" in st.method


def test_too_few_steps_is_unreliable():
    st = detect_steady_state([5.0, 1.0, 1.0], min_steady=3)
    assert st.warmup_steps == (0,)
    assert st.steady_steps == (1, 2)
    assert not st.reliable
    single = detect_steady_state([5.0])
    assert single.steady_steps == (0,) and not single.reliable


def test_min_steady_is_respected():
    st = detect_steady_state([9, 9, 9, 9, 9, 9, 9, 1, 1, 1], min_steady=3)
    assert len(st.steady_steps) >= 3
    assert st.steady_steps == (7, 8, 9)


@pytest.mark.parametrize("bad", [[], [1.0, -1.0, 1.0, 1.0], [1.0, float("nan"), 1.0, 1.0], ["x"]])
def test_steady_state_rejects_bad_input(bad):
    with pytest.raises(ValueError):
        detect_steady_state(bad)


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

# Two-sided 95% critical values, to 9 decimals (the printed tables round them
# to 12.706, 4.303, 2.776, 2.042).
T_975 = {1: 12.706204736, 2: 4.302652730, 4: 2.776445105, 30: 2.042272456}


@pytest.mark.parametrize("df,expected", sorted(T_975.items()))
def test_t_quantile_matches_table(df, expected):
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=1e-6)
    assert round(t_quantile(0.975, df), 3) == {1: 12.706, 2: 4.303, 4: 2.776, 30: 2.042}[df]
    assert t_quantile(0.025, df) == pytest.approx(-expected, abs=1e-6)


@pytest.mark.parametrize("p", [0.5000001, 0.6, 0.8, 0.9, 0.95, 0.99, 0.999, 0.99999])
def test_t_quantile_closed_forms(p):
    # df=1 is Cauchy, df=2 has an algebraic quantile: exact references.
    assert t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-9)
    assert t_quantile(p, 2) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)), rel=1e-9)


def test_t_cdf_inverts_quantile_and_is_symmetric():
    for df in (1, 2.5, 7, 30, 1000):
        assert t_cdf(0.0, df) == 0.5
        for p in (0.01, 0.3, 0.77, 0.975):
            assert t_cdf(t_quantile(p, df), df) == pytest.approx(p, abs=1e-12)
        assert t_cdf(-1.3, df) == pytest.approx(1 - t_cdf(1.3, df), abs=1e-14)


def test_t_approaches_normal():
    assert t_quantile(0.975, 1e6) == pytest.approx(1.959963985, abs=1e-5)
    assert t_quantile(0.975, math.inf) == pytest.approx(1.959963985, abs=1e-9)


def test_log_difference_matches_reference():
    # Reference: scipy.stats.ttest_ind(log b, log a, equal_var=True) on these data.
    a = [1.2, 3.4, 2.2, 5.1, 3.3]
    b = [2.0, 2.5, 2.9, 3.1, 2.2, 2.8]
    d = log_difference(a, b, confidence=0.95)
    assert d.dof == 9
    assert d.p_value == pytest.approx(0.7832260231045712, abs=1e-10)
    assert d.diff / (d.sd * math.sqrt(1 / 5 + 1 / 6)) == pytest.approx(-0.2834743752444079, rel=1e-9)
    assert not d.beyond_noise


def test_log_difference_degenerate_cases():
    assert log_difference([1.0, 1.0], [1.0, 1.0], confidence=0.95).p_value == 1.0
    d = log_difference([2.0, 2.0], [1.0, 1.0], confidence=0.95)
    assert d.p_value == 0.0 and d.beyond_noise
    single = log_difference([1.0], [2.0], confidence=0.95)
    assert not single.estimated and "assumed" in single.description


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
    assert {"ratio", "change_pct", "margin_pct", "min_detectable_change_pct", "ci_low", "ci_high",
            "p_value", "method", "tolerance"} <= set(d)


@pytest.mark.parametrize(
    "kwargs",
    [{"tolerance": -0.1}, {"tolerance": 1.0}, {"tolerance": 0.1, "confidence": 1.0},
     {"tolerance": 0.1, "default_rel_noise": 0.0}],
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


def test_module_does_not_import_pytest_or_numpy():
    import pathlib

    imported = set()
    for path in pathlib.Path(stats.__file__).parent.glob("*.py"):
        imported |= set(re.findall(r"^\s*(?:from|import)\s+([A-Za-z_][\w.]*)", path.read_text(), re.M))
    assert not {m.split(".")[0] for m in imported} & {"pytest", "numpy", "scipy"}
    assert {"math", "statistics"} <= imported


def test_pooled_between_recovers_the_spread_and_counts_degrees_of_freedom():
    from pytest_bpsperf.stats import pooled_between

    rng = random.Random(3)
    groups = []
    for _ in range(40):
        groups.append([[100 * math.exp(s + rng.gauss(0, 0.02)) for _ in range(3)]
                       for s in (rng.gauss(0, 0.06) for _ in range(4))])
    prior = pooled_between(groups + [[[100.0, 101.0]]])  # a group of one session adds nothing
    assert prior.dof == 40 * 3 and prior.groups == 40 and prior.sessions == 160
    assert prior.sd == pytest.approx(0.06, rel=0.15)
    assert pooled_between([[[100.0, 101.0]], []]) is None


def test_a_prior_narrows_a_one_session_margin_and_pools_with_several():
    from pytest_bpsperf.stats import BetweenPrior

    prior = BetweenPrior(tau2=0.05 ** 2, dof=20, sessions=21, groups=3, source="s")
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


def test_huge_degrees_of_freedom_are_the_normal_distribution():
    # identical runs give Welch-Satterthwaite dof like 4e54: the series behind t took forever there
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.995)
    assert t_quantile(0.995, 4.03e54) == pytest.approx(z, rel=1e-12)
    assert t_quantile(0.005, 1e30) == pytest.approx(-z, rel=1e-12)
    assert t_cdf(3.0, 1e20) == pytest.approx(NormalDist().cdf(3.0), rel=1e-12)
    # just below the switch the t quantile is still the t quantile, and within 1e-6 of the normal one
    assert abs(t_quantile(0.995, 0.99e7) - z) < 1e-6


# --- pytest-benchmark's statistics of rounds (the benchmark-json export) ------


def test_round_stats_by_hand():
    from pytest_bpsperf.stats.rounds import FIELDS, quartiles, round_stats

    # 9 = 4*2+1 rounds: Q1 a quarter past the 2nd datum, Q3 three quarters past the 7th (method 3)
    data = [5.0, 1.0, 2.0, 3.0, 4.0, 6.0, 7.0, 8.0, 100.0]
    s = round_stats(data)
    assert (s["q1"], s["q3"], s["iqr"]) == (2.75, 7.25, 4.5)
    assert (s["ld15iqr"], s["hd15iqr"], s["iqr_outliers"]) == (1.0, 8.0, 1)  # fences -4 and 14
    assert s["stddev_outliers"] == 1 and s["outliers"] == "1;1"
    assert (s["min"], s["max"], s["median"], s["rounds"], s["total"]) == (1.0, 100.0, 5.0, 9, 136.0)
    assert s["ops"] == pytest.approx(9 / 136) and s["data"] == data  # in the order measured
    assert list(s)[:len(FIELDS)] == list(FIELDS)
    assert quartiles([1.0, 2.0, 3.0, 4.0]) == (1.5, 3.5)  # method 2: the halves' medians
    assert quartiles([1.0, 2.0, 3.0]) == (1.25, 2.75)  # 4*0+3: three quarters of the way, and back
    one = round_stats([0.5])
    assert (one["q1"], one["q3"], one["stddev"], one["ld15iqr"], one["hd15iqr"]) == (0.5, 0.5, 0, 0.5, 0.5)
    with pytest.raises(ValueError, match="at least one round"):
        round_stats([])
