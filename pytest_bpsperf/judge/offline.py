"""Verdicts and baselines from files, without running anything.

The same decisions as the plugin, on documents it wrote: :func:`check_results`
decides a results file (``--bpsperf-json``) against the stored baselines,
:func:`compare_results` decides one results file against another, and
:func:`baseline_sessions` makes recorded baseline sessions from an earlier run's results.
Verdicts go through :func:`pytest_bpsperf.judge.verdict.decide_job`, the
plugin's own decision (and so :func:`pytest_bpsperf.stats.compare`), with the
settings each job recorded; a setting a file lacks is the settings' default.
Plain Python, no Ray or MXNet.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

from ..config.settings import OPTIONS_BY_NAME
from ..remote.provenance import utc_now_iso
from ..store.baselines import BaselineStore, check_baseline_quality
from ..store.entries import make_session
from ..store.results import JobSamples, jobs_of, run_key_of
from .breakdown import combine
from .verdict import Verdict, VerdictSettings, decide_job

if TYPE_CHECKING:  # pragma: no cover
    from ..stats import BetweenPrior
    from .pairs import PairedVerdict

__all__ = ["baseline_sessions", "check_results", "compare_results", "pair_verdicts", "profile_of"]


def profile_of(results: Mapping[str, Any], override: Optional[str] = None, *, source: str = "the results file") -> str:
    """The profile id a results document was measured on (``override`` wins)."""
    if override:
        return override
    profile = results.get("profile") or {}
    if not profile.get("id"):
        raise ValueError(
            f"{source} does not record its hardware profile (written by an older pytest-bpsperf?); "
            "name it with --profile PROFILE_ID"
        )
    return str(profile["id"])


def _decide(
    job: JobSamples,
    profile_id: str,
    baseline: "Mapping[str, Any] | None",
    tolerance: Optional[float],
    *,
    session_spread: Optional[float] = None,
    one_session: bool = False,
    prior: "BetweenPrior | None" = None,
    now: "Mapping[str, Any] | None" = None,
) -> Verdict:
    """The plugin's decision (:func:`~pytest_bpsperf.judge.verdict.decide_job`) with the job's own settings.

    ``tolerance`` and ``session_spread`` override the job's settings when given
    (``session_spread`` is the spread between sessions assumed while the baseline
    has one recorded session); ``one_session``: both sides come from one session
    (the plugin's method within a session).
    """
    settings = VerdictSettings.recorded(job.settings)
    spread = settings.session_spread if session_spread is None else session_spread
    settings = replace(
        settings,
        tolerance=job.tolerance if tolerance is None else float(tolerance),
        session_spread=None if one_session or spread is None else float(spread),
    )
    return decide_job(
        nodeid=job.nodeid,
        test=job.test,
        trick=job.trick,
        profile_id=profile_id,
        key=job.key,
        samples=job.samples,
        baseline=baseline,
        settings=settings,
        single_img_per_sec=job.single_img_per_sec,
        prior=prior,
        now=now,
        breakdowns=job.breakdowns,
    )


def profile_prior(
    entries: Mapping[str, Any], key: str, history: "Sequence[Mapping[str, Any]]" = (), *, profile_id: str = ""
) -> "BetweenPrior | None":
    """The spread between sessions that a profile measured besides entry ``key``: its other entries'
    recorded sessions and the sessions of one commit in ``history`` (the plugin's rule)."""
    from dataclasses import replace

    from ..stats import pooled_between
    from ..store.entries import between_groups
    from ..store.history import session_groups

    groups = between_groups(entries, exclude=key)
    found = session_groups(history, profile_id=profile_id) if history else []
    prior = pooled_between(groups + found)
    if prior is None:
        return None
    where = []
    if groups:
        where.append(f"{sum(len(g) for g in groups)} sessions of {len(groups)} other job(s)")
    if found:
        where.append(f"{sum(len(g) for g in found)} sessions of one commit in the history")
    return replace(prior, source=" and ".join(where) + " of this profile")


def check_results(
    results: Mapping[str, Any],
    store: BaselineStore,
    *,
    profile_id: str,
    tolerance: Optional[float] = None,
    history: "Sequence[Mapping[str, Any]]" = (),
) -> "list[Verdict]":
    """One verdict per job of ``results`` against the baselines of ``profile_id`` in ``store``.

    The tolerance is each test's own (from the results), unless ``tolerance`` is given. The spread
    between sessions pools what the profile measured elsewhere, as the plugin does (``history``:
    the records of ``--bpsperf-history``, when the session had one).
    """
    stored = store.load(profile_id)
    now = {"versions": results.get("versions") or {}, "host": results.get("host")}  # the session's, not this one's
    return [
        _decide(
            job,
            profile_id,
            stored.get(key),
            tolerance,
            prior=profile_prior(stored.entries, key, history, profile_id=profile_id),
            now=now,
        )
        for key, job in jobs_of(results).items()
    ]


def compare_results(
    base: Mapping[str, Any],
    head: Mapping[str, Any],
    *,
    tolerance: Optional[float] = None,
    session_spread: Optional[float] = None,
) -> "tuple[list[Verdict], list[str]]":
    """Each job of ``head`` against the same job in ``base`` (its runs as the baseline samples).

    Two results files are two pytest sessions, and sessions on one machine
    differ by more than the runs of one session do (a session effect: SD
    about 6% on the CPU machine class, sessions minutes apart), so the spread
    between them is assumed to be ``session_spread`` (each head job's setting
    when None); ``0`` compares as if both ran in one session. Returns the
    verdicts and the keys of ``head`` that ``base`` does not have (their
    verdict is ``no-baseline``). The profile is ``head``'s when recorded.
    """
    base_jobs = jobs_of(base)
    profile_id = (head.get("profile") or {}).get("id") or "-"
    verdicts, missing = [], []
    for key, job in jobs_of(head).items():
        ref = base_jobs.get(key)
        if ref is None:
            missing.append(key)
        baseline = (
            None
            if ref is None
            else {
                "sessions": [
                    {
                        "samples": list(ref.samples),
                        "commit": base.get("commit"),
                        "date": base.get("date"),
                        "single_img_per_sec": ref.single_img_per_sec,
                    }
                ]
            }
        )
        verdicts.append(
            _decide(
                job, profile_id, baseline, tolerance, session_spread=session_spread, one_session=session_spread == 0.0
            )
        )
    return verdicts, missing


def baseline_sessions(
    results: Mapping[str, Any], *, max_spread: Optional[float] = None, force: bool = False
) -> "tuple[dict[str, tuple[dict, dict]], list[str]]":
    """A recorded session for each job of ``results`` (``{key: (head, session)}``), and why some were refused.

    The same checks as ``--bpsperf-update-baselines``: at least two runs and a
    spread within ``max_spread`` (each test's own setting unless given);
    ``force`` records them anyway; a job that ran under a stand-in (``simulation``)
    is refused whatever ``force`` says. Commit, date and versions are those of the
    results; the store adds each session to its entry, as the plugin does.
    """
    sessions: "dict[str, tuple[dict, dict]]" = {}
    refused: "list[str]" = []
    simulated = {run_key_of(t): t["simulation"] for t in results.get("tests", []) if t.get("simulation")}
    for key, job in jobs_of(results).items():
        if key in simulated:  # --force does not make a stand-in's figures a measurement
            refused.append(f"{job.test} [{job.trick}]: a simulation is never a baseline ({simulated[key]})")
            continue
        limit = (
            max_spread
            if max_spread is not None
            else float(job.settings.get("max_spread", OPTIONS_BY_NAME["max_spread"].default))
        )
        problem = check_baseline_quality(job.samples, max_rel_spread=limit)
        if problem and not force:
            refused.append(f"{job.test} [{job.trick}]: {problem} (--force records it anyway)")
            continue
        extra: "dict[str, Any]" = {"steps_per_run": job.workload.get("steps"), "recorded_from": "results file"}
        if job.median_step_s:
            extra["median_step_s"] = list(job.median_step_s)
        found = combine(job.breakdowns)
        if found is not None:  # where the step time went, for later verdicts' "what grew"
            extra["breakdown"] = found.as_dict()
        head = {"test": job.test, "trick": job.trick, "topology": dict(job.topology), "workload": dict(job.workload)}
        sessions[key] = (
            head,
            make_session(
                samples=job.samples,
                commit=results.get("commit"),
                date=results.get("date") or utc_now_iso(),
                versions=results.get("versions") or {},
                host=results.get("host"),
                dirty=results.get("dirty"),
                single_img_per_sec=job.single_img_per_sec,
                extra=extra,
            ),
        )
    return sessions, refused


def pair_verdicts(results: Mapping[str, Any], *, tolerance: Optional[float] = None) -> "list[PairedVerdict]":
    """The verdict of each base-vs-head job of ``results``, decided again from its runs.

    The pairs are rebuilt from the runs themselves (``arm`` and ``pair`` of each
    run; a pair whose base run is missing, because it failed, is dropped) and
    decided by :func:`pytest_bpsperf.judge.pairs.decide_pairs` with each job's own
    settings, as the plugin decided them. Empty for a results file of one checkout.
    """
    from .pairs import decide_pairs

    section = results.get("base_vs_head")
    if not section:
        return []
    runs: "dict[str, dict[int, dict[str, Any]]]" = {}
    for run in results.get("tests", []):
        if run.get("arm") in ("base", "head") and run.get("pair") is not None:
            pair = runs.setdefault(run_key_of(run), {}).setdefault(int(run["pair"]), {"first": run["arm"]})
            pair[run["arm"]] = run
    profile_id = (results.get("profile") or {}).get("id") or "-"
    out = []
    for key, by_index in runs.items():
        table, last = [], None
        for index in sorted(by_index):
            pair = by_index[index]
            base, head = pair.get("base"), pair.get("head")
            last = head or last
            row: "dict[str, Any]" = {
                "pair": index + 1,
                "order": "base-head" if pair["first"] == "base" else "head-base",
                "base_img_per_sec": base["img_per_sec"] if base else None,
                "head_img_per_sec": head["img_per_sec"] if head else None,
                "ratio": head["img_per_sec"] / base["img_per_sec"] if base and head else None,
            }
            for name, run in (("base", base), ("head", head)):  # where each run's step time went
                if run and run.get("breakdown"):
                    row[f"{name}_breakdown"] = run["breakdown"]
            if base is None:
                row["dropped"] = "base run failed"
            table.append(row)
        if last is None:
            continue
        s = VerdictSettings.recorded(last["settings"])
        out.append(
            decide_pairs(
                nodeid=last["nodeid"],
                test=last["test"],
                trick=last["trick"],
                profile_id=profile_id,
                key=key,
                pairs=table,
                tolerance=s.tolerance if tolerance is None else tolerance,
                confidence=s.confidence,
                first_look=s.first_look,
                max_pairs=s.max_pairs,
                arms=section.get("arms") or {},
                aa=bool(section.get("aa")),
            )
        )
    return out
