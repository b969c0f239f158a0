"""Summaries and the one statistical method: throughput of b against a on log(img/s).

A slowdown multiplies throughput, so noise and change are both relative; on a
log scale a 2x drop and a 2x gain are symmetric. :func:`log_difference` is the
only test in the package: the baseline verdict (:func:`compare`) and the
trick matrix (:func:`significance`) both use it, so the figure shown beside a
decision is the one that made it. Pure standard-library Python.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from typing import Any, Dict, Optional, Sequence

from .tdist import normal_quantile, t_quantile, t_sf
from .validate import as_floats as _as_floats

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


def change_pct(reference: Sequence[float], samples: Sequence[float]) -> float:
    """Change of ``samples`` against ``reference`` in percent, by geometric means (the change everywhere)."""
    la = [math.log(x) for x in _as_floats(reference, "reference", positive=True)]
    lb = [math.log(x) for x in _as_floats(samples, "samples", positive=True)]
    return 100.0 * math.expm1(math.fsum(lb) / len(lb) - math.fsum(la) / len(la))


def _mean_and_ss(xs: Sequence[float]) -> "tuple[float, float]":
    mean = math.fsum(xs) / len(xs)
    return mean, math.fsum((x - mean) ** 2 for x in xs)


@dataclass(frozen=True)
class LogDifference:
    """``b`` against ``a``: difference of mean log throughput with its interval.

    ``diff`` is ``mean(log b) - mean(log a)``; ``margin`` the half-width of the
    two-sided ``confidence`` interval around it; ``p_value`` the two-sided p of
    the same statistic (t with ``dof`` degrees of freedom, or normal when the
    noise is assumed). ``beyond_noise`` is ``|diff| > margin``, which is
    ``p_value < 1 - confidence``.
    """

    diff: float
    margin: float
    dof: int
    sd: float
    p_value: float
    estimated: bool
    confidence: float
    description: str

    @property
    def beyond_noise(self) -> bool:
        """Whether the interval excludes 0."""
        return abs(self.diff) > self.margin


def log_difference(
    a: Sequence[float],
    b: Sequence[float],
    *,
    confidence: float = 0.95,
    default_rel_noise: float = 0.25,
    names: "tuple[str, str]" = ("a", "b"),
) -> LogDifference:
    """The method: pooled-variance t interval on the difference of mean log throughput.

    The standard deviation of the logs is pooled from both groups
    (``n_a + n_b - 2`` dof); with fewer than 2 dof it is not estimated but
    assumed to be ``log(1 + default_rel_noise)`` per sample, with a normal
    quantile.
    """
    confidence = float(confidence)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence is {confidence!r}, expected 0 < confidence < 1")
    default_rel_noise = float(default_rel_noise)
    if not default_rel_noise > 0.0 or not math.isfinite(default_rel_noise):
        raise ValueError(f"default_rel_noise is {default_rel_noise!r}, expected a number > 0")
    la = [math.log(x) for x in _as_floats(a, names[0], positive=True)]
    lb = [math.log(x) for x in _as_floats(b, names[1], positive=True)]
    na, nb = len(la), len(lb)
    ma, ssa = _mean_and_ss(la)
    mb, ssb = _mean_and_ss(lb)
    dof = na + nb - 2
    two_sided = 1.0 - (1.0 - confidence) / 2.0
    if dof >= 2:
        sd = math.sqrt((ssa + ssb) / dof)
        q = t_quantile(two_sided, dof)
        tail_dof: float = dof
        description = f"pooled SD of log img/s {sd:.4f} from both groups ({dof} dof), t={q:.3f}"
        estimated = True
    else:
        sd = math.log1p(default_rel_noise)
        q = normal_quantile(two_sided)
        tail_dof = math.inf
        description = (
            f"too few runs to estimate noise ({dof} dof): assumed default relative noise "
            f"{default_rel_noise:.0%} per run (SD of log {sd:.4f}), z={q:.3f}"
        )
        estimated = False
    se = sd * math.sqrt(1.0 / na + 1.0 / nb)
    diff = mb - ma
    if se == 0.0:
        p_value = 1.0 if diff == 0.0 else 0.0
    else:
        p_value = min(1.0, 2.0 * t_sf(abs(diff) / se, tail_dof))
    return LogDifference(diff=diff, margin=q * se, dof=dof, sd=sd, p_value=p_value, estimated=estimated,
                         confidence=confidence, description=description)


@dataclass(frozen=True)
class Comparison:
    """The regression decision for one test against its baseline.

    ``ratio`` is current / baseline throughput (geometric means). ``margin_pct``
    is the noise margin expressed as a drop in percent: a drop smaller than
    that cannot be told apart from noise. ``min_detectable_change_pct`` is the
    smallest drop this comparison could call a regression (tolerance and noise
    both considered). ``ci_low``/``ci_high`` bound the ratio at ``confidence``;
    ``p_value`` is the same test's two-sided p.
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
    p_value: float
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

    Each sample is one run's aggregate img/s (higher is better). The verdict
    is ``"regression"`` only when the drop is both beyond ``tolerance`` and
    beyond the noise margin of :func:`log_difference`, ``"improvement"``
    symmetrically, ``"ok"`` otherwise, so unchanged code on a noisy machine
    passes and a real slowdown on a quiet one fails.
    """
    tolerance = float(tolerance)
    if not 0.0 <= tolerance < 1.0:
        raise ValueError(f"tolerance is {tolerance!r}, expected 0 <= tolerance < 1 (0.1 = 10%)")
    d = log_difference(baseline, current, confidence=confidence, default_rel_noise=default_rel_noise,
                       names=("baseline", "current"))
    ratio = math.exp(d.diff)
    if ratio < 1.0 - tolerance and d.diff < -d.margin:
        verdict = "regression"
    elif ratio > 1.0 + tolerance and d.diff > d.margin:
        verdict = "improvement"
    else:
        verdict = "ok"
    noise_drop = -math.expm1(-d.margin)
    method = (
        "compare mean log(img/s): ratio = exp(mean log current - mean log baseline); "
        f"{d.description}; {d.confidence:.0%} two-sided interval on the log difference is +-{d.margin:.4f}; "
        f"regression iff ratio < {1.0 - tolerance:.4g} (tolerance {tolerance:.1%}) and the "
        "interval lies below 0, improvement symmetrically"
    )
    return Comparison(
        verdict=verdict,
        ratio=ratio,
        change_pct=100.0 * math.expm1(d.diff),
        baseline_summary=summarize(baseline),
        current_summary=summarize(current),
        tolerance=tolerance,
        confidence=d.confidence,
        margin_pct=100.0 * noise_drop,
        min_detectable_change_pct=100.0 * max(tolerance, noise_drop),
        ci_low=math.exp(d.diff - d.margin),
        ci_high=math.exp(d.diff + d.margin),
        p_value=d.p_value,
        dof=d.dof,
        noise_estimated=d.estimated,
        method=method,
    )


@dataclass(frozen=True)
class Significance:
    """Whether trick ``b`` differs from reference trick ``a`` beyond noise (:func:`log_difference`).

    ``p_value`` is None (and ``significant`` False) when a group has fewer
    than 2 samples; ``change_pct`` is b relative to a (geometric means).
    """

    p_value: Optional[float]
    significant: bool
    change_pct: float
    alpha: float
    n_a: int
    n_b: int
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
    """:func:`log_difference` of trick ``b`` against reference trick ``a`` at confidence ``1 - alpha``.

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
    change = change_pct(a, b)
    na, nb = len(a), len(b)
    unit = "per-run img/s" if sample_kind == "runs" else "per-step steady-state img/s"
    if na < 2 or nb < 2:
        return Significance(
            p_value=None, significant=False, change_pct=change, alpha=alpha, n_a=na, n_b=nb,
            method=(f"not tested: {na} and {nb} samples of {unit}, the interval needs >= 2 in each group "
                    "(more repeats, or per-step samples)"),
        )
    d = log_difference(a, b, confidence=1.0 - alpha)
    caveat = "; steps of one run are correlated, so this p-value is optimistic" if sample_kind == "steps" else ""
    return Significance(
        p_value=d.p_value, significant=d.beyond_noise, change_pct=change, alpha=alpha, n_a=na, n_b=nb,
        method=f"pooled t interval on log of {unit} ({na} vs {nb} samples, {d.dof} dof), "
               f"significant iff p < {alpha:g}{caveat}",
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
