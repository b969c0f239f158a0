"""Verdicts: a measurement against the baseline stored for this hardware profile.

``ok``, ``regression`` (the test fails), ``improvement`` (passes; the report
suggests updating), ``inconclusive`` (the data cannot tell: skipped unless
strict, never shown as a pass) or ``no-baseline`` (skipped unless strict). The decision is
:func:`pytest_bpsperf.stats.compare` on this session's runs against the
baseline's recorded sessions, read with the rule of :mod:`pytest_bpsperf.stats.rule`:
a regression is a drop beyond the noise of runs *and* of sessions, and beyond
half the tolerance. With ``normalize``
``single`` each run's img/s is first divided by its session's single-process
img/s, which takes the machine's speed of the day out.

:func:`next_step` is the job's stopping rule: run again to confirm a
regression, run again because the verdict is not decided yet, or stop.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping, Sequence

from ..config.settings import OPTIONS_BY_NAME, Settings
from ..stats import BetweenPrior, Comparison, compare, rule, summarize
from ..stats.sequential import MIN_PAIRS
from ..store.entries import entry_samples, entry_sessions, latest_session
from .breakdown import breakdown_view, change_phrase, combine

OK, REGRESSION, IMPROVEMENT, NO_BASELINE = "ok", "regression", "improvement", "no-baseline"
#: neither a drop beyond noise and half the tolerance nor any drop shown smaller than it: the data cannot
#: tell (never a pass)
INCONCLUSIVE = "inconclusive"
#: What a job does after a verdict (:func:`next_step`).
STOP, CONFIRM, MORE = "stop", "confirm", "more"


@dataclass(frozen=True)
class Verdict:
    """The outcome of one test (one trick) against its baseline."""

    status: str
    nodeid: str
    test: str
    trick: str
    profile_id: str
    key: str
    samples: tuple
    tolerance: float
    comparison: "Comparison | None" = None
    baseline: Mapping[str, Any] = field(default_factory=dict, hash=False)
    normalize: str = OPTIONS_BY_NAME["normalize"].default
    #: this session's single-process img/s (the reference of ``normalize=single``)
    single_img_per_sec: "float | None" = None
    #: why there is no comparison although an entry exists (e.g. nothing to normalize by)
    note: str = ""
    #: what differs between the baseline's latest recorded session and this one (software, host):
    #: ``("mxnet 1.9.0 -> 1.9.1", ...)``
    changed: "tuple[str, ...]" = ()
    #: per run of ``samples``: the foreign load it saw (cores; None where not measured), and the
    #: ``foreign_load`` setting beyond which a run counts as under foreign load
    foreign: "tuple[float | None, ...]" = ()
    foreign_limit: "float | None" = None

    @property
    def under_foreign_load(self) -> "list[tuple[int, float]]":
        """(run number from 1, cores) of each run whose foreign load exceeded ``foreign_limit``."""
        if self.foreign_limit is None:
            return []
        return [(i + 1, c) for i, c in enumerate(self.foreign) if c is not None and c > self.foreign_limit]

    def foreign_text(self) -> str:
        """``; under foreign load: run 2 of 3 saw 0.93 cores of other processes (more than 0.25)``, or ''."""
        hit = self.under_foreign_load
        if not hit:
            return ""
        runs = ", ".join(f"run {i} {c:.2f}" for i, c in hit)
        return (
            f"; under foreign load: {runs} cores of other processes on its nodes while timed, of "
            f"{self.runs} run{'s' if self.runs != 1 else ''} (foreign_load {self.foreign_limit:g})"
        )

    #: where the step time went: ``{"base": the baseline's latest session, "head": this session's runs}``
    breakdown: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @property
    def runs(self) -> int:
        """How many runs this verdict was decided on."""
        return len(self.samples)

    @property
    def measured(self) -> float:
        """Median img/s of this session's samples."""
        return summarize(self.samples).median

    @property
    def baseline_median(self) -> "float | None":
        """Median img/s of the baseline's samples (every recorded session)."""
        samples = entry_samples(self.baseline)
        return summarize(samples).median if samples else None

    @property
    def baseline_sessions(self) -> int:
        """How many recorded sessions the baseline holds."""
        return len(entry_sessions(self.baseline))

    def figures(self) -> str:
        """Measured against baseline against tolerance, in one phrase; how many runs and sessions."""
        runs = f"{self.runs} run{'s' if self.runs != 1 else ''}"
        if self.comparison is None:
            return (
                f"measured {self.measured:.1f} img/s ({runs}), no baseline"
                + (f" ({self.note})" if self.note else "")
                + self.foreign_text()
            )
        c = self.comparison
        n_sessions = self.baseline_sessions
        if c.between_assumed:
            spread = (
                f"between sessions ±{c.between_sd_pct:.0f}% assumed (1 recorded session, nothing else "
                "measured on this profile)"
            )
        elif c.between_source == "pooled":
            spread = (
                f"between sessions ±{c.between_sd_pct:.0f}% from {n_sessions} session"
                f"{'s' if n_sessions != 1 else ''} pooled with {c.between_pooled_from}"
            )
        elif n_sessions > 1:
            spread = f"between sessions ±{c.between_sd_pct:.0f}% from {n_sessions} sessions"
        else:  # both sides ran in one session (bpsperf compare): nothing between sessions to add
            spread = "one session: no spread between sessions"
        text = (
            f"measured {self.measured:.1f} img/s ({runs}) vs baseline {self.baseline_median:.1f} img/s "
            f"(n={c.baseline_summary.n}, {n_sessions} session{'s' if n_sessions != 1 else ''}): "
        )
        if self.normalize == "single":
            text += (
                f"relative to single-process img/s ({self.single_img_per_sec:.1f} this session) {c.change_pct:+.1f}%, "
            )
        else:
            text += f"{c.change_pct:+.1f}%, "
        return text + (
            f"{rule.meaning(self.tolerance)}, noise margin ±{c.margin_pct:.1f}% ({spread}), "
            f"smallest detectable drop {c.min_detectable_change_pct:.1f}%: "
            f"{rule.reason(self.status, self.tolerance, c.confidence)}; verdict after {runs}"
            + (f"; since the baseline was recorded: {', '.join(self.changed)}" if self.changed else "")
            + _where(self)
            + self.foreign_text()
        )

    def message(self, *, update_command: str = "", bisect: str = "") -> str:
        """The text for a failure, a skip or a report line."""
        head = f"{self.nodeid} [profile {self.profile_id}, trick {self.trick}]"
        if self.status == NO_BASELINE:
            note = f" ({self.note})" if self.note else ""
            return f"{head}: no baseline for this test, trick and workload{note}; record one with: {update_command}"
        text = f"{head}: {self.status.upper()}: {self.figures()}"
        if self.status == REGRESSION and bisect:
            text += "\n" + bisect
        if self.status == IMPROVEMENT and update_command:
            text += f"\nconsider updating the baseline: {update_command}"
        return text

    def as_dict(self) -> dict:
        """JSON view (also the JUnit properties)."""
        latest = latest_session(self.baseline)
        out = {
            "status": self.status,
            "profile": self.profile_id,
            "key": self.key,
            "samples": list(self.samples),
            "runs": self.runs,
            "measured_img_per_sec": self.measured,
            "baseline_img_per_sec": self.baseline_median,
            "baseline_commit": latest.get("commit"),
            "baseline_date": latest.get("date"),
            "baseline_sessions": self.baseline_sessions,
            "tolerance": self.tolerance,
            "normalize": self.normalize,
            "single_img_per_sec": self.single_img_per_sec,
        }
        if self.note:
            out["note"] = self.note
        if self.breakdown:
            out["breakdown"] = breakdown_view(self.breakdown)
        if self.changed:
            out["changed_since_baseline"] = list(self.changed)
        if any(c is not None for c in self.foreign):
            out["foreign_load_cores"] = [None if c is None else round(c, 3) for c in self.foreign]
            out["under_foreign_load"] = [i for i, _c in self.under_foreign_load]
        if self.comparison is not None:
            c = self.comparison
            out.update(
                change_pct=c.change_pct,
                margin_pct=c.margin_pct,
                min_detectable_change_pct=c.min_detectable_change_pct,
                ci_low=c.ci_low,
                ci_high=c.ci_high,
                tol_low=c.tol_low,
                tol_high=c.tol_high,
                p_value=c.p_value,
                confidence=c.confidence,
                between_sessions_pct=c.between_sd_pct,
                between_sessions_assumed=c.between_assumed,
                between_sessions_source=c.between_source,
                between_sessions_pooled_from=c.between_pooled_from,
                decided=c.decided,
                method=c.method,
            )
            if self.normalize == "single":
                out["normalized_samples"] = [x / self.single_img_per_sec for x in self.samples]
        return out


