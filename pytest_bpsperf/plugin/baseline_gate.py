"""The baseline gate in pytest: jobs and their verdicts, and recording baselines."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from ..config.settings import baselines_directory
from ..judge.breakdown import combine
from ..judge.job import Job, Ledger, RunResult
from ..judge.offline import profile_prior
from ..judge.verdict import NO_BASELINE, REGRESSION, Verdict, bisect_hint
from ..remote.provenance import current_commit, software_versions, utc_now_iso, working_tree_dirty
from ..runs.spec import RunSpec
from ..stats import BetweenPrior
from ..store.baselines import BaselineError, BaselineStore, check_baseline_quality
from ..store.entries import latest_session, make_session, recorded_sessions
from ..store.history import HistoryError, HistoryStore
from ..store.profile import Profile, make_profile
from . import junit
from .outcomes import settle

if TYPE_CHECKING:  # pragma: no cover
    from ..config.settings import Settings
    from .options import SettingsPlugin
    from .runner import RunnerPlugin


class BaselineGate:
    """Gives every run its job, turns verdicts into test outcomes, records baselines at the end."""

    def __init__(
        self, config: pytest.Config, settings: "SettingsPlugin", runner: "RunnerPlugin", ledger: Ledger
    ) -> None:
        self.config = config
        self.settings_plugin = settings
        self.runner = runner
        self.ledger = ledger
        self.updating: bool = config.getoption("bpsperf_update_baselines")
        self.update_failed = False  # recording baselines failed: the session fails
        self._profile: "Profile | None" = None
        self._item: "pytest.Item | None" = None
        self._priors: "dict[str, BetweenPrior | None]" = {}
        self._hints: "dict[str, str]" = {}  # profile id -> what profile_hint says (the store is read once)

    @property
    def settings(self) -> "Settings":
        """The session's settings (resolved when first read: see :class:`~.options.SettingsPlugin`)."""
        return self.settings_plugin.settings

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> None:
        self._item = item  # the test whose verdicts arrive now

    # -- profile and store ------------------------------------------------------
    def profile(self) -> Profile:
        """This run's hardware profile: on an existing cluster, of the nodes that hosted roles;
        embedded, of this machine (with the cluster's shape once Ray is up)."""
        if self._profile is None:
            facts = self.runner.profile_facts()
            self.config.hook.pytest_bpsperf_profile_facts(config=self.config, facts=facts)
            try:
                self._profile = make_profile(facts, override=self.settings.profile)
            except ValueError as exc:
                raise pytest.UsageError(f"bpsperf: {exc} (from {self.settings.origins.get('profile')})") from None
        return self._profile

    @property
    def known_profile(self) -> "Profile | None":
        """The profile if it was derived (never derives it)."""
        return self._profile

    def expected_profile(self) -> "Profile | None":
        """The profile this session will have, before any run (for the report header; never kept): the
        one derived, else a forced ``profile``, else on the embedded Ray this machine's as its one node.
        None on an existing cluster: the nodes that host roles decide it."""
        if self._profile is not None:
            return self._profile
        facts = self.runner.expected_profile_facts()
        if facts is None and self.settings.profile is None:
            return None
        facts = facts or {}
        self.config.hook.pytest_bpsperf_profile_facts(config=self.config, facts=facts)
        return make_profile(facts, override=self.settings.profile)

    def baselines_text(self, profile: "Profile | None") -> str:
        """What the stored baselines hold for ``profile`` (the report header)."""
        if self.settings.base:
            return f"not used: base vs head in one session (base {self.settings.base})"
        store = self.store()
        if profile is None:
            return f"in {self.shown(store.directory)}, the file of the profile the first run finds"
        try:
            data = store.load(profile.id)
        except BaselineError as exc:
            return str(exc)
        path = self.shown(data.path)
        if not data.entries:
            others = [p for p in store.profiles() if p != profile.id]
            held = (
                (
                    f"; {self.shown(store.directory)} holds {len(others)} other profile(s): {', '.join(others[:3])}"
                    + (", ..." if len(others) > 3 else "")
                )
                if others
                else ""
            )
            hint = self.profile_hint(profile)
            return (
                f"none for this profile: no {'entry in' if data.exists else 'file'} {path}{held} "
                "(pytest -m perf --bpsperf-update-baselines records them)" + (f"; {hint}" if hint else "")
            )
        sessions, latest = recorded_sessions(data.entries)
        n = len(data.entries)
        return (
            f"{path}: {n} entr{'y' if n == 1 else 'ies'}, {sessions} session{'' if sessions == 1 else 's'}, "
            f"latest {latest or 'undated'}"
        )

    def profile_hint(self, profile: Profile) -> str:
        """For a profile without baselines: the older file of this machine (moved with ``bpsperf baselines
        adopt``, or re-recorded), else the nearest recorded profile and how it differs. Information only:
        nothing is compared with either."""
        from ..store.profile import cpu_text, is_legacy, legacy_id, nearest

        if profile.id in self._hints:
            return self._hints[profile.id]
        store = self.store()
        recorded = {p: f for p, f in store.recorded_profiles().items() if p != profile.id}
        old = legacy_id(profile.facts) if profile.override is None else None
        if old in recorded and is_legacy(recorded[old]):
            hint = (
                f"{self.shown(store.path_for(old))} holds this machine's baselines under the older profile id "
                f"{old}, which named CPUs by their model name alone (cloud VMs show one name for CPUs about "
                f"3x apart), so they are not used: if they were recorded on a CPU like this one "
                f"({cpu_text(profile.facts)}), move them with "
                f"`bpsperf baselines adopt {old} --baselines-dir {self.shown(store.directory)}`; otherwise "
                f"record new ones with `pytest -m perf --bpsperf-update-baselines --bpsperf-repeats 3`"
            )
        else:
            found = nearest(profile.facts, recorded)
            hint = (
                ""
                if found is None
                else (
                    f"nearest recorded profile: {found[0]} ({'; '.join(found[1]) or 'no fact differs but the id'}), "
                    "for information: nothing is compared with it"
                )
            )
        self._hints[profile.id] = hint
        return hint

    def shown(self, path: "str | os.PathLike") -> str:
        """``path`` as the header shows it: relative to the rootdir when under it."""
        full, root = os.path.abspath(path), str(self.config.rootpath)
        return os.path.relpath(full, root) if full.startswith(root + os.sep) else full

    def store(self) -> BaselineStore:
        """The baseline store (--bpsperf-baselines-dir, else baselines/ under the rootdir)."""
        return BaselineStore(
            baselines_directory(self.settings.baselines_dir, str(self.config.rootpath)),
            lock_timeout=self.settings.lock_timeout,
            say=self._say,
        )

    def _say(self, message: str) -> None:
        """A line on the terminal now (waiting for the baselines lock), not only in the summary."""
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:
            tr.write_line(f"bpsperf: {message}")

    def update_command(self, test_id: str) -> str:
        """The command that records a baseline for ``test_id``."""
        repeats = max(3, self.settings.repeats)
        return f"pytest -m perf --bpsperf-update-baselines --bpsperf-repeats {repeats} {test_id}"

    def header_lines(self) -> "list[str]":
        """What the report header says about this gate (the base-vs-head gate names its arms)."""
        return []

    def close(self) -> None:
        """Release what the gate holds (nothing here; the base-vs-head gate removes its worktree)."""

    def results_section(self) -> "dict | None":
        """The gate's own part of the results document (the base-vs-head gate's arms and pairs)."""
        return None

    # -- jobs -------------------------------------------------------------------
    def train(self, spec: RunSpec) -> RunResult:
        """One run of ``spec`` in its job (what ``bpsperf_train()`` does)."""
        return self.admit(self.runner.run(spec))

    def admit(self, run: RunResult) -> RunResult:
        """Record ``run`` in the ledger, in its job (created on its first run)."""
        return self.ledger.record(run, self._new_job)

    def _new_job(self, first: RunResult) -> Job:
        key = first.key
        return Job(
            key,
            profile_id=self.profile().id,
            baseline=lambda: self._baseline(key),
            # recording: the session's runs are the repeats asked for, no verdict needs deciding
            rerun=None if self.updating else (lambda spec: self.admit(self.runner.run(spec))),
            confirm=first.spec.settings.confirm,
            on_verdict=self._on_verdict,
            say=self.runner.say,
            prior=lambda: self.prior(key),
        )

    def prior(self, key: str) -> "BetweenPrior | None":
        """The spread between sessions this profile measured elsewhere: its other entries' recorded
        sessions and, with ``--bpsperf-history``, the sessions of one commit in the history."""
        if key not in self._priors:
            profile_id = self.profile().id
            try:
                entries = self.store().load(profile_id).entries
            except BaselineError:
                entries = {}
            records: list = []
            history = self.config.getoption("bpsperf_history")
            if history:
                try:
                    records = HistoryStore(history).load(profile_id)
                except HistoryError:
                    records = []
            self._priors[key] = profile_prior(entries, key, records, profile_id=profile_id)
        return self._priors[key]

    def _baseline(self, key: str) -> "dict | None":
        problem = None
        try:
            return self.store().get(self.profile().id, key)
        except BaselineError as exc:
            problem = str(exc)
        pytest.fail(f"bpsperf: {problem}", pytrace=False)

    def _on_verdict(self, job: Job, run: RunResult, verdict: "Verdict | None") -> None:
        item = self._item
        settings = run.spec.settings
        if verdict is None:
            junit.record(item, "bpsperf_verdict", f"pending: repeat {run.spec.repeat + 1} of {settings.repeats}")
            return
        for name, value in verdict.as_dict().items():
            if name not in ("method", "samples", "key", "breakdown"):
                junit.record(item, f"bpsperf_{name}", value)
        junit.record_breakdown(item, verdict)
        junit.record(item, "bpsperf_confirmation_runs", job.confirmations)
        junit.record(item, "bpsperf_adaptive_runs", job.adaptive_runs)
        text = verdict.message(
            update_command=self.update_command(run.spec.test),
            bisect=bisect_hint(
                latest_session(verdict.baseline).get("commit"),
                current_commit(str(self.config.rootpath)),
                ["-m", "perf", "--bpsperf-tricks", run.spec.trick.name, run.spec.test],
            ),
        )
        if self.updating:
            return  # recording: the session's end writes the entry; nothing fails here
        if verdict.status == REGRESSION and job.confirmations:
            text += f"\n(confirmed: the regression held over {job.confirmations} extra run(s) of this job)"
        if verdict.status == NO_BASELINE:
            hint = self.profile_hint(self.profile())
            if hint:
                text += f"\n({hint})"
        settle(verdict.status, text, strict=settings.strict, note=self.ledger.note)

    # -- recording --------------------------------------------------------------
    def write_baselines(self, interrupted: bool) -> None:
        """:meth:`update_baselines` at the session's end: an I/O error is said in the summary and fails the
        session, it is not raised (the reports are still written)."""
        try:
            self.update_baselines(interrupted=interrupted)
        except OSError as exc:
            self.ledger.note(f"baselines NOT written: {exc}")
            self.update_failed = True

    def update_baselines(self, interrupted: bool) -> None:
        """--bpsperf-update-baselines: add this session to the entry of every job that ran.

        Each entry keeps its last ``sessions`` recorded sessions. An entry that
        is refused (too few runs, too much spread) or a file that cannot be
        written fails the session: a job that records baselines must never
        pass while recording nothing.
        """
        if not self.updating or not self.ledger.jobs:
            return
        if interrupted:
            self.ledger.note("interrupted: no baseline written (an aborted session is not a baseline)")
            return
        force = self.config.getoption("bpsperf_force_update")
        commit = current_commit(str(self.config.rootpath))
        dirty = working_tree_dirty(str(self.config.rootpath)) if commit else None
        date, versions = utc_now_iso(), software_versions()
        sessions, refused = {}, []
        window = self.settings.sessions
        for key, job in self.ledger.jobs.items():
            first = job.runs[0]
            settings = first.spec.settings
            simulated = next((r.output.simulation for r in job.runs if r.output.simulation), None)
            if simulated:  # --bpsperf-force-update does not make a stand-in's figures a measurement
                refused.append(f"{first.spec.test} [{first.trick}]: a simulation is never a baseline ({simulated})")
                continue
            problem = check_baseline_quality(job.samples, max_rel_spread=settings.max_spread)
            if problem and not force:
                refused.append(
                    f"{first.spec.test} [{first.trick}]: {problem} (--bpsperf-force-update records it anyway)"
                )
                continue
            head = {
                "test": first.spec.test,
                "trick": first.trick,
                "topology": settings.topology(),
                "workload": settings.workload(first.backend),
            }
            sessions[key] = (
                head,
                make_session(
                    samples=job.samples,
                    commit=commit,
                    date=date,
                    versions=versions,
                    single_img_per_sec=job.single_img_per_sec,
                    dirty=dirty,
                    extra=_extra(settings.steps, job.runs),
                ),
            )
        profile = self.profile()
        if sessions:
            try:
                path = self.store().add_sessions(profile.id, profile.as_dict(), sessions, window=window)
            except (BaselineError, OSError) as exc:  # OSError: a full disk, a read-only directory
                where = f" to {self.store().path_for(profile.id)}" if isinstance(exc, OSError) else ""
                self.ledger.note(f"baselines NOT written{where}: {exc}")
                self.update_failed = True
                return
            n = len(sessions)
            self.ledger.note(
                f"recorded a session in {n} baseline entr{'y' if n == 1 else 'ies'} in {path} "
                f"(each keeps its last {window} sessions)"
            )
        for line in refused:
            self.ledger.note("refused: " + line)
        if refused:
            self.update_failed = True
            self.ledger.note(
                f"baseline update incomplete: {len(refused)} entr{'y' if len(refused) == 1 else 'ies'} "
                "refused, so the session fails"
            )


def _extra(steps: int, runs: "list[RunResult]") -> dict:
    """What a recorded session keeps besides its samples: steps per run, each run's step time, and where
    the step time went (the median breakdown of the runs, for later verdicts' "what grew")."""
    extra: dict = {"steps_per_run": steps, "median_step_s": [r.measurement.step_s for r in runs]}
    found = combine(r.measurement.breakdown for r in runs)
    if found is not None:
        extra["breakdown"] = found.as_dict()
    return extra
