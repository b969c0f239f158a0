"""Base-vs-head in pytest (setting ``base``): the two arms, their pairs of runs, verdicts as test outcomes.

:class:`PairGate` takes the place of the stored-baseline gate when ``base``
is set. At configure time it resolves the base (a revision must exist) and
refuses what cannot work (recording baselines from a head arm); once the perf
tests are collected, before anything is timed, it checks the base out as a
detached worktree outside the checkout, builds both arms and checks on every
node that hosts roles that each arm's interpreter imports what the roles
need. Every ``bpsperf_train()`` call then runs one pair; the job adds pairs
until its verdict is decided. The worktree is removed at the end of the
session, whatever ended it.
"""

from __future__ import annotations

import os
import random
import sys
from dataclasses import replace
from typing import TYPE_CHECKING

import pytest

from ..config.arms import BASE, HEAD, Arm, ArmError, arm_import_paths, resolve_base, same_code
from ..judge.job import RunFailure, RunResult
from ..judge.pairs import Pair, PairedJob, PairedVerdict
from ..remote.provenance import describe_versions
from ..runs.spec import RunSpec, run_key
from ..vcs.git import git_state, git_toplevel
from ..vcs.worktrees import Worktree, WorktreeError, remove_stale_worktrees
from . import junit
from .baseline_gate import BaselineGate
from .options import uses_runs
from .outcomes import settle
from .runner import spec_of

if TYPE_CHECKING:  # pragma: no cover
    from ..config.settings import Settings
    from ..judge.job import Ledger
    from .options import SettingsPlugin
    from .runner import RunnerPlugin