def _where(verdict: Verdict) -> str:
    """``; head 14.0% slower: compute +1%, ...`` for a regression whose both sides have a breakdown."""
    c = verdict.comparison
    phrase = (
        change_phrase(verdict.breakdown, c.change_pct if c is not None else None)
        if verdict.status == REGRESSION
        else ""
    )
    return f"; {phrase}" if phrase else ""


@dataclass(frozen=True)
class VerdictSettings:
    """The settings a job's verdict is decided with: one list for the plugin and the ``bpsperf`` command.

    :meth:`of` takes them from a test's settings (the plugin), :meth:`recorded`
    from the settings a results file recorded (``bpsperf check``, ``compare``),
    so that a setting that changes verdicts changes them in both.
    """

    tolerance: float
    confidence: float
    #: spread between sessions assumed while a baseline has one recorded session; None: one session
    session_spread: "float | None"
    normalize: str
    #: base-vs-head: the first look comes after this many pairs (at least ``MIN_PAIRS``)
    repeats: int
    max_pairs: int
    #: cores of foreign load beyond which a run is named (and, base vs head, a pair run again)
    foreign_load: float = OPTIONS_BY_NAME["foreign_load"].default

    @classmethod
    def of(cls, settings: Settings) -> "VerdictSettings":
        """The verdict settings of a test's resolved settings."""
        return cls(**{f.name: getattr(settings, f.name) for f in fields(cls)})

    @classmethod
    def recorded(cls, values: Mapping[str, Any]) -> "VerdictSettings":
        """The verdict settings of one run's ``settings`` in a results file; those it lacks (a file of
        an older version) are the settings' defaults."""
        return cls(
            **{
                f.name: values[f.name] if values.get(f.name) is not None else OPTIONS_BY_NAME[f.name].default
                for f in fields(cls)
            }
        )

    @property
    def first_look(self) -> int:
        """After how many pairs a base-vs-head job first decides."""
        return max(MIN_PAIRS, int(self.repeats))


