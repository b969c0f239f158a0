"""Runs in pytest: the Ray session (lazy), the default ``pytest_bpsperf_run``, a run turned into a result."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import pytest

from ..judge.job import Ledger, RunFailure, RunResult
from ..judge.measurement import MeasurementError, measure
from ..runs.output import RunOutput
from ..runs.spec import RunSpec
from .options import uses_runs

if TYPE_CHECKING:  # pragma: no cover
    from ..config.settings import Settings
    from ..config.tricks import Trick
    from ..launch.session import PerfSession
    from ..store.profile import Profile
    from .options import SettingsPlugin


class RunnerPlugin:
    """Owns the session's :class:`~pytest_bpsperf.launch.session.PerfSession` and turns specs into results."""

    def __init__(self, config: pytest.Config, settings: "SettingsPlugin", ledger: Ledger) -> None:
        self.config = config
        self.settings_plugin = settings
        self.ledger = ledger
        self._session: "PerfSession | None" = None
        #: called once, before the Ray side is first used (the plugin installs the SIGTERM handler)
        self.before_ray: "Callable[[], None]" = lambda: None

    @property
    def settings(self) -> "Settings":
        """The session's settings (resolved when first read: see :class:`~.options.SettingsPlugin`)."""
        return self.settings_plugin.settings

    @property
    def session(self) -> "PerfSession":
        """The Ray side of the session, created on first use."""
        if self._session is None:
            from ..launch.session import PerfSession

            self.before_ray()
            self._session = PerfSession(
                ray_address=self.settings.ray_address,
                base_log_dir=str(self.base_log_dir()),
                say=self.say,
                verbose_ps=self.config.getoption("bpsperf_ps_verbose"),
                live=self.live,
                connect_timeout=self.settings.connect_timeout,
                notice=self.notice,
                runtime_env=self.settings.runtime_env,
                runtime_env_origin=self.settings.origins.get("runtime_env", "default"),
            )
        return self._session

    @property
    def started(self) -> "PerfSession | None":
        """The session if a run started it (never starts Ray)."""
        return self._session

    def base_log_dir(self) -> Path:
        """Where role logs go: --bpsperf-log-dir, else pytest's basetemp/bpsperf."""
        if self.settings.log_dir:
            path = Path(self.settings.log_dir)
        else:
            path = self.config._tmp_path_factory.getbasetemp() / "bpsperf"  # type: ignore[attr-defined]
        path.mkdir(parents=True, exist_ok=True)
        return path

    def _write_line(self, line: str) -> None:
        """A line on the terminal now, also while a test runs (its output capture paused, as live logging does)."""
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is None:
            return
        capman = self.config.pluginmanager.get_plugin("capturemanager")
        with capman.global_and_fixture_disabled() if capman is not None else contextlib.nullcontext():
            tr.write_line(line)

    def say(self, message: str) -> None:
        """A progress line, shown with -v."""
        if self.config.option.verbose > 0:
            self._write_line(f"bpsperf: {message}")

    def live(self, message: str) -> None:
        """A live progress line while training, shown unless -q."""
        if self.config.option.verbose >= 0:
            self._write_line(f"bpsperf: {message}")

    def notice(self, message: str) -> None:
        """A line shown whatever the verbosity (e.g. waiting for another session), also while a test runs:
        written past the capture as the live lines are (written into it, it was lost, and the terminal
        took its line as ended, so the next live line ran on after pytest's file name)."""
        self._write_line(f"bpsperf: {message}")

    def close(self) -> None:
        """Tear down Ray (if this session started it)."""
        if self._session is not None:
            self._session.close()

    def connect(self) -> None:
        """Once perf tests are selected and the session's settings checked (not with ``--collect-only``):
        on an existing cluster, connect now, so that workload defaults follow its worker nodes' device
        kind and an unreachable cluster is one error for the session. Where there are GPUs, the backend
        is chosen (``auto``) or checked (a GPU backend that was set) now too, before any test's own
        settings are checked."""
        from ..config.ray_env import RuntimeEnvError, check_session
        from ..remote.environ import package_dir

        try:  # first of all, the role actors' runtime_env must merge (the setting's, the Ray job's, the plugin's)
            check_session(self.settings, os.environ, package_dir())
        except RuntimeEnvError as exc:
            raise pytest.UsageError(f"bpsperf: {exc}") from None
        if self.config.option.collectonly:
            return
        from ..backends import PlanError
        from ..launch.cluster import ClusterError

        if self.settings.ray_address:
            try:
                self.settings_plugin.use_hardware(self.session.hardware(self.settings.server_resource))
            except ClusterError as exc:
                raise pytest.UsageError(
                    f"bpsperf: {exc} (setting 'ray_address' from {self.settings.origins.get('ray_address')})"
                ) from None
        if self.settings_plugin.hardware.gpus == 0:
            return  # auto is mxnet; a GPU backend that was set fails planning with what the nodes have
        setting = self.settings.backend
        try:
            if self.settings.ray_address:
                choice = self.session.backend(setting)
            else:
                choice = self.session.choose_backend_here(setting)
        except PlanError as exc:
            from ..remote.preflight import mxnet_missing_reason

            # where MXNet has no wheels for this Python, the probe's message says what to use instead
            hint = "" if mxnet_missing_reason() else "; install BytePS's MXNet plugin there, or use backend mxnet"
            raise pytest.UsageError(
                f"bpsperf: {exc} (setting 'backend' from {self.settings.origins.get('backend')}){hint}"
            ) from None
        if setting == "auto":
            self.settings_plugin.resolved_auto(choice)
            fallback = self.session.backend_fallback
            if fallback is not None and fallback.get("backend", "mxnet") != "mxnet":
                self.notice(
                    f"backend auto chose {fallback['backend']} on a cluster with GPUs: BytePS will not run "
                    f"({fallback['reason']})"
                )
            elif fallback is not None:
                self.notice(
                    f"backend auto fell back to mxnet on a cluster with GPUs: BytePS will not run "
                    f"({fallback['reason']}); the workers train on their nodes' CPUs at CPU sizes"
                )

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Before anything is timed, once perf tests are collected: on an existing cluster, every node
        of the first run imports what its roles need (and the workers' nodes hold the ``.rec``); on the
        embedded Ray, this interpreter has one MXNet distribution, not two over each other; with
        BytePS, one push_pull through a real scheduler and server. A failure is one usage error.

        (A base-vs-head session checks both arms' interpreters itself, see :mod:`.pair_gate`.)"""
        items = [i for i in session.items if uses_runs(i)]
        if not items or self.config.option.collectonly or not self.settings_plugin.ready:
            return  # after a failed activation its usage error stands (pytest calls this hook anyway)
        if self.settings.base:
            return
        spec = spec_of(items[0], self.settings_plugin, self.base_log_dir())
        if self.runs_elsewhere():
            return  # runs come from another implementation of the hook: no roles of ours to check
        from ..backends import AUTO, PlanError
        from ..config.ray_env import RuntimeEnvError
        from ..launch.cluster import ClusterError
        from ..launch.launcher import RoleFailed
        from ..remote.preflight import PreflightError, mxnet_conflict

        conflict = None if self.settings.ray_address else mxnet_conflict()  # embedded: the roles run this Python
        if conflict:
            raise pytest.UsageError(f"bpsperf: this interpreter ({sys.executable}) cannot run the roles: {conflict}")
        if not self.settings.ray_address:
            self._check_mxnet_here(items)
        try:
            if self.settings.ray_address:
                self.session.preflight([None], spec)
            backend = (
                self.session.backend(spec.settings.backend)
                if (self.settings.ray_address or self.settings_plugin.hardware.gpus)
                else AUTO["cpu"]
            )
            if backend == "byteps":
                self.session.push_pull_check(spec)
        except PreflightError as exc:
            raise pytest.UsageError(f"bpsperf: the cluster cannot run the roles: {exc}") from None
        except RoleFailed as exc:
            raise pytest.UsageError(
                f"bpsperf: BytePS's preflight (one push_pull through a real scheduler and "
                f"server) failed, so no run could train: {exc}"
            ) from None
        except (PlanError, ClusterError, RuntimeEnvError) as exc:
            raise pytest.UsageError(f"bpsperf: {exc}") from None

    def _check_mxnet_here(self, items: "list[pytest.Item]") -> None:
        """On the embedded Ray, where the roles run this interpreter: a selected test whose backend's roles
        import MXNet (``mxnet``, ``byteps``; ``auto`` as resolved here) on a Python that MXNet has no wheels
        for, and that has none, is one usage error before Ray starts, not every role's ModuleNotFoundError."""
        from ..remote.preflight import USES_MXNET, mxnet_missing_reason, role_needs

        reason = mxnet_missing_reason()
        if reason is None:
            return
        from ..backends import AUTO

        checked: "set[str]" = set()
        for item in items:
            function = item.nodeid.split("[")[0]
            if function in checked:
                continue
            checked.add(function)
            settings = self.settings_plugin.settings_for(item)
            backend = self.settings_plugin.backend_of(settings) or AUTO["cpu"]  # auto unresolved: no GPU here
            if not any(need in USES_MXNET for need in role_needs(backend, "worker", settings)):
                continue
            here = "" if settings.backend == backend else f", which is {backend} on this machine"
            python = ".".join(map(str, sys.version_info[:3]))
            raise pytest.UsageError(
                f"bpsperf: {function}: backend {backend} (setting 'backend' {settings.backend!r} from "
                f"{settings.origins.get('backend', 'default')}{here}) cannot run on this interpreter "
                f"({sys.executable}, Python {python}): its roles import MXNet, which is not installed; {reason}"
            )

    @pytest.hookimpl(trylast=True)
    def pytest_bpsperf_run(self, config: pytest.Config, spec: RunSpec) -> RunOutput:
        return self.session.run(spec)

    def run(self, spec: RunSpec) -> RunResult:
        """One run through the hook, measured; a failed run fails the test (and is kept for the reports)."""
        outcome = self.attempt(spec)
        if isinstance(outcome, RunFailure):
            # Outside the except block: the report shows the message once, not as a chain.
            pytest.fail(outcome.reason, pytrace=False)
        return outcome

    def attempt(self, spec: RunSpec) -> "RunResult | RunFailure":
        """One run through the hook, measured, or the failure (kept for the reports) when it failed.

        A Ray that is unavailable for the session fails the test at once.
        """
        from ..config.ray_env import RuntimeEnvError
        from ..launch.cluster import ClusterError
        from ..launch.launcher import RoleFailed

        failure = None
        session_error = self._session.start_error if self._session is not None else None
        if session_error is not None:
            # reported in full by the first test that tried; the others only point at it
            pytest.fail(
                f"bpsperf: not run: Ray is unavailable for this session ({str(session_error).splitlines()[0]})",
                pytrace=False,
            )
        try:
            output = self.config.hook.pytest_bpsperf_run(config=self.config, spec=spec)
            measurement = measure(output)
        except RoleFailed as exc:
            failure = str(exc)
        except MeasurementError as exc:
            failure = f"bpsperf: {spec.nodeid}: cannot measure: {exc}"
        except ClusterError as exc:
            failure = f"bpsperf: {spec.nodeid}: Ray is unavailable for this session: {exc}"
        except RuntimeEnvError as exc:  # what this run ships (its entry point's module) against the user's
            failure = f"bpsperf: {spec.nodeid}: {exc}"
        except Exception as exc:  # noqa: BLE001 - a Ray failure outside the watched run is still a run failure
            if not type(exc).__module__.startswith("ray"):
                raise
            failure = (
                f"bpsperf run failed: Ray raised {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            )
        if failure is not None:
            if spec.arm is not None:
                failure = f"{spec.arm.name} arm, pair {(spec.pair or 0) + 1}: {failure}"
            self.ledger.fail(RunFailure(spec.nodeid, failure))
            if self._session is not None and self._session.start_error is not None:
                pytest.fail(failure, pytrace=False)
            return RunFailure(spec.nodeid, failure)
        return RunResult(spec=spec, output=output, measurement=measurement)

    def profile_facts(self) -> dict:
        """The facts of this session's hardware profile
        (:meth:`pytest_bpsperf.launch.session.PerfSession.profile_facts`);
        of this machine alone while no run started Ray (never starts it)."""
        if self._session is None:
            from ..remote.hardware import collect_facts

            return collect_facts(cluster=None)
        return self._session.profile_facts()

    def expected_profile_facts(self) -> "dict | None":
        """The profile's facts before any run: on the embedded Ray, this machine's with the cluster of
        one node that it will be (the cores and GPUs the settings count); None on an existing cluster,
        where the nodes that host roles decide."""
        if self.settings.ray_address:
            return None
        if self._session is not None and self._session.cluster.started:
            return self.profile_facts()
        from ..remote.hardware import collect_facts

        if self.runs_elsewhere():
            return collect_facts(cluster=None)  # as profile_facts says while no run started Ray
        hardware = self.settings_plugin.hardware
        return collect_facts(cluster={"nodes": [{"gpus": hardware.gpus, "cpus": hardware.cores}]})

    def runs_elsewhere(self) -> bool:
        """Whether another implementation of ``pytest_bpsperf_run`` may answer first (no roles of ours)."""
        impls = self.config.pluginmanager.hook.pytest_bpsperf_run.get_hookimpls()
        return any(impl.plugin is not self for impl in impls)

    def session_info(self) -> "dict[str, object]":
        """Machine-readable facts of the session (run id, Ray start/stop seconds, nodes)."""
        if self._session is None:
            return {}
        c = self._session.cluster
        return {
            "run_id": self._session.run_id,
            "ray": {
                "embedded": c.owned,
                "address": c.address,
                "startup_s": c.startup_s,
                "shutdown_s": c.shutdown_s,
                "job": c.job.submission_id if c.job is not None else None,
            },
            # seconds the session waited for another session's measurement on this machine (never timed)
            "lock_waited_s": round(c.lock_waited_s, 1),
            "backend_choice": self._session.backend_choice[1] if self._session.backend_choice else None,
            "backend_fallback": self._session.backend_fallback,
            "nodes": [
                {"name": n.name, "node_id": n.node_id, "ip": n.ip, "cpus": n.cpus, "gpus": n.gpus}
                for n in self._session.known_nodes()
            ],
        }

    def header_lines(self) -> "list[str]":
        """Where Ray ran and how long it took to start and stop; the backend choice."""
        if self._session is None:
            return []
        c = self._session.cluster
        from ..config.ray_env import ray_notices

        lines = [
            f"Ray: {'embedded on 127.0.0.1' if c.owned else c.address}; start {c.startup_s:.1f}s"
            + (f", stop {c.shutdown_s:.1f}s" if c.shutdown_s else "")
        ]
        lines += ray_notices(os.environ, self.settings)
        if self._session.backend_choice:
            lines.append(f"backend: {self._session.backend_choice[1]}")
        fallback = self._session.backend_fallback
        if fallback is not None and fallback.get("backend", "mxnet") != "mxnet":
            lines.append(
                f"BytePS never ran: auto chose {fallback['backend']} (on node {fallback['node']}: {fallback['reason']})"
            )
        elif fallback is not None:
            lines.append(
                f"BytePS never ran: auto fell back to mxnet on a cluster with GPUs (on node {fallback['node']}: "
                f"{fallback['reason']}); set --bpsperf-backend=mxnet to choose this, or make byteps.mxnet "
                "import on the GPU nodes"
            )
        return lines


def report_header(s: "Settings", profile: "Profile | None", baselines: str, *, updating: bool) -> "list[str]":
    """The report header of a session that runs perf tests (or shows its settings): the plugin's version
    and the ``profile`` expected (:meth:`~.baseline_gate.BaselineGate.expected_profile`), what the stored
    ``baselines`` hold for it, where Ray runs, the gate's settings (and whether it is ``updating``)."""
    from .. import __version__
    from ..config.settings import OPTIONS_BY_NAME, format_value

    if profile is None:
        what = "profile of the nodes that host roles (known after the first run)"
    else:
        what = f"profile {profile.id} " + (f"(from {s.origins.get('profile')})" if s.profile else "(this machine)")
    ray = (
        f"existing cluster at {s.ray_address}" if s.ray_address else "embedded on 127.0.0.1 (started by the first run)"
    )
    rules = [
        f"{name} {format_value(OPTIONS_BY_NAME[name], getattr(s, name))}"
        for name in ("tolerance", "confidence", "strict")
    ]
    if s.base:
        rules.append(f"base {s.base}")
    if s.head:
        rules.append(f"head {s.head}")
    if updating:
        rules.append("recording baselines (--bpsperf-update-baselines)")
    return [
        f"bpsperf: {__version__}, {what}",
        f"bpsperf baselines: {baselines}",
        f"bpsperf Ray: {ray}",
        f"bpsperf gate: {', '.join(rules)}",
    ]


def spec_of(
    item: pytest.Item,
    settings_plugin: "SettingsPlugin",
    base_log_dir: "Path | str",
    trick: "Trick | None" = None,
    **overrides: object,
) -> RunSpec:
    """The spec of a run of perf item ``item``: the one builder, for the ``bpsperf_train`` fixture (its
    ``trick`` and ``overrides``) and for the checks made before anything runs.

    The trick and repeat come from the item's parametrization, the settings from
    :meth:`SettingsPlugin.settings_for` with ``overrides`` (``bpsperf_train(**settings)``) on top.
    """
    import os

    from ..runs.spec import job_dir_name

    case = settings_plugin.case_of(item)
    if trick is None:
        trick = settings_plugin.registry.get(case.trick if case is not None else "default")
    return RunSpec(
        nodeid=item.nodeid,
        test=item.nodeid.split("[")[0],
        trick=trick,
        repeat=case.repeat if case is not None else 0,
        settings=settings_plugin.settings_for(item, **overrides),
        log_dir=os.path.join(str(base_log_dir), job_dir_name(item.nodeid)),
    )
