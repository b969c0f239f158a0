"""``stats/tdist.py``: Student's t quantiles and tail probabilities against tables and closed forms."""

from __future__ import annotations

import math

import pytest

from pytest_bpsperf.stats import (
    t_cdf,
    t_quantile,
)

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


def test_huge_degrees_of_freedom_are_the_normal_distribution():
    # identical runs give Welch-Satterthwaite dof like 4e54: the series behind t took forever there
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.995)
    assert t_quantile(0.995, 4.03e54) == pytest.approx(z, rel=1e-12)
    assert t_quantile(0.005, 1e30) == pytest.approx(-z, rel=1e-12)
    assert t_cdf(3.0, 1e20) == pytest.approx(NormalDist().cdf(3.0), rel=1e-12)
    # just below the switch the t quantile is still the t quantile, and within 1e-6 of the normal one
    assert abs(t_quantile(0.995, 0.99e7) - z) < 1e-6