#: What a baseline's recorded session says about its software and machine, compared with today's.
COMPARED_SOFTWARE = ("mxnet", "byteps", "gluoncv", "ray", "python")


def software_changes(baseline: "Mapping[str, Any] | None", now: "Mapping[str, Any] | None") -> "tuple[str, ...]":
    """``("mxnet 1.9.0 -> 1.9.1", "host a -> b")``: where the baseline's latest session and ``now`` differ.

    ``now`` holds this session's ``versions`` and ``host``; a side that does not
    record a field (older baselines, a results file without the host) says nothing about it.
    """
    if not baseline or not now:
        return ()
    session = latest_session(baseline)
    then_versions = session.get("versions") or {}
    now_versions = now.get("versions") or {}
    out = []
    for name in COMPARED_SOFTWARE:
        a, b = then_versions.get(name), now_versions.get(name)
        if a and b and a != b:
            out.append(f"{name} {a} -> {b}")
    host_then, host_now = session.get("host"), now.get("host")
    if host_then and host_now and host_then != host_now:
        out.append(f"host {host_then} -> {host_now}")
    return tuple(out)


def decide_job(
    *,
    nodeid: str,
    test: str,
    trick: str,
    profile_id: str,
    key: str,
    samples: Sequence[float],
    baseline: "Mapping[str, Any] | None",
    settings: VerdictSettings,
    single_img_per_sec: "float | None" = None,
    prior: "BetweenPrior | None" = None,
    now: "Mapping[str, Any] | None" = None,
    foreign: "Sequence[float | None]" = (),
    breakdowns: "Sequence[object]" = (),
) -> Verdict:
    """The verdict of a job's runs against its baseline: the one decision of the plugin
    (:meth:`pytest_bpsperf.judge.job.Job.decide`) and of ``bpsperf check``/``compare``.

    ``single_img_per_sec`` is the session's single-process img/s (what
    ``normalize=single`` divides by); ``prior`` the spread between sessions
    measured elsewhere on the profile; ``now`` this session's ``versions`` and
    ``host``, which the verdict compares with the baseline's (:func:`software_changes`);
    ``foreign`` each run's foreign load in cores (the verdict names the runs beyond
    ``settings.foreign_load``; it never changes the verdict); ``breakdowns`` the runs' breakdowns
    (:mod:`.breakdown`), which the verdict carries beside the one the baseline's latest session recorded.
    See :func:`decide`.
    """
    verdict = decide(
        nodeid=nodeid,
        test=test,
        trick=trick,
        profile_id=profile_id,
        key=key,
        samples=samples,
        baseline=baseline,
        tolerance=settings.tolerance,
        confidence=settings.confidence,
        session_spread=settings.session_spread,
        normalize=settings.normalize,
        single_img_per_sec=single_img_per_sec,
        prior=prior,
    )
    changed = software_changes(baseline, now)
    head = combine(breakdowns)  # type: ignore[arg-type]
    base = combine([(latest_session(baseline).get("extra") or {}).get("breakdown")])
    sides = {name: side.as_dict() for name, side in (("base", base), ("head", head)) if side is not None}
    return replace(
        verdict, changed=changed, foreign=tuple(foreign), foreign_limit=settings.foreign_load, breakdown=sides
    )


