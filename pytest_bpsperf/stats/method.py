"""The one statistical method: a t interval on the difference of mean log throughput.

A slowdown multiplies throughput, so noise and change are both relative; on a
log scale a 2x drop and a 2x gain are symmetric. Runs of one session share
that session's luck (the machine's load that day, its clock, its neighbours),
so throughput is modelled as a one-way random-effects model on log img/s::

    log y[session j, run i] = mu + s_j + e_ij,  s_j ~ N(0, tau^2),  e_ij ~ N(0, sigma^2)

(Searle, Casella and McCulloch, *Variance Components*, ch. 3). ``sigma`` is
the spread between runs of one session, ``tau`` the spread between sessions.

:func:`session_difference` compares the current session's runs with the
recorded sessions of a baseline:

- ``sigma^2`` is pooled from the runs within every session (baseline and
  current); with fewer than 2 degrees of freedom it is assumed
  (``default_rel_noise``).
- With several recorded sessions the session means are the units (the
  textbook remedy for pseudo-replication): their sample variance ``s_m^2``
  (``S - 1`` dof) estimates ``tau^2 + sigma^2 h`` with ``h = mean(1/n_j)``;
  the baseline's centre is the mean of the session means (variance
  ``s_m^2 / S``) and the current session's mean of ``K`` runs has variance
  ``tau^2 + sigma^2 / K = s_m^2 + sigma^2 (1/K - h)``. So the difference has
  variance ``s_m^2 (1 + 1/S) + sigma^2 (1/K - h)``: the prediction of one
  more session mean. The second term is counted only while positive (``K``
  below the runs of a recorded session); more runs than that are not credited.
  The interval uses Student's t with the ``S - 1`` degrees of freedom of the
  session means: the two-sample t test with session means as units (exact
  for ``K = n``, conservative for fewer runs), and the margin shrinks, never
  grows, as the current session adds runs. (Counting ``tau^2`` and
  ``s_m^2 / S`` as separate mean squares with the within-session dof mixed
  in by Welch-Satterthwaite understated the margin: simulated false alarms
  reached 1.7% at a nominal 0.5%, and confirmation runs could widen it.)
- With one recorded session ``tau`` cannot be estimated and is assumed
  (``session_spread``); the result says so. The degrees of freedom then come
  from the Welch-Satterthwaite approximation (Satterthwaite 1946) over the
  known between-session term and the pooled within-session variance.

With ``session_spread=None`` both groups come from the same session (the trick
matrix): ``tau`` drops out and the method is the pooled-variance two-sample t
interval. The verdict (:func:`~.compare.compare`) and the matrix
(:func:`~.compare.significance`) both use this module, so the figure shown
beside a decision is the one that made it. Pure standard-library Python.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from .tdist import t_quantile, t_sf
from .validate import as_floats

__all__ = [
    "BetweenPrior",
    "LogDifference",
    "log_difference",
    "pooled_between",
    "satterthwaite_dof",
    "session_difference",
]


@dataclass(frozen=True)
class LogDifference:
    """``b`` (current) against ``a`` (baseline): difference of mean log throughput with its interval.

    ``diff`` is ``mean log b - mean log a``; ``margin`` the half-width of the
    two-sided ``confidence`` interval around it; ``p_value`` the two-sided p
    of the same statistic (t with ``dof`` degrees of freedom, normal when
    ``dof`` is infinite). ``sd`` is the spread of runs within a session (SD
    of log img/s), ``estimated`` whether it was estimated (else assumed).
    ``between_sd`` is the spread between sessions (0 within one session),
    ``between_assumed`` whether it was assumed because the baseline holds one
    recorded session, ``sessions`` how many recorded sessions the baseline
    holds. ``margin_limit`` is the margin that infinitely many runs of the
    current session would leave: what between-session noise alone costs.
    """

    diff: float
    margin: float
    dof: float
    sd: float
    p_value: float
    estimated: bool
    confidence: float
    description: str
    between_sd: float = 0.0
    between_assumed: bool = False
    sessions: int = 1
    margin_limit: float = 0.0
    #: where the between-session spread came from: "none" (one session), "assumed", "estimated" (this
    #: entry's recorded sessions) or "pooled" (with the profile's other measured sessions, see BetweenPrior)
    between_source: str = "none"
    prior: "BetweenPrior | None" = None

    @property
    def beyond_noise(self) -> bool:
        """Whether the interval excludes 0."""
        return abs(self.diff) > self.margin


def satterthwaite_dof(components: Sequence[Tuple[float, float]]) -> float:
    """Welch-Satterthwaite degrees of freedom of a sum of independent variance terms.

    ``components`` are ``(term, dof)`` pairs, each term a (possibly negatively
    weighted) mean square with ``dof`` degrees of freedom (``inf`` for a known
    term): ``(sum terms)^2 / sum(term^2 / dof)`` (Satterthwaite, Biometrics
    Bulletin 2, 1946). Infinite when every term is known or the sum is 0.
    """
    total = math.fsum(c for c, _ in components)
    denom = math.fsum(c * c / d for c, d in components if math.isfinite(d) and c != 0.0)
    if total <= 0.0 or denom == 0.0:
        return math.inf
    return total * total / denom


@dataclass(frozen=True)
class BetweenPrior:
    """The spread between sessions of a profile, measured on other jobs or other sessions of this one.

    ``tau2`` is the between-session variance of log img/s, estimated with
    ``dof`` degrees of freedom from ``groups`` groups of recorded sessions
    (``sessions`` in all) of the same code and job; ``source`` says where,
    in words (for the verdict line).
    """

    tau2: float
    dof: float
    sessions: int
    groups: int
    source: str

    @property
    def sd(self) -> float:
        return math.sqrt(self.tau2)


def pooled_between(groups: Sequence[Sequence[Sequence[float]]], *, source: str = "") -> "BetweenPrior | None":
    """The between-session variance pooled over ``groups`` (each a list of sessions, each a list of img/s).

    In every group with two or more sessions, the variance of the session
    means of log img/s (``S_g - 1`` dof) estimates ``tau^2 + sigma_g^2 h_g``
    (``h_g`` the mean of ``1/n`` over its sessions, ``sigma_g^2`` its pooled
    within-session variance); ``tau^2`` is their dof-weighted mean less the
    within-session part, floored at 0 (the pooled estimator of a one-way
    random-effects model, Searle et al. ch. 3). None when no group has two sessions.
    """
    num = 0.0
    dof = 0
    sessions = used = 0
    for group in groups:
        logs = [[math.log(x) for x in as_floats(s, "session", positive=True)] for s in group if len(s)]
        if len(logs) < 2:
            continue
        means = [math.fsum(s) / len(s) for s in logs]
        m = math.fsum(means) / len(means)
        var_m = math.fsum((x - m) ** 2 for x in means) / (len(means) - 1)
        ss_w = math.fsum((x - mu) ** 2 for s, mu in zip(logs, means) for x in s)
        df_w = sum(len(s) - 1 for s in logs)
        var_w = ss_w / df_w if df_w else 0.0
        h = math.fsum(1.0 / len(s) for s in logs) / len(logs)
        num += (len(means) - 1) * (var_m - var_w * h)
        dof += len(means) - 1
        sessions += len(logs)
        used += 1
    if dof == 0:
        return None
    return BetweenPrior(max(0.0, num / dof), float(dof), sessions, used, source)


def _mean_and_ss(xs: Sequence[float]) -> "tuple[float, float]":
    mean = math.fsum(xs) / len(xs)
    return mean, math.fsum((x - mean) ** 2 for x in xs)


def _check(confidence: float, default_rel_noise: float, session_spread: Optional[float]) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence is {confidence!r}, expected 0 < confidence < 1")
    if not default_rel_noise > 0.0 or not math.isfinite(default_rel_noise):
        raise ValueError(f"default_rel_noise is {default_rel_noise!r}, expected a number > 0")
    if session_spread is not None and (not session_spread >= 0.0 or not math.isfinite(session_spread)):
        raise ValueError(f"session_spread is {session_spread!r}, expected a number >= 0 or None")


def _quantile(p: float, dof: float) -> float:
    return t_quantile(p, dof)  # infinite dof is the normal quantile


def session_difference(
    sessions: Sequence[Sequence[float]],
    current: Sequence[float],
    *,
    confidence: float,
    default_rel_noise: float = 0.25,
    session_spread: Optional[float] = None,
    names: "tuple[str, str]" = ("baseline", "current"),
    prior: "BetweenPrior | None" = None,
) -> LogDifference:
    """The method: current session's runs against the baseline's recorded sessions, on log img/s.

    Parameters
    ----------
    sessions:
        img/s of the baseline's runs, one sequence per recorded session.
    current:
        img/s of this session's runs.
    confidence:
        two-sided confidence of the interval (the caller's setting: no default here).
    default_rel_noise:
        relative run-to-run noise assumed when fewer than 2 degrees of freedom
        are left to estimate it (SD of log ``log(1 + default_rel_noise)``).
    session_spread:
        ``None``: both groups come from one session (no between-session term;
        several sessions are then pooled as one group). A number: the groups
        come from different sessions; with one recorded session the spread
        between sessions is assumed to be ``log(1 + session_spread)`` (SD of
        log), with more it is estimated from them.
    prior:
        the spread between sessions measured elsewhere on this profile (other
        jobs' recorded sessions, sessions of the same code in the history;
        :func:`pooled_between`). With one recorded session it replaces the
        assumed ``session_spread``; with more it is pooled with them (their
        degrees of freedom add). Ignored within one session.

    Returns
    -------
    LogDifference
        the difference, its margin, dof, p value and the noise components.
    """
    confidence = float(confidence)
    default_rel_noise = float(default_rel_noise)
    _check(confidence, default_rel_noise, session_spread)
    if not sessions:
        raise ValueError(f"{names[0]} has no sessions, expected at least one")
    groups: List[List[float]] = [
        [math.log(x) for x in as_floats(s, f"{names[0]} session {i + 1}", positive=True)]
        for i, s in enumerate(sessions)
    ]
    if session_spread is None and len(groups) > 1:
        groups = [[x for g in groups for x in g]]
    cur = [math.log(x) for x in as_floats(current, names[1], positive=True)]
    runs = _pool_within(groups, cur, default_rel_noise)
    if session_spread is None:
        return _within_one_session(runs, confidence)
    if len(groups) == 1:
        return _one_recorded_session(runs, confidence, session_spread, prior)
    return _several_recorded_sessions(runs, confidence, prior)


@dataclass(frozen=True)
class _Runs:
    """Both sides on the log scale, and the spread of runs within a session pooled over them."""

    groups: "list[list[float]]"  # the baseline's log img/s, one list per recorded session
    stats: "list[tuple[float, float]]"  # each group's mean and sum of squares
    current: float  # the mean log img/s of the current session's runs
    k: int  # the current session's runs
    var_w: float  # the within-session variance of log img/s, estimated or assumed
    dof_w: float  # its degrees of freedom (infinite when assumed)
    df_w: int  # the degrees of freedom the runs left to estimate it
    estimated: bool
    within: str  # the words for it in the description


def _pool_within(groups: "list[list[float]]", cur: "list[float]", default_rel_noise: float) -> _Runs:
    """Pool the within-session variance over every group and the current runs (assumed below 2 dof)."""
    stats = [_mean_and_ss(g) for g in groups]
    mc, ssc = _mean_and_ss(cur)
    df_w = sum(len(g) - 1 for g in groups) + (len(cur) - 1)
    ss_w = math.fsum(ss for _, ss in stats) + ssc
    if df_w >= 2:
        var_w, dof_w, estimated = ss_w / df_w, float(df_w), True
        within = f"SD of log img/s within a session {math.sqrt(var_w):.4f} (pooled, {df_w} dof)"
    else:
        var_w, dof_w, estimated = math.log1p(default_rel_noise) ** 2, math.inf, False
        within = (
            f"too few runs to estimate noise ({df_w} dof): assumed default relative noise "
            f"{default_rel_noise:.0%} per run (SD of log {math.sqrt(var_w):.4f})"
        )
    return _Runs(groups, stats, mc, len(cur), var_w, dof_w, df_w, estimated, within)


@dataclass(frozen=True)
class _Interval:
    """The interval around a difference: its quantile, margin, p value, and the margin's limit."""

    q: float
    margin: float
    p_value: float
    margin_limit: float


def _interval(
    diff: float,
    components: "list[tuple[float, float]]",
    limit: "list[tuple[float, float]]",
    dof: float,
    confidence: float,
) -> _Interval:
    """The interval of ``diff`` whose variance is the sum of ``components`` (``(term, dof)`` pairs).

    ``limit`` are the terms that infinitely many runs of the current session
    would leave (the between-session part): the margin they give is ``margin_limit``.
    """
    var = max(0.0, math.fsum(c for c, _ in components))
    var_limit = max(0.0, math.fsum(c for c, _ in limit))
    two_sided = 1.0 - (1.0 - confidence) / 2.0
    q = _quantile(two_sided, dof)
    se = math.sqrt(var)
    if se == 0.0:
        p_value = 1.0 if diff == 0.0 else 0.0
    else:
        p_value = min(1.0, 2.0 * t_sf(abs(diff) / se, dof))
    return _Interval(q, q * se, p_value, _quantile(two_sided, satterthwaite_dof(limit)) * math.sqrt(var_limit))


def _across(runs: _Runs, between: str, q: float, dof: float, how: str) -> str:
    """The description of a difference across sessions: within, between, the quantile and its dof."""
    quantile = f"t={q:.3f} ({dof:.1f} dof)" if math.isfinite(dof) else f"z={q:.3f}"
    return f"{runs.within}; {between}; {quantile} ({how})"


def _within_one_session(runs: _Runs, confidence: float) -> LogDifference:
    """Both groups from one session: the pooled-variance two-sample t interval (no between-session term)."""
    n1 = len(runs.groups[0])
    diff = runs.current - runs.stats[0][0]
    iv = _interval(
        diff,
        [(runs.var_w * (1.0 / n1 + 1.0 / runs.k), runs.dof_w)],
        [(runs.var_w / n1, math.inf)],
        runs.dof_w,
        confidence,
    )
    description = (
        f"pooled SD of log img/s {math.sqrt(runs.var_w):.4f} from both groups ({runs.df_w} dof), t={iv.q:.3f}"
        if runs.estimated
        else f"{runs.within}, z={iv.q:.3f}"
    )
    return LogDifference(
        diff=diff,
        margin=iv.margin,
        dof=runs.dof_w,
        sd=math.sqrt(runs.var_w),
        p_value=iv.p_value,
        estimated=runs.estimated,
        confidence=confidence,
        description=description,
        between_sd=0.0,
        between_assumed=False,
        sessions=1,
        margin_limit=iv.margin_limit,
        between_source="none",
        prior=None,
    )


def _one_recorded_session(
    runs: _Runs, confidence: float, session_spread: float, prior: "BetweenPrior | None"
) -> LogDifference:
    """A baseline of one recorded session: the spread between sessions is assumed, or the ``prior``'s.

    The degrees of freedom come from Welch-Satterthwaite over that between-session
    term (known when assumed) and the pooled within-session variance.
    """
    n1 = len(runs.groups[0])
    runs_part = (runs.var_w * (1.0 / n1 + 1.0 / runs.k), runs.dof_w)
    if prior is None:
        tau2 = math.log1p(float(session_spread)) ** 2
        components = [(2.0 * tau2, math.inf), runs_part]
        limit = [(2.0 * tau2 + runs.var_w / n1, math.inf)]
        between = (
            f"between sessions: assumed SD of log {math.sqrt(tau2):.4f} (session_spread "
            f"{session_spread:.0%}; the baseline has 1 recorded session and nothing else was measured)"
        )
    else:
        tau2 = prior.tau2
        components = [(2.0 * tau2, prior.dof), runs_part]
        limit = [(2.0 * tau2, prior.dof), (runs.var_w / n1, runs.dof_w)]
        between = (
            f"between sessions: SD of log {math.sqrt(tau2):.4f} pooled from {prior.source} "
            f"({prior.dof:.0f} dof; the baseline has 1 recorded session)"
        )
    dof = satterthwaite_dof(components)
    diff = runs.current - runs.stats[0][0]
    iv = _interval(diff, components, limit, dof, confidence)
    return LogDifference(
        diff=diff,
        margin=iv.margin,
        dof=dof,
        sd=math.sqrt(runs.var_w),
        p_value=iv.p_value,
        estimated=runs.estimated,
        confidence=confidence,
        description=_across(runs, between, iv.q, dof, "Welch-Satterthwaite"),
        between_sd=math.sqrt(tau2),
        between_assumed=prior is None,
        sessions=1,
        margin_limit=iv.margin_limit,
        between_source="assumed" if prior is None else "pooled",
        prior=prior,
    )


def _several_recorded_sessions(runs: _Runs, confidence: float, prior: "BetweenPrior | None") -> LogDifference:
    """A baseline of several recorded sessions: their session means are the units (module docstring).

    A ``prior`` is pooled with the variance of those means, its degrees of freedom added.
    """
    n_sessions = len(runs.groups)
    centre, ss_m = _mean_and_ss([m for m, _ in runs.stats])
    df_m = float(n_sessions - 1)
    var_m = ss_m / df_m
    h = math.fsum(1.0 / len(g) for g in runs.groups) / n_sessions
    if prior is not None:
        # the profile's other measured sessions, as session means of this entry's run counts
        var_m = (df_m * var_m + prior.dof * (prior.tau2 + runs.var_w * h)) / (df_m + prior.dof)
        df_m += prior.dof
    tau2 = max(0.0, var_m - runs.var_w * h)
    # The prediction of one more session mean from S of them; runs of this session
    # beyond a recorded session's count are not credited (see the module docstring).
    components = [(var_m * (1.0 + 1.0 / n_sessions), df_m), (runs.var_w * max(0.0, 1.0 / runs.k - h), runs.dof_w)]
    limit = [(var_m * (1.0 + 1.0 / n_sessions), df_m)]
    between = (
        f"between sessions: SD of log {math.sqrt(tau2):.4f} estimated from {n_sessions} recorded "
        "sessions (session means as units)"
        + (f", pooled with {prior.source} ({prior.dof:.0f} dof)" if prior is not None else "")
    )
    diff = runs.current - centre
    iv = _interval(diff, components, limit, df_m, confidence)  # the prior's dof add to the means'
    return LogDifference(
        diff=diff,
        margin=iv.margin,
        dof=df_m,
        sd=math.sqrt(runs.var_w),
        p_value=iv.p_value,
        estimated=runs.estimated,
        confidence=confidence,
        description=_across(runs, between, iv.q, df_m, "the session means' dof"),
        between_sd=math.sqrt(tau2),
        between_assumed=False,
        sessions=n_sessions,
        margin_limit=iv.margin_limit,
        between_source="pooled" if prior is not None else "estimated",
        prior=prior,
    )


def log_difference(
    a: Sequence[float],
    b: Sequence[float],
    *,
    confidence: float,
    default_rel_noise: float = 0.25,
    names: "tuple[str, str]" = ("a", "b"),
) -> LogDifference:
    """:func:`session_difference` of two groups of one session: the pooled-variance t interval.

    The standard deviation of the logs is pooled from both groups
    (``n_a + n_b - 2`` dof); with fewer than 2 dof it is not estimated but
    assumed to be ``log(1 + default_rel_noise)`` per sample, with a normal
    quantile.
    """
    return session_difference(
        [a], b, confidence=confidence, default_rel_noise=default_rel_noise, session_spread=None, names=names
    )
