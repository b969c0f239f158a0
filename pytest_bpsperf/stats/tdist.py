"""Student's t distribution in plain Python: tail probabilities and quantiles.

Pure standard-library Python (no numpy, no scipy), for the interval and the
p-value of :func:`pytest_bpsperf.stats.method.log_difference`.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Tuple

_CF_EPS = 1e-15
_CF_TINY = 1e-300


def _incomplete_beta_cf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function, Lentz's method.

    Converges quickly for ``x < (a + 1) / (a + b + 2)``; the caller uses the
    symmetry ``I_x(a, b) = 1 - I_{1-x}(b, a)`` for the other side.
    """
    # The number of terms needed grows like sqrt(max(a, b)); this bound covers
    # any df that a t test on run samples can produce, with a wide margin.
    max_terms = 10000 + int(20 * math.sqrt(max(a, b)))
    c = 1.0
    d = 1.0 - (a + b) * x / (a + 1.0)
    if abs(d) < _CF_TINY:
        d = _CF_TINY
    d = 1.0 / d
    h = d
    for m in range(1, max_terms):
        # Even term d_{2m}.
        num = m * (b - m) * x / ((a + 2 * m - 1.0) * (a + 2 * m))
        d = 1.0 + num * d
        d = _CF_TINY if abs(d) < _CF_TINY else d
        c = 1.0 + num / c
        c = _CF_TINY if abs(c) < _CF_TINY else c
        d = 1.0 / d
        h *= d * c
        # Odd term d_{2m+1}.
        num = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1.0))
        d = 1.0 + num * d
        d = _CF_TINY if abs(d) < _CF_TINY else d
        c = 1.0 + num / c
        c = _CF_TINY if abs(c) < _CF_TINY else c
        d = 1.0 / d
        step = d * c
        h *= step
        if abs(step - 1.0) < _CF_EPS:
            return h
    raise ArithmeticError(f"incomplete beta did not converge for a={a}, b={b}, x={x}")


def _regularized_incomplete_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b) for a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _incomplete_beta_cf(a, b, x) / a
    return 1.0 - front * _incomplete_beta_cf(b, a, 1.0 - x) / b


#: Beyond this many degrees of freedom Student's t is taken as the normal distribution: their
#: quantiles differ by about (z^3 + z) / (4 df), under 1e-6 here, less than the incomplete beta's
#: own rounding at such dof; and its series needs ~sqrt(df) terms, which for the astronomical dof
#: of identical runs (Welch-Satterthwaite with no spread) would not end.
NORMAL_DF = 1e7


def _check_df(df: float) -> float:
    """``df`` as a float, ``inf`` beyond :data:`NORMAL_DF`; ValueError unless it is > 0."""
    df = float(df)
    if not (df > 0) or math.isnan(df):
        raise ValueError(f"degrees of freedom is {df!r}, expected a number > 0")
    return math.inf if df > NORMAL_DF else df


def _t_tail_and_central(t: float, df: float) -> Tuple[float, float]:
    """Return ``(P(T > |t|), P(0 < T < |t|))``, each to full relative precision.

    Whichever of the two is smaller is computed directly from an incomplete
    beta and the other as ``0.5 - it``: subtracting from 0.5 only loses
    precision in the larger one, where it does not matter.
    """
    t2 = t * t
    if t2 < df:
        # Near the centre: P(|T| < |t|) = I_y(1/2, df/2), y = t^2 / (df + t^2).
        central = 0.5 * _regularized_incomplete_beta(0.5, df / 2.0, t2 / (df + t2))
        return 0.5 - central, central
    # In the tails: P(|T| > |t|) = I_x(df/2, 1/2), x = df / (df + t^2).
    tail = 0.5 * _regularized_incomplete_beta(df / 2.0, 0.5, df / (df + t2))
    return tail, 0.5 - tail


def t_sf(t: float, df: float) -> float:
    """Upper tail P(T > t) of Student's t with ``df`` (possibly non-integer) dof."""
    df = _check_df(df)
    t = float(t)
    if math.isnan(t):
        raise ValueError("t is nan, expected a number")
    if math.isinf(df):
        return 0.5 * math.erfc(t / math.sqrt(2.0))
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    tail, central = _t_tail_and_central(t, df)
    return tail if t >= 0 else 0.5 + central


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) of Student's t with ``df`` (possibly non-integer) dof."""
    return t_sf(-float(t), df)


def _t_pdf(t: float, df: float) -> float:
    log_c = math.lgamma((df + 1.0) / 2.0) - math.lgamma(df / 2.0) - 0.5 * math.log(df * math.pi)
    return math.exp(log_c - (df + 1.0) / 2.0 * math.log1p(t * t / df))


def _t_quantile_newton(p: float, df: float) -> "float | None":
    """Upper quantile (p > 0.5) by Newton's method on P(T > t) = 1 - p, or None if it is slow to converge.

    Starts at the normal quantile, which lies below the t quantile; P(T > t)
    is decreasing and convex for t > 0, so every Newton step stays below the
    root and the iteration rises to it monotonically.
    """
    target = 1.0 - p
    t = NormalDist().inv_cdf(p)
    for _ in range(60):
        tail, _central = _t_tail_and_central(t, df)
        step = (tail - target) / _t_pdf(t, df)
        t += step
        if abs(step) <= 1e-13 * max(1.0, abs(t)):
            return t
    return None


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` dof (e.g. 0.975, 4 -> 2.776).

    Newton's method from the normal quantile (a few steps; see
    :func:`_t_quantile_newton`), else found by bisection, which needs no derivative and cannot diverge; 200
    halvings reach the limit of double precision. Near the median the
    bisection matches ``P(0 < T < t)`` to ``p - 0.5`` and in the upper half
    ``P(T > t)`` to ``1 - p``: both targets are exact in floating point.
    """
    df = _check_df(df)
    p = float(p)
    if not 0.0 < p < 1.0:
        raise ValueError(f"p is {p!r}, expected 0 < p < 1")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    normal = math.isinf(df)
    if normal:
        return NormalDist().inv_cdf(p)
    fast = _t_quantile_newton(p, df)
    if fast is not None:
        return fast
    use_central = p < 0.75
    target = p - 0.5 if use_central else 1.0 - p

    def below_target(t: float) -> bool:
        # True when the quantile lies above t.
        if normal:
            tail = 0.5 * math.erfc(t / math.sqrt(2.0))
            central = 0.5 * math.erf(t / math.sqrt(2.0))
        else:
            tail, central = _t_tail_and_central(t, df)
        return central < target if use_central else tail > target

    hi = 1.0
    while below_target(hi):
        hi *= 2.0
        if hi > 1e300:
            return math.inf
    lo = 0.0
    for _ in range(2000):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if below_target(mid):
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def normal_quantile(p: float) -> float:
    """Standard normal quantile (the t quantile with infinite dof)."""
    return t_quantile(p, math.inf)
