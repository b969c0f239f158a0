"""Summaries and decisions on the one statistical method (:mod:`.method`).

:func:`~.method.session_difference` (and its one-session form
:func:`~.method.log_difference`) is the only test in the package: the
baseline verdict (:func:`compare`, across sessions) and the trick matrix
(:func:`significance`, within one session) both use it, so the figure shown
beside a decision is the one that made it. Pure standard-library Python.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional, Sequence, Union

from . import rule
from .method import BetweenPrior, LogDifference, log_difference, session_difference
from .tdist import t_quantile

__all__ = [
    "BaselineSamples",
    "BetweenPrior",
    "Comparison",
    "LogDifference",
    "Significance",
    "Summary",
    "as_sessions",
    "change_pct",
    "compare",
    "log_difference",
    "scaling_efficiency",
    "session_difference",
    "significance",
    "summarize",
]
from .validate import as_floats as _as_floats

#: Samples of a baseline: one sequence of img/s, or one per recorded session.
BaselineSamples = Union[Sequence[float], Sequence[Sequence[float]]]


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


@dataclass(frozen=True)
class Comparison:
    """The regression decision for one test against its baseline.

    ``ratio`` is current / baseline throughput (geometric means; the baseline's
    centre is the mean over its recorded sessions). ``ci_low``/``ci_high``
    bound the ratio at ``confidence`` (the noise interval), ``tol_low``/``tol_high``
    at the tolerance interval's level (:data:`~.rule.TOLERANCE_LEVEL` each side);
    ``p_value`` is the noise test's two-sided p. ``margin_pct`` is the noise margin as a drop in percent.
    ``min_detectable_change_pct`` is the smallest measured drop this
    comparison would call a regression. ``between_sd_pct`` is the spread
    between sessions that the margin includes (``between_assumed``: assumed,
    since the baseline has one recorded session). ``decided`` is whether the
    verdict is not ``inconclusive`` (:func:`~.rule.decide`); ``more_runs_can_decide``
    whether infinitely many more runs of this session, with the difference
    measured so far, would settle it (False when between-session noise alone
    keeps it undecided).
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
    dof: float
    noise_estimated: bool
    method: str
    sessions: int = 1
    between_sd_pct: float = 0.0
    between_assumed: bool = False
    decided: bool = True
    more_runs_can_decide: bool = False
    #: where the spread between sessions came from: none, assumed, estimated or pooled (:class:`~.method.BetweenPrior`)
    between_source: str = "none"
    #: with ``pooled``: the other measured sessions, in words
    between_pooled_from: str = ""
    tol_low: "float | None" = None
    tol_high: "float | None" = None

    def as_dict(self) -> Dict[str, Any]:
        """Return a JSON-ready dict (summaries nested as dicts; infinite dof as None)."""
        d = asdict(self)
        d["baseline_summary"] = self.baseline_summary.as_dict()
        d["current_summary"] = self.current_summary.as_dict()
        d["dof"] = self.dof if math.isfinite(self.dof) else None
        return d


def as_sessions(baseline: BaselineSamples) -> "List[List[float]]":
    """A baseline's samples as a list of sessions (a flat sequence is one session)."""
    items: "list[Any]" = list(baseline)
    if items and all(isinstance(s, (list, tuple)) for s in items):
        return [[float(x) for x in s] for s in items]
    return [[float(x) for x in items]]


def _method_text(d: LogDifference, tolerance: float) -> str:
    """How the verdict was reached, in words (reports print it)."""
    return (
        "compare mean log(img/s): ratio = exp(mean log current - mean log baseline); "
        f"{d.description}; {d.confidence:.0%} two-sided interval on the log difference is +-{d.margin:.4f}; "
        + rule.rule_text(tolerance, d.confidence)
    )


def _scaled(margin: float, dof: float, confidence: float, level: float) -> float:
    """A margin at two-sided ``confidence`` rescaled to one-sided ``level`` (same standard error and dof)."""
    noise_q = t_quantile(1.0 - (1.0 - confidence) / 2.0, dof)
    return margin * t_quantile(1.0 - level, dof) / noise_q if noise_q > 0 else margin