class PairGate(BaselineGate):
    """The base-vs-head gate: runs pairs, decides each job from them, never records baselines."""

    def __init__(
        self, config: pytest.Config, settings: "SettingsPlugin", runner: "RunnerPlugin", ledger: "Ledger"
    ) -> None:
        super().__init__(config, settings, runner, ledger)
        s = self.settings
        origin = s.origins.get("base", "?")
        if self.updating:
            raise pytest.UsageError(
                f"bpsperf: --bpsperf-update-baselines cannot be used with setting 'base' ({s.base}, from {origin}): "
                "baselines are recorded from one checkout (main, nightly, new hardware), never from the head arm "
                "of a base-vs-head run; drop one of the two"
            )
        if s.head and not s.base:
            raise pytest.UsageError(
                f"bpsperf: setting 'head' ({s.head}, from {s.origins.get('head', '?')}) needs setting 'base': the "
                "head arm is measured against a base in pairs; add --bpsperf-base=REV (or leave 'head' unset)"
            )
        rootdir = str(config.rootpath)
        try:
            self.source = resolve_base(str(s.base), origin, rootdir)
            #: what ``head`` named (None: the working tree, as without it)
            self.head_source = (
                resolve_base(str(s.head), s.origins.get("head", "?"), rootdir, setting=HEAD) if s.head else None
            )
        except ArmError as exc:
            raise pytest.UsageError(f"bpsperf: {exc}") from None
        self.head_tree = git_toplevel(rootdir) or os.path.realpath(rootdir)
        if s.base_python and not s.ray_address:
            problem = _not_an_interpreter(s.base_python)
            if problem:
                raise pytest.UsageError(
                    f"bpsperf: invalid value {s.base_python!r} for setting 'base_python' from "
                    f"{s.origins.get('base_python')}: {problem}; expected the path of a Python interpreter "
                    "(a venv's bin/python)"
                )
        self.seed = s.seed if s.seed is not None else random.SystemRandom().randrange(1 << 31)
        self.worktree: "Worktree | None" = None
        self.head_worktree: "Worktree | None" = None
        self.arms: "dict[str, Arm]" = {}
        self.aa = False
        self.removed_stale: "list[str]" = []
        revisions = [src for src in (self.source, self.head_source) if src is not None and src.is_revision]
        if revisions:
            self.removed_stale = remove_stale_worktrees(revisions[0].repository)

    # -- arms ------------------------------------------------------------------
    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Check the base out and check both arms' interpreters, once perf tests are collected."""
        items = [i for i in session.items if uses_runs(i)]
        if not items or self.config.option.collectonly or self.arms:
            return
        from ..launch.cluster import ClusterError

        try:
            self.prepare(items)
        except (ArmError, WorktreeError, ClusterError) as exc:
            self.close()
            raise pytest.UsageError(f"bpsperf: {exc}") from None

    def prepare(self, items: list) -> None:
        """Worktree (for a revision), both arms, and the preflight of their interpreters."""
        s = self.settings
        if self.source.is_revision:
            self.worktree = Worktree(self.source.repository, str(self.source.commit))
            base_tree = self.worktree.create()
            base_commit, base_dirty = self.source.commit, False
        else:
            base_tree, base_commit, base_dirty = self.source.repository, self.source.commit, self.source.dirty
        search = list(sys.path) + [str(self.config.rootpath)]
        head = self._head_arm(search)
        base = Arm(
            BASE,
            base_tree,
            arm_import_paths(base_tree, self.head_tree, search),
            s.base_python,
            base_commit,
            base_dirty,
            self.source.value if self.source.is_revision else "directory",
        )
        self.arms = {BASE: base, HEAD: head}
        self.aa = same_code(base, head)
        self._preflight(items)

    def _head_arm(self, search: "list[str]") -> Arm:
        """The head arm: the working tree, or what setting ``head`` named (a worktree of its revision, a
        directory). Either way the harness is the working tree's; only the code under test is the arm's."""
        src = self.head_source
        if src is None:
            state = git_state(self.head_tree)
            return Arm(
                HEAD,
                self.head_tree,
                arm_import_paths(self.head_tree, self.head_tree, search),
                None,
                state.commit,
                state.dirty,
                "working tree",
            )
        if src.is_revision:
            self.head_worktree = Worktree(src.repository, str(src.commit), arm=HEAD)
            tree, commit, dirty, ref = self.head_worktree.create(), src.commit, False, src.value
        else:
            tree, commit, dirty, ref = src.repository, src.commit, src.dirty, "directory"
        return Arm(HEAD, tree, arm_import_paths(tree, self.head_tree, search), None, commit, dirty, ref)

    def _preflight(self, items: list) -> None:
        """Each arm's interpreter imports what its roles need, on every node that hosts roles."""
        from ..config.ray_env import RuntimeEnvError
        from ..remote.preflight import PreflightError

        seen, specs = set(), []
        for item in items:
            settings = self.settings_plugin.settings_for(item)
            entry = settings.entry.spec if settings.entry else None
            if (entry, settings.backend) not in seen:
                seen.add((entry, settings.backend))
                specs.append(self._spec_of(item, settings))
        facts: "dict[str, dict]" = {}
        try:
            for spec in specs:
                if self.settings.ray_address:
                    arms = [self.arm_for(name, spec) for name in (BASE, HEAD)]
                    found = self.runner.session.preflight(arms, spec)
                else:  # every role runs here: check before Ray starts
                    found = {}
                    for name in (BASE, HEAD):
                        try:
                            found[name] = self._local_preflight(self.arm_for(name, spec), spec)
                        except PreflightError as exc:
                            raise PreflightError(
                                f"{name} arm ({self.arms[name].tree}) on this machine: {exc}"
                            ) from None
                for name, f in found.items():
                    facts.setdefault(name, f)
        except PreflightError as exc:
            raise ArmError(
                f"{exc} (setting 'base' {self.source.describe()}"
                + (f", 'head' {self.head_source.describe()}" if self.head_source is not None else "")
                + (f", 'base_python' {self.settings.base_python}" if self.settings.base_python else "")
                + ")"
            ) from None
        except RuntimeEnvError as exc:  # what an arm ships against the runtime_env of the job or the setting
            raise ArmError(str(exc)) from None
        self.arms = {name: replace(arm, facts=facts.get(name, {})) for name, arm in self.arms.items()}

    def _local_preflight(self, arm: Arm, spec: RunSpec) -> dict:
        """The preflight of one arm on this machine (the embedded Ray), before Ray starts.

        An arm on this interpreter needs only its entry module checked (its tree
        differs; what the interpreter imports is this session's own, already
        checked); with no entry point nothing runs. Another interpreter imports
        everything its roles need.
        """
        from ..remote.preflight import check_interpreter
        from ..remote.provenance import software_versions

        entry = spec.settings.entry.spec if spec.settings.entry else None
        if arm.python is None:
            if entry is None:
                return {"executable": sys.executable, "versions": software_versions(), "problems": []}
            needs: "list[str]" = []
        else:
            needs = arm_needs(spec.settings, self.settings_plugin.auto_backend, self.settings_plugin.hardware.gpus)
        return check_interpreter(
            arm.python,
            arm.paths,
            arm.tree,
            needs,
            entry=entry,
            entry_path=arm.entry_path,
            harness_dir=str(self.runner.base_log_dir()),
        )

    def _spec_of(self, item: pytest.Item, settings) -> RunSpec:
        return replace(spec_of(item, self.settings_plugin, self.runner.base_log_dir()), settings=settings)

    def arm_for(self, name: str, spec: RunSpec) -> Arm:
        """Arm ``name`` for ``spec``: its entry point's directory inside the arm's tree (when it is the
        repository's)."""
        arm = self.arms[name]
        entry = spec.settings.entry
        if entry is None or not entry.path:
            return arm
        real = os.path.realpath(entry.path)
        head = os.path.realpath(self.head_tree)
        if real != head and not real.startswith(head + os.sep):
            return arm  # not code of the repository: the same for both arms
        rel = os.path.relpath(real, head)
        from ..remote.environ import TREE

        return replace(arm, entry_path=TREE if rel == "." else f"{TREE}/{rel.replace(os.sep, '/')}")

    def baselines_text(self, profile: object) -> str:
        """Base against head uses no stored baseline (the report header says so)."""
        head = f", head {self.head_source.describe()}" if self.head_source is not None else ""
        return f"not used: base vs head in one session (base {self.source.describe()}{head})"

    def header_lines(self) -> "list[str]":
        """What the report header says about the arms."""
        if not self.arms:
            return [f"base vs head: base {self.source.describe()} (not prepared)"]
        lines = [f"base vs head in one session (pairs, order from seed {self.seed})"]
        for name in (BASE, HEAD):
            arm = self.arms[name]
            versions = arm.facts.get("versions") or {}
            v = describe_versions(versions)
            lines.append(f"{arm.describe()}" + (f" ({v})" if v else ""))
        if self.aa:
            lines.append("A/A run: both arms are the same commit and interpreter (what the verdicts show is noise)")
        for path in self.removed_stale:
            lines.append(f"removed a stale base worktree of a session that was killed: {path}")
        return lines

    def results_section(self) -> dict:
        """``base_vs_head`` of the results: the arms, the seed, each job's verdict and pair table."""
        jobs = []
        for job in self.ledger.jobs.values():
            v = job.verdict
            if v is None or getattr(v, "kind", "") != "pairs":
                continue
            jobs.append({**v.as_dict(), "nodeid": v.nodeid, "test": v.test, "trick": v.trick})
        return {"seed": self.seed, "aa": self.aa, "arms": {n: a.as_dict() for n, a in self.arms.items()}, "jobs": jobs}

    def close(self) -> None:
        """Remove the worktrees (idempotent); called at the end of the session, whatever ended it."""
        for name in ("worktree", "head_worktree"):
            tree = getattr(self, name, None)
            if tree is not None:
                tree.remove()
                setattr(self, name, None)

    # -- runs ------------------------------------------------------------------
    def train(self, spec: RunSpec) -> RunResult:
        """One pair of ``spec``'s job (its first pairs are the test's repeats); the head run."""
        job = self._job(spec)
        index = len(job.pairs)
        pair = self.run_pair(spec, index, job.first_arm(index))
        return pair.head  # type: ignore[return-value]  # run_pair fails the test when head has no result

    def _job(self, spec: RunSpec) -> PairedJob:
        key = run_key(spec, spec.settings.backend)
        return self.ledger.job(
            key,
            lambda: PairedJob(  # type: ignore[return-value,arg-type]
                key,
                profile_id="",
                seed=self.seed,
                run_pair=self.run_pair,
                arms={n: a.as_dict() for n, a in self.arms.items()},
                aa=self.aa,
                on_verdict=self._on_pair_verdict,
                say=self.runner.say,
            ),
        )

    def run_pair(self, spec: RunSpec, index: int, first: str) -> Pair:
        """Run pair ``index`` of ``spec``'s job, ``first`` arm first; a failure of head alone fails the test."""
        if spec.arm is not None:  # the job's extra pairs start from its head run's spec
            spec = replace(spec, arm=None, pair=None, log_dir=os.path.dirname(spec.log_dir))
        job = self._job(spec)
        pair = Pair(index, first)
        failed: "dict[str, RunFailure]" = {}
        for name in pair.order:
            arm_spec = replace(
                spec,
                arm=self.arm_for(name, spec),
                pair=index,
                log_dir=os.path.join(spec.log_dir, f"pair{index + 1}-{name}"),
            )
            outcome = self.runner.attempt(arm_spec)
            if isinstance(outcome, RunFailure):
                failed[name] = outcome
            else:
                setattr(pair, name, outcome)
                self.ledger.keep(outcome)
        if not job.profile_id:
            job.profile_id = self.profile().id  # once Ray is up: the cluster is part of the profile
        if BASE in failed:
            pair.dropped = f"base run failed: {failed[BASE].reason.splitlines()[0]}"
        job.add(pair, foreign_limit=spec.settings.foreign_load)
        if HEAD in failed and BASE not in failed:
            pytest.fail(
                f"{failed[HEAD].reason}\n(a failure of head only: the base run of the same pair passed, "
                "so this is not a measurement but a failure of the code under test)",
                pytrace=False,
            )
        if pair.head is None:
            pytest.fail(
                f"{failed[HEAD].reason}\n(both arms failed in pair {index + 1}: see the base's failure "
                "too; nothing to compare)",
                pytrace=False,
            )
        if pair.head.key != job.key and job.valid_pairs <= 1:
            job.key = pair.head.key  # the backend that ran (auto resolved)
        return pair

    def _on_pair_verdict(self, job: PairedJob, run: "RunResult | None", verdict: "PairedVerdict | None") -> None:
        item = self._item
        if verdict is None:
            junit.record(
                item,
                "bpsperf_verdict",
                f"pending: pair {len(job.pairs)} of {run.spec.settings.repeats}" if run is not None else "pending",
            )
            return
        for name, value in verdict.as_dict().items():
            if name not in ("comparison", "pair_table", "key", "note", "breakdown"):
                junit.record(item, f"bpsperf_{name}", value)
        junit.record_breakdown(item, verdict)
        junit.record(item, "bpsperf_adaptive_pairs", job.adaptive_pairs)
        text = verdict.message()
        settings = run.spec.settings if run is not None else self.settings
        settle(verdict.status, text, strict=settings.strict, note=self.ledger.note)

    def update_baselines(self, interrupted: bool) -> None:
        """Never: a base-vs-head session records no baseline (refused at configure)."""


def arm_needs(settings: "Settings", resolved_auto: "str | None", gpus: int) -> "list[str]":
    """What every role of a run of ``settings`` imports, ``auto`` being what the session resolved it to
    (``resolved_auto``), else what it picks on this machine's device kind (``gpus``): on GPUs BytePS's
    MXNet plugin, not MXNet's alone."""
    from ..backends import AUTO
    from ..remote.preflight import role_needs

    backend = settings.backend
    if backend == "auto":
        backend = resolved_auto or AUTO["gpu" if gpus else "cpu"]
    return sorted({n for role in ("scheduler", "server", "worker") for n in role_needs(backend, role, settings)})


def _not_an_interpreter(path: str) -> "str | None":
    if os.sep not in path:
        return None  # a name found on the nodes' PATH
    if not os.path.exists(path):
        return f"{path} does not exist"
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        return f"{path} is not an executable file"
    return None