def decide(
    *,
    nodeid: str,
    test: str,
    trick: str,
    profile_id: str,
    key: str,
    samples: Sequence[float],
    baseline: "Mapping[str, Any] | None",
    tolerance: float,
    confidence: float = OPTIONS_BY_NAME["confidence"].default,
    session_spread: "float | None" = OPTIONS_BY_NAME["session_spread"].default,
    normalize: str = OPTIONS_BY_NAME["normalize"].default,
    single_img_per_sec: "float | None" = None,
    prior: "BetweenPrior | None" = None,
) -> Verdict:
    """Compare ``samples`` (img/s per run of this session) with ``baseline`` (a stored entry or None).

    ``confidence``, ``session_spread`` and ``normalize`` default to the
    settings' defaults (:data:`~pytest_bpsperf.config.settings.OPTIONS`).

    ``prior``: the spread between sessions measured elsewhere on this profile
    (:func:`pytest_bpsperf.stats.pooled_between`), pooled with the entry's
    own sessions and used instead of the assumed ``session_spread``; left out
    with ``normalize=single`` (it is measured on raw img/s).

    ``session_spread`` is the spread between sessions assumed while the
    baseline has one recorded session (None: compare as if within one
    session). ``normalize="single"`` divides every run by its session's
    single-process img/s (``single_img_per_sec`` here, ``single_img_per_sec``
    of each recorded session there); recorded sessions without one are left
    out, and without any the verdict is ``no-baseline`` with a note.
    """
    if normalize not in ("off", "single"):
        raise ValueError(f"normalize is {normalize!r}, expected off or single")
    common = dict(
        nodeid=nodeid,
        test=test,
        trick=trick,
        profile_id=profile_id,
        key=key,
        samples=tuple(float(s) for s in samples),
        tolerance=tolerance,
        normalize=normalize,
        single_img_per_sec=single_img_per_sec,
    )
    sessions = entry_sessions(baseline)
    if not sessions:
        return Verdict(status=NO_BASELINE, **common)  # type: ignore[arg-type]
    groups = [[float(x) for x in s["samples"]] for s in sessions]
    current = list(common["samples"])  # type: ignore[call-overload]
    if normalize == "single":
        refs = [s.get("single_img_per_sec") for s in sessions]
        groups = [[x / float(r) for x in g] for g, r in zip(groups, refs) if isinstance(r, (int, float)) and r > 0]
        if single_img_per_sec is None or not groups:
            note = (
                "normalize=single needs this session's single-process img/s (scaling on)"
                if single_img_per_sec is None
                else "normalize=single: no recorded session has a single-process img/s; record one with scaling on"
            )
            return Verdict(status=NO_BASELINE, baseline=dict(baseline or {}), note=note, **common)  # type: ignore
        current = [x / single_img_per_sec for x in current]
    comparison = compare(
        groups,
        current,
        tolerance=tolerance,
        confidence=confidence,
        session_spread=session_spread,
        prior=None if normalize == "single" else prior,
    )
    return Verdict(status=comparison.verdict, comparison=comparison, baseline=dict(baseline or {}), **common)  # type: ignore[arg-type]


def next_step(verdict: Verdict, *, confirmations: int, confirm: int, max_repeats: int) -> str:
    """What a job does after ``verdict``: :data:`CONFIRM`, :data:`MORE` or :data:`STOP`.

    One loop serves both kinds of extra run. A ``regression`` is run again up
    to ``confirm`` times, each time decided on all runs together, so that one
    unlucky run does not fail unchanged code. A verdict that is not decided
    (``inconclusive``) is run again while the job has fewer than ``max_repeats``
    runs and more runs of this session could still decide it; a clear result
    stops at once.
    """
    c = verdict.comparison
    if c is None:
        return STOP
    if verdict.status == REGRESSION:
        return CONFIRM if confirmations < confirm else STOP
    if c.decided or not c.more_runs_can_decide or verdict.runs >= max_repeats:
        return STOP
    return MORE


def bisect_hint(baseline_commit: "str | None", head: "str | None", pytest_args: Sequence[str]) -> str:
    """Where to look for the change that regressed, and the command that finds it (``bpsperf bisect``:
    each step a base-vs-head session, so noise between sessions cannot point at the wrong commit)."""
    if not baseline_commit:
        return "bisect: the baseline does not record its commit"
    short = baseline_commit[:12]
    args = " ".join(shlex.quote(a) for a in pytest_args)
    return (
        f"bisect: the baseline was measured at {short}; the change is in {short}..{(head or 'HEAD')[:12]}:\n"
        f"    bpsperf bisect {short} {(head or 'HEAD')[:12]} -- {args}"
    )