def compare(
    baseline: BaselineSamples,
    current: Sequence[float],
    *,
    tolerance: float,
    confidence: float,
    default_rel_noise: float = 0.25,
    session_spread: Optional[float] = None,
    prior: "BetweenPrior | None" = None,
) -> Comparison:
    """Decide whether ``current`` throughput regressed from ``baseline``.

    Each sample is one run's img/s (higher is better); ``baseline`` is one
    sequence, or one sequence per recorded session. ``session_spread`` None
    compares as if both came from one session; a number includes the spread
    between sessions (assumed to be that much when the baseline has one
    recorded session, estimated from the sessions otherwise), see
    :func:`~.method.session_difference`.

    The verdict is :func:`~.rule.decide` on two intervals of the same
    difference: the noise interval at ``confidence`` and the tolerance interval
    at :data:`~.rule.TOLERANCE_LEVEL` on each side. ``"regression"``: a drop
    beyond noise and beyond half the tolerance; ``"improvement"``: mirrored;
    ``"ok"``: any drop is smaller than the tolerance; ``"inconclusive"``: the
    data cannot tell. The tolerance is the drop that must fail, the confidence
    sets the false-alarm rate on unchanged code (one-sided ``(1 - confidence) / 2``).
    Both are the caller's settings (the option table lives above this module),
    so neither has a default here.
    """
    tolerance = float(tolerance)
    rule.Bounds(tolerance)  # 0 <= tolerance < 1, else ValueError
    sessions = as_sessions(baseline)
    d = session_difference(
        sessions,
        current,
        confidence=confidence,
        default_rel_noise=default_rel_noise,
        session_spread=session_spread,
        prior=prior,
    )
    low, high = d.diff - d.margin, d.diff + d.margin
    b = rule.Bounds(tolerance)
    tol = _scaled(d.margin, d.dof, d.confidence, rule.TOLERANCE_LEVEL)
    verdict, decided = rule.decide((low, high), (d.diff - tol, d.diff + tol), tolerance)
    # The smallest measured drop (in log) that is called a regression: beyond the noise
    # margin, and beyond half the tolerance by the tolerance interval's margin.
    smallest = max(d.margin, tol - b.half)
    limit_tol = _scaled(d.margin_limit, d.dof, d.confidence, rule.TOLERANCE_LEVEL)
    can_decide = (
        d.diff - limit_tol > b.drop
        or (d.diff + d.margin_limit < 0.0 and d.diff + limit_tol < b.half)
        or (d.diff - d.margin_limit > 0.0 and d.diff - limit_tol > b.gain)
    )
    return Comparison(
        verdict=verdict,
        ratio=math.exp(d.diff),
        change_pct=100.0 * math.expm1(d.diff),
        baseline_summary=summarize([x for s in sessions for x in s]),
        current_summary=summarize(current),
        tolerance=tolerance,
        confidence=d.confidence,
        margin_pct=-100.0 * math.expm1(-d.margin),
        min_detectable_change_pct=-100.0 * math.expm1(-smallest),
        ci_low=math.exp(low),
        ci_high=math.exp(high),
        p_value=d.p_value,
        dof=d.dof,
        noise_estimated=d.estimated,
        method=_method_text(d, tolerance),
        sessions=d.sessions,
        between_sd_pct=100.0 * math.expm1(d.between_sd),
        between_assumed=d.between_assumed,
        decided=decided,
        more_runs_can_decide=not decided and can_decide,
        between_source=d.between_source,
        between_pooled_from=d.prior.source if d.prior is not None else "",
        tol_low=math.exp(d.diff - tol),
        tol_high=math.exp(d.diff + tol),
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
            p_value=None,
            significant=False,
            change_pct=change,
            alpha=alpha,
            n_a=na,
            n_b=nb,
            method=(
                f"not tested: {na} and {nb} samples of {unit}, the interval needs >= 2 in each group "
                "(more repeats, or per-step samples)"
            ),
        )
    d = log_difference(a, b, confidence=1.0 - alpha)
    caveat = "; steps of one run are correlated, so this p-value is optimistic" if sample_kind == "steps" else ""
    return Significance(
        p_value=d.p_value,
        significant=d.beyond_noise,
        change_pct=change,
        alpha=alpha,
        n_a=na,
        n_b=nb,
        method=f"pooled t interval on log of {unit} ({na} vs {nb} samples, {d.dof} dof), "
        f"significant iff p < {alpha:g}{caveat}",
    )


def scaling_efficiency(aggregate_img_per_sec: float, n_workers: int, single_img_per_sec: float) -> float:
    """Aggregate throughput over ``n_workers`` times single-worker throughput (1.0 = linear)."""
    if isinstance(n_workers, bool) or not isinstance(n_workers, int) or n_workers < 1:
        raise ValueError(f"n_workers is {n_workers!r}, expected an integer >= 1")
    agg = float(aggregate_img_per_sec)
    single = float(single_img_per_sec)
    if not (math.isfinite(agg) and agg >= 0):
        raise ValueError(f"aggregate_img_per_sec is {aggregate_img_per_sec!r}, expected a number >= 0")
    if not (math.isfinite(single) and single > 0):
        raise ValueError(f"single_img_per_sec is {single_img_per_sec!r}, expected a number > 0")
    return agg / (n_workers * single)
