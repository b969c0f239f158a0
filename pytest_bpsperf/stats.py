"""Measurement statistics: steady state, summaries and regression decisions.

Pure standard-library Python so that a CLI, a notebook or the pytest glue can
use it without numpy or scipy. Throughput decisions are made on
``log(img/s)``: a slowdown multiplies throughput, so noise and change are
both relative, and a log scale makes a 2x drop and a 2x gain symmetric.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

__all__ = [
    "Comparison",
    "Significance",
    "SteadyState",
    "Summary",
    "compare",
    "detect_steady_state",
    "scaling_efficiency",
    "significance",
    "summarize",
    "t_cdf",
    "t_quantile",
    "t_sf",
    "welch_test",
]

# A MAD times this constant estimates the standard deviation of normal data;
# it turns "3 MADs" into the familiar "3 sigma".
_MAD_TO_SIGMA = 1.4826
# The median of |x[i+1] - x[i]| for independent normal steps is
# 0.6745 * sqrt(2) sigma.
_ABS_DIFF_MEDIAN_TO_SIGMA = 0.6745 * math.sqrt(2.0)
# A steady region whose halves differ by less than this is steady enough.
_MIN_DRIFT = 0.05
# Below this relative slowdown a leading step is never called warm-up: even a
# perfectly flat series jitters by a few percent, and a 25% slower step on a
# warm process is unusual, while real warm-up steps are usually 2x-100x slower.
_MIN_WARMUP_THRESHOLD = 0.25


def _as_floats(values: Sequence[float], what: str, *, positive: bool) -> List[float]:
    """Validate a numeric sequence once so that every caller gets the same message."""
    out: List[float] = []
    for i, v in enumerate(values):
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise ValueError(f"{what}[{i}] is {v!r}, expected a number") from None
        if not math.isfinite(f):
            raise ValueError(f"{what}[{i}] is {f!r}, expected a finite number")
        if positive and f <= 0:
            raise ValueError(f"{what}[{i}] is {f!r}, expected a number > 0")
        out.append(f)
    if not out:
        raise ValueError(f"{what} is empty, expected at least one value")
    return out


# ---------------------------------------------------------------------------
# Steady state
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SteadyState:
    """Which training steps are warm-up and which measure throughput.

    ``reliable`` is False when the series was too short, never settled, or
    still drifts after the warm-up: the throughput is then reported but should
    not be trusted as a baseline.
    """

    warmup_steps: Tuple[int, ...]
    steady_steps: Tuple[int, ...]
    method: str
    reliable: bool

    def as_dict(self) -> Dict[str, Any]:
        """Return a JSON-ready dict."""
        return {
            "warmup_steps": list(self.warmup_steps),
            "steady_steps": list(self.steady_steps),
            "method": self.method,
            "reliable": self.reliable,
        }


def _robust_sigma(xs: Sequence[float], centre: float) -> float:
    """Noise scale of ``xs`` that neither a few outliers nor a small sample fool.

    The larger of two robust estimates: the scaled MAD, and the scaled median
    step-to-step difference. A MAD of 10-20 values collapses when they happen
    to cluster (or split in two groups); the difference-based one does not,
    so taking the larger keeps the warm-up threshold from becoming too tight.
    """
    mad = statistics.median([abs(x - centre) for x in xs])
    sigma = _MAD_TO_SIGMA * mad
    if len(xs) >= 3:
        diffs = [abs(b - a) for a, b in zip(xs, xs[1:])]
        sigma = max(sigma, statistics.median(diffs) / _ABS_DIFF_MEDIAN_TO_SIGMA)
    return sigma


def detect_steady_state(step_seconds: Sequence[float], *, min_steady: int = 3) -> SteadyState:
    """Split per-step wall times into warm-up and steady-state steps.

    Step 0 is always warm-up (graph build, memory allocation, ps-lite
    connection). The reference step time is the median of the last half of
    steps 1..n-1 and the threshold is ``max(25%, 3 robust sigmas)`` relative
    to it, the robust sigma being the larger of ``1.4826 * MAD`` and the
    scaled median step-to-step difference of that same half. Steady state
    starts at the first run of ``min_steady`` consecutive steps that are all
    within ``reference * (1 + threshold)``; everything before it is warm-up.
    Requiring a run, rather than a single
    fast step, keeps an uneven warm-up (slow, fast, slow) out of the
    measurement, and stopping at the first run keeps a lone slow step later
    on (a GC pause, a straggler) from discarding most of the data.

    At least ``min_steady`` steps are always kept, except that step 0 is
    dropped from series too short for that (it is only kept when it is the
    only step). ``reliable`` is False when fewer than ``min_steady`` steps
    follow step 0, when no run of
    ``min_steady`` settled steps exists (the last ``min_steady`` steps are
    kept), or when the medians of the two halves of the steady region differ
    by more than 5% and more than 4 standard errors (the process is still
    speeding up or slowing down).
    """
    if isinstance(min_steady, bool) or not isinstance(min_steady, int) or min_steady < 1:
        raise ValueError(f"min_steady is {min_steady!r}, expected an integer >= 1")
    times = _as_floats(step_seconds, "step_seconds", positive=True)
    n = len(times)

    if n - 1 < min_steady:
        if n == 1:
            return SteadyState(
                warmup_steps=(),
                steady_steps=(0,),
                method="only 1 step: it is kept although it includes warm-up",
                reliable=False,
            )
        return SteadyState(
            warmup_steps=(0,),
            steady_steps=tuple(range(1, n)),
            method=(
                f"only {n} steps: dropped step 0, kept {n - 1} < min_steady={min_steady}; "
                "run more steps"
            ),
            reliable=False,
        )

    later = times[1:]
    tail = later[len(later) // 2 :]
    reference = statistics.median(tail)
    sigma = _robust_sigma(tail, reference)
    threshold = max(_MIN_WARMUP_THRESHOLD, 3.0 * sigma / reference)
    bound = reference * (1.0 + threshold)
    slow = [True] + [t > bound for t in later]

    start: Optional[int] = None
    for j in range(1, n - min_steady + 1):
        if not any(slow[j : j + min_steady]):
            start = j
            break

    described = (
        f"step 0 plus leading steps slower than {1.0 + threshold:.2f}x the median of the "
        f"last half ({reference:.4g} s; threshold max(25%, 3 robust sigmas)) until "
        f"{min_steady} consecutive settled steps"
    )
    if start is None:
        start = n - min_steady
        return SteadyState(
            warmup_steps=tuple(range(start)),
            steady_steps=tuple(range(start, n)),
            method=(
                f"{described}: never settled, kept the last {min_steady} of {n} steps"
            ),
            reliable=False,
        )

    warmup = tuple(range(start))
    steady = tuple(range(start, n))
    reliable = True
    note = ""
    half = len(steady) // 2
    if half >= 2:
        region = times[start:]
        first = statistics.median(region[:half])
        last = statistics.median(region[-half:])
        drift = abs(first - last) / reference
        # Noise from step-to-step differences, which a trend barely inflates
        # (a MAD would absorb the trend into the noise and hide it). The
        # standard error of a median of h normal values is 1.2533 sigma /
        # sqrt(h); 4 of those on the difference of two medians keeps pure
        # noise from being called drift, and a drift under 5% is harmless.
        diffs = [abs(b - a) for a, b in zip(region, region[1:])]
        step_sigma = statistics.median(diffs) / _ABS_DIFF_MEDIAN_TO_SIGMA
        limit = max(_MIN_DRIFT, 4.0 * 1.2533 * step_sigma * math.sqrt(2.0 / half) / reference)
        if drift > limit:
            reliable = False
            note = f"; still drifting ({drift:.0%} between the halves of the steady region)"
    return SteadyState(
        warmup_steps=warmup,
        steady_steps=steady,
        method=f"{described}: {len(warmup)} warm-up, {len(steady)} steady{note}",
        reliable=reliable,
    )


# ---------------------------------------------------------------------------
# Summaries
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    """Descriptive statistics of a set of samples.

    ``rel_spread`` is the coefficient of variation ``stdev / mean`` (0 for a
    single sample). It was chosen over IQR/median because baselines usually
    hold 2-5 runs, where quartiles are mostly interpolation, and because it is
    close to the standard deviation of the logs that :func:`compare` uses.
    """

    n: int
    median: float
    mean: float
    stdev: float
    min: float
    max: float
    rel_spread: float

    def as_dict(self) -> Dict[str, Any]:
        """Return a JSON-ready dict."""
        return asdict(self)


def summarize(samples: Sequence[float]) -> Summary:
    """Summarize samples (n, median, mean, sample stdev, min, max, stdev/mean)."""
    xs = _as_floats(samples, "samples", positive=False)
    n = len(xs)
    mean = math.fsum(xs) / n
    stdev = statistics.stdev(xs) if n >= 2 else 0.0
    rel_spread = stdev / abs(mean) if mean != 0 else (0.0 if stdev == 0 else math.inf)
    return Summary(
        n=n,
        median=float(statistics.median(xs)),
        mean=mean,
        stdev=stdev,
        min=min(xs),
        max=max(xs),
        rel_spread=rel_spread,
    )


# ---------------------------------------------------------------------------
# Student t distribution
# ---------------------------------------------------------------------------

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
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
        + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _incomplete_beta_cf(a, b, x) / a
    return 1.0 - front * _incomplete_beta_cf(b, a, 1.0 - x) / b


def _check_df(df: float) -> float:
    df = float(df)
    if not (df > 0) or math.isnan(df):
        raise ValueError(f"degrees of freedom is {df!r}, expected a number > 0")
    return df


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


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` dof (e.g. 0.975, 4 -> 2.776).

    Found by bisection, which needs no derivative and cannot diverge; 200
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


def _normal_quantile(p: float) -> float:
    """Standard normal quantile (the t quantile with infinite dof)."""
    return t_quantile(p, math.inf)


# ---------------------------------------------------------------------------
# Tests and decisions
# ---------------------------------------------------------------------------


def _mean_and_ss(xs: Sequence[float]) -> Tuple[float, float]:
    mean = math.fsum(xs) / len(xs)
    return mean, math.fsum((x - mean) ** 2 for x in xs)


def welch_test(a: Sequence[float], b: Sequence[float]) -> Tuple[float, float, float]:
    """Welch's unequal-variance t test of mean(a) vs mean(b).

    Returns ``(t, df, p_two_sided)`` with ``t = (mean(a) - mean(b)) / se`` and
    the Welch-Satterthwaite ``df``. Both samples need at least 2 values. When
    both have zero variance the result is ``t = 0, p = 1`` for equal means and
    ``t = +-inf, p = 0`` otherwise.
    """
    xa = _as_floats(a, "a", positive=False)
    xb = _as_floats(b, "b", positive=False)
    if len(xa) < 2 or len(xb) < 2:
        raise ValueError(
            f"welch_test needs at least 2 samples in each group, got {len(xa)} and {len(xb)}"
        )
    ma, ssa = _mean_and_ss(xa)
    mb, ssb = _mean_and_ss(xb)
    va = ssa / (len(xa) - 1) / len(xa)
    vb = ssb / (len(xb) - 1) / len(xb)
    se2 = va + vb
    diff = ma - mb
    if se2 == 0.0:
        df0 = float(len(xa) + len(xb) - 2)
        if diff == 0.0:
            return 0.0, df0, 1.0
        return math.copysign(math.inf, diff), df0, 0.0
    t = diff / math.sqrt(se2)
    df = se2 * se2 / (va * va / (len(xa) - 1) + vb * vb / (len(xb) - 1))
    p = min(1.0, 2.0 * t_sf(abs(t), df))
    return t, df, p


@dataclass(frozen=True)
class Comparison:
    """The regression decision for one test against its baseline.

    ``ratio`` is current / baseline throughput (geometric means). ``margin_pct``
    is the noise margin expressed as a drop in percent: a drop smaller than
    that cannot be told apart from noise. ``min_detectable_change_pct`` is the
    smallest drop this comparison could call a regression (tolerance and noise
    both considered). ``ci_low``/``ci_high`` bound the ratio at ``confidence``.
    """

    verdict: str
    ratio: float
    change_pct: float
    baseline_summary: Summary
    current_summary: Summary
    tolerance: float
    confidence: float
    margin_pct: float
    min_detectable_change_pct: float
    ci_low: float
    ci_high: float
    p_value: Optional[float]
    dof: int
    noise_estimated: bool
    method: str

    def as_dict(self) -> Dict[str, Any]:
        """Return a JSON-ready dict (summaries nested as dicts)."""
        d = asdict(self)
        d["baseline_summary"] = self.baseline_summary.as_dict()
        d["current_summary"] = self.current_summary.as_dict()
        return d


def compare(
    baseline: Sequence[float],
    current: Sequence[float],
    *,
    tolerance: float,
    confidence: float = 0.95,
    default_rel_noise: float = 0.25,
) -> Comparison:
    """Decide whether ``current`` throughput regressed from ``baseline``.

    Each sample is one run's aggregate img/s (higher is better). The
    difference of the mean log throughputs is compared with a two-sided
    ``confidence`` t interval built from the pooled standard deviation of the
    logs of both groups (``n_b + n_c - 2`` dof); with fewer than 2 dof the
    noise is not estimated but assumed to be ``default_rel_noise`` per run
    with a normal quantile. The verdict is ``"regression"`` only when the
    drop is both beyond ``tolerance`` and beyond that noise margin,
    ``"improvement"`` symmetrically, ``"ok"`` otherwise, so unchanged code on
    a noisy machine passes and a real slowdown on a quiet one fails.
    """
    tolerance = float(tolerance)
    if not 0.0 <= tolerance < 1.0:
        raise ValueError(f"tolerance is {tolerance!r}, expected 0 <= tolerance < 1 (0.1 = 10%)")
    confidence = float(confidence)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence is {confidence!r}, expected 0 < confidence < 1")
    default_rel_noise = float(default_rel_noise)
    if not default_rel_noise > 0.0 or not math.isfinite(default_rel_noise):
        raise ValueError(f"default_rel_noise is {default_rel_noise!r}, expected a number > 0")
    xb = _as_floats(baseline, "baseline", positive=True)
    xc = _as_floats(current, "current", positive=True)
    lb = [math.log(x) for x in xb]
    lc = [math.log(x) for x in xc]
    nb, nc = len(lb), len(lc)
    mb, ssb = _mean_and_ss(lb)
    mc, ssc = _mean_and_ss(lc)
    dof = nb + nc - 2
    two_sided = 1.0 - (1.0 - confidence) / 2.0
    if dof >= 2:
        sd = math.sqrt((ssb + ssc) / dof)
        q = t_quantile(two_sided, dof)
        noise = f"pooled SD of log img/s {sd:.4f} from both groups ({dof} dof), t={q:.3f}"
        estimated = True
    else:
        sd = math.log1p(default_rel_noise)
        q = _normal_quantile(two_sided)
        noise = (
            f"too few runs to estimate noise ({dof} dof): assumed default relative noise "
            f"{default_rel_noise:.0%} per run (SD of log {sd:.4f}), z={q:.3f}"
        )
        estimated = False
    margin = q * sd * math.sqrt(1.0 / nb + 1.0 / nc)
    diff = mc - mb
    ratio = math.exp(diff)

    if ratio < 1.0 - tolerance and diff < -margin:
        verdict = "regression"
    elif ratio > 1.0 + tolerance and diff > margin:
        verdict = "improvement"
    else:
        verdict = "ok"

    p_value: Optional[float] = None
    if nb >= 2 and nc >= 2:
        p_value = welch_test(lc, lb)[2]

    noise_drop = -math.expm1(-margin)
    method = (
        "compare mean log(img/s): ratio = exp(mean log current - mean log baseline); "
        f"{noise}; {confidence:.0%} two-sided interval on the log difference is +-{margin:.4f}; "
        f"regression iff ratio < {1.0 - tolerance:.4g} (tolerance {tolerance:.1%}) and the "
        "interval lies below 0, improvement symmetrically"
    )
    return Comparison(
        verdict=verdict,
        ratio=ratio,
        change_pct=100.0 * math.expm1(diff),
        baseline_summary=summarize(xb),
        current_summary=summarize(xc),
        tolerance=tolerance,
        confidence=confidence,
        margin_pct=100.0 * noise_drop,
        min_detectable_change_pct=100.0 * max(tolerance, noise_drop),
        ci_low=math.exp(diff - margin),
        ci_high=math.exp(diff + margin),
        p_value=p_value,
        dof=dof,
        noise_estimated=estimated,
        method=method,
    )


@dataclass(frozen=True)
class Significance:
    """Whether trick ``b`` differs from reference trick ``a`` beyond noise.

    ``p_value`` is None (and ``significant`` False) when a group has fewer
    than 2 samples; ``change_pct`` is b relative to a (geometric means).
    """

    p_value: Optional[float]
    significant: bool
    change_pct: float
    alpha: float
    n_a: int
    n_b: int
    t: Optional[float]
    df: Optional[float]
    method: str

    def as_dict(self) -> Dict[str, Any]:
        """Return a JSON-ready dict."""
        return asdict(self)


_SAMPLE_KINDS = ("runs", "steps")


def significance(
    a: Sequence[float],
    b: Sequence[float],
    *,
    alpha: float = 0.05,
    sample_kind: str = "runs",
) -> Significance:
    """Welch t test on log throughput of trick ``b`` against reference trick ``a``.

    ``sample_kind="runs"`` means each sample is one run's img/s. When a trick
    ran only once the caller may pass per-step steady-state img/s instead and
    say so with ``sample_kind="steps"``; the method then warns that steps of
    one run are correlated and share that run's luck, so the p-value is
    optimistic.
    """
    alpha = float(alpha)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha is {alpha!r}, expected 0 < alpha < 1")
    if sample_kind not in _SAMPLE_KINDS:
        raise ValueError(f"sample_kind is {sample_kind!r}, expected one of {_SAMPLE_KINDS}")
    xa = _as_floats(a, "a", positive=True)
    xb = _as_floats(b, "b", positive=True)
    la = [math.log(x) for x in xa]
    lb = [math.log(x) for x in xb]
    change_pct = 100.0 * math.expm1(math.fsum(lb) / len(lb) - math.fsum(la) / len(la))
    unit = "per-run img/s" if sample_kind == "runs" else "per-step steady-state img/s"
    if len(la) < 2 or len(lb) < 2:
        return Significance(
            p_value=None,
            significant=False,
            change_pct=change_pct,
            alpha=alpha,
            n_a=len(la),
            n_b=len(lb),
            t=None,
            df=None,
            method=(
                f"not tested: {len(la)} and {len(lb)} samples of {unit}, a t test needs >= 2 "
                "in each group (more repeats, or per-step samples)"
            ),
        )
    t, df, p = welch_test(lb, la)
    caveat = (
        "; steps of one run are correlated, so this p-value is optimistic"
        if sample_kind == "steps"
        else ""
    )
    return Significance(
        p_value=p,
        significant=p < alpha,
        change_pct=change_pct,
        alpha=alpha,
        n_a=len(la),
        n_b=len(lb),
        t=t,
        df=df,
        method=(
            f"Welch t test on log of {unit} ({len(la)} vs {len(lb)} samples, df={df:.1f}), "
            f"significant iff p < {alpha:g}{caveat}"
        ),
    )


def scaling_efficiency(
    aggregate_img_per_sec: float, n_workers: int, single_img_per_sec: float
) -> float:
    """Aggregate throughput over ``n_workers`` times single-worker throughput (1.0 = linear)."""
    if isinstance(n_workers, bool) or not isinstance(n_workers, int) or n_workers < 1:
        raise ValueError(f"n_workers is {n_workers!r}, expected an integer >= 1")
    agg = float(aggregate_img_per_sec)
    single = float(single_img_per_sec)
    if not (math.isfinite(agg) and agg >= 0):
        raise ValueError(
            f"aggregate_img_per_sec is {aggregate_img_per_sec!r}, expected a number >= 0"
        )
    if not (math.isfinite(single) and single > 0):
        raise ValueError(f"single_img_per_sec is {single_img_per_sec!r}, expected a number > 0")
    return agg / (n_workers * single)
