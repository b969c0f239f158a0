"""pytest glue: options, markers, parametrization over tricks, fixtures, reports.

Everything that does work lives in plain modules (settings, tricks, plan,
launcher, measurement, stats, baselines, report); this module wires them into
pytest's hooks.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from . import hooks, report
from .settings import (
    OPTIONS,
    Hardware,
    Settings,
    SettingsError,
    Source,
    env_source,
    env_var,
    flag,
    ini_key,
    resolve,
)
from .tricks import TrickError, TrickRegistry, parse_definition

PERF_MARKER = "perf"
SETTINGS_MARKER = "bpsperf"
TRICKS_MARKER = "bpsperf_tricks"
TRICK_DEFS_INI = "bpsperf_define_tricks"

plugin_key = pytest.StashKey["BpsPerfPlugin"]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hooks)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("bpsperf", "distributed-training performance tests (pytest-bpsperf)")
    for opt in OPTIONS:
        help_text = f"{opt.help}; {opt.accepted} [env {env_var(opt.name)}, ini {ini_key(opt.name)}]"
        help_text = help_text.replace("%", "%%")  # argparse %-formats help ('10%' in tolerance)
        # on/off settings also work as bare flags: --bpsperf-strict means on
        extra = {"nargs": "?", "const": "on"} if opt.accepted == "on or off" else {}
        group.addoption(flag(opt.name), dest=ini_key(opt.name), default=None, metavar="VALUE", help=help_text,
                        **extra)
        parser.addini(ini_key(opt.name), help=f"bpsperf: {opt.help} ({opt.accepted})", default="")
    parser.addini(
        TRICK_DEFS_INI,
        type="linelist",
        default=[],
        help="bpsperf: user-defined tricks, one per line: 'NAME: ROLES:VAR=VALUE ... [extra_servers=N] [-- DESCRIPTION]'",
    )
    group.addoption("--bpsperf-json", metavar="PATH", default=None, help="write every perf result as JSON to PATH")
    group.addoption("--bpsperf-markdown", metavar="PATH", default=None,
                    help="write the trick matrix and verdicts as Markdown (for a PR comment) to PATH")
    group.addoption("--bpsperf-update-baselines", action="store_true", default=False,
                    help="record baselines for this hardware profile from what runs (entries of tests that do "
                         "not run are kept)")
    group.addoption("--bpsperf-force-update", action="store_true", default=False,
                    help="with --bpsperf-update-baselines: also record entries whose spread exceeds max_spread")
    group.addoption("--bpsperf-benchmark-json", metavar="PATH", default=None,
                    help="write results in pytest-benchmark's JSON format (per-step times as rounds), "
                         "readable by 'pytest-benchmark compare'")
    group.addoption("--bpsperf-ps-verbose", action="store_true", default=False,
                    help="PS_VERBOSE=1 for every role (ps-lite connection logs)")
    group.addoption("--bpsperf-list-tricks", action="store_true", default=False,
                    help="show the known tricks and exit")


def _cli_source(config: pytest.Config) -> Source:
    values = {o.name: config.getoption(ini_key(o.name)) for o in OPTIONS}
    return Source("cli", "command line", {k: v for k, v in values.items() if v is not None})


def _ini_source(config: pytest.Config) -> Source:
    values = {}
    for opt in OPTIONS:
        raw = config.getini(ini_key(opt.name))
        if isinstance(raw, str) and raw.strip() != "":
            values[opt.name] = raw
    where = str(config.inipath) if config.inipath else "the ini file"
    return Source("ini", where, values)


def _marker_source(item_name: str, marker: "pytest.Mark | None") -> "Source | None":
    values = dict(marker.kwargs) if marker is not None else {}
    if marker is not None and marker.args:
        raise pytest.UsageError(
            f"@pytest.mark.{SETTINGS_MARKER} on {item_name} takes keyword arguments only "
            f"(e.g. steps=20), not {marker.args!r}"
        )
    if not values:
        return None
    return Source("marker", f"@pytest.mark.{SETTINGS_MARKER}(...) on {item_name}", values)


class BpsPerfPlugin:
    """Per-session state: resolved base settings, trick registry, the perf session."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.hardware = Hardware.detect()
        self.sources = [_cli_source(config), env_source(os.environ), _ini_source(config)]
        try:
            self.settings = resolve(self.sources, self.hardware)
        except SettingsError as exc:
            raise pytest.UsageError(f"bpsperf: {exc}") from None
        self.registry = self._build_registry()
        # Names from the command line, environment or ini are known now: a typo is a
        # usage error here rather than a collection error in every perf module.
        try:
            for name in self.settings.tricks or ():
                self.registry.get(name, self.settings.origins["tricks"])
        except TrickError as exc:
            raise pytest.UsageError(f"bpsperf: {exc}") from None
        self._session = None
        self.results: list = []
        self.failures: list = []
        self.messages: list = []
        self.written: list = []
        self.verdicts: list = []
        self.baseline_lines: list = []
        self._profile = None
        self.update_failed = False

    def _build_registry(self) -> TrickRegistry:
        registry = TrickRegistry()
        where = f"ini key {TRICK_DEFS_INI} in {self.config.inipath or 'the ini file'}"
        try:
            for line in self.config.getini(TRICK_DEFS_INI):
                if line.strip():
                    registry.add(parse_definition(line, where), where)
            for impl_result in self.config.hook.pytest_bpsperf_tricks(config=self.config):
                for name, trick in (impl_result or {}).items():
                    if getattr(trick, "name", None) != name:
                        raise TrickError(
                            f"pytest_bpsperf_tricks returned {name!r} -> {trick!r}; expected a Trick named {name!r}"
                        )
                    registry.add(trick, "hook pytest_bpsperf_tricks")
        except TrickError as exc:
            raise pytest.UsageError(f"bpsperf: {exc}") from None
        return registry

    # -- settings per test ---------------------------------------------------------
    def settings_for(self, item: pytest.Item, **call_overrides: Any) -> Settings:
        """Settings of one test: marker and fixture-call values over the session's sources."""
        marker = item.get_closest_marker(SETTINGS_MARKER)
        source = _marker_source(item.nodeid, marker)
        sources = list(self.sources)
        if source is not None:
            sources.insert(0, source)
        if call_overrides:
            sources.insert(0, Source("marker", f"bpsperf_train(...) in {item.nodeid}", call_overrides))
        try:
            return resolve(sources, self.hardware)
        except SettingsError as exc:
            raise pytest.UsageError(f"bpsperf: {exc}") from None

    def tricks_for(self, item_name: str, marker: "pytest.Mark | None", settings: Settings) -> list:
        """Trick names for a test: --bpsperf-tricks/env override > marker > ini > baseline."""
        origin = settings.origins.get("tricks", "default")
        if settings.tricks is not None and not origin.startswith("ini"):
            names, where = list(settings.tricks), origin
        elif marker is not None and marker.args:
            names, where = [str(a) for a in marker.args], f"@pytest.mark.{TRICKS_MARKER} on {item_name}"
        elif settings.tricks is not None:
            names, where = list(settings.tricks), origin
        else:
            names, where = ["baseline"], "default"
        try:
            for name in names:
                self.registry.get(name, where)
        except TrickError as exc:
            raise pytest.UsageError(f"bpsperf: {exc}") from None
        if len(set(names)) != len(names):
            raise pytest.UsageError(f"bpsperf: trick list {names} from {where} names a trick twice")
        return names

    # -- baselines and verdicts ------------------------------------------------------
    def profile(self):
        """This run's hardware profile (cluster facts included once Ray is up)."""
        if self._profile is None:
            from .profile import collect_facts, make_profile

            cluster = None
            if self._session is not None and self._session.cluster.started:
                cluster = {"nodes": [{"gpus": n.gpus, "cpus": n.cpus} for n in self._session.nodes()]}
            facts = collect_facts(cluster=cluster)
            self.config.hook.pytest_bpsperf_profile_facts(config=self.config, facts=facts)
            try:
                self._profile = make_profile(facts, override=self.settings.profile)
            except ValueError as exc:
                raise pytest.UsageError(f"bpsperf: {exc} (from {self.settings.origins.get('profile')})") from None
        return self._profile

    def store(self):
        """The baseline store (--bpsperf-baselines-dir, else baselines/ under the rootdir)."""
        from .baselines import BaselineStore

        directory = self.settings.baselines_dir or str(Path(self.config.rootpath) / "baselines")
        return BaselineStore(directory)

    def update_command(self, test_id: str) -> str:
        """The command that records a baseline for ``test_id``."""
        repeats = max(3, self.settings.repeats)
        return f"pytest -m perf --bpsperf-update-baselines --bpsperf-repeats {repeats} {test_id}"

    def baseline_key(self, result) -> str:
        from .baselines import entry_key

        settings = result.request.settings
        return entry_key(result.request.test, result.request.trick.name, settings.topology(),
                         {**settings.workload(), "backend": result.backend})

    def check(self, item: pytest.Item, result, rerun: "Callable[[], Any] | None" = None) -> None:
        """``RunResult.assert_within_baseline``: decide, record, and fail/skip as the verdict says.

        A regression is confirmed before it fails the test: up to ``confirm``
        more runs of the same job, decided on all runs together, so that one
        unlucky run on a noisy machine does not fail unchanged code.
        """
        from .baselines import BaselineError, current_commit
        from .verdict import IMPROVEMENT, NO_BASELINE, REGRESSION, bisect_hint, decide

        settings = result.request.settings
        key = self.baseline_key(result)

        def runs_so_far() -> list:  # the key names the test, trick, topology and workload
            return [r for r in self.results if self.baseline_key(r) == key]

        runs = runs_so_far()
        if result.request.repeat + 1 < settings.repeats:
            item.user_properties.append(("bpsperf_verdict", f"pending: repeat {result.request.repeat + 1} of "
                                                            f"{settings.repeats}"))
            return
        profile = self.profile()
        problem = None
        try:
            baseline = self.store().get(profile.id, key)
        except BaselineError as exc:
            problem = str(exc)
        if problem is not None:
            pytest.fail(f"bpsperf: {problem}", pytrace=False)
        def verdict_of(runs: list):
            return decide(
                nodeid=item.nodeid, test=result.request.test, trick=result.request.trick.name,
                profile_id=profile.id, key=key, samples=[r.img_per_sec for r in runs], baseline=baseline,
                tolerance=settings.tolerance,
            )

        update = self.config.getoption("bpsperf_update_baselines")
        verdict = verdict_of(runs)
        confirmations = 0
        while verdict.status == REGRESSION and rerun is not None and not update and confirmations < settings.confirm:
            confirmations += 1
            self.say(f"{item.nodeid}: {verdict.figures()}; confirming with run {confirmations} of {settings.confirm}")
            rerun()
            runs = runs_so_far()
            verdict = verdict_of(runs)
        for r in runs:
            r.verdict = verdict
        self.verdicts.append(verdict)
        for name, value in verdict.as_dict().items():
            if name not in ("method", "samples", "key"):
                item.user_properties.append((f"bpsperf_{name}", value))
        item.user_properties.append(("bpsperf_confirmation_runs", confirmations))
        text = verdict.message(
            update_command=self.update_command(result.request.test),
            bisect=bisect_hint(verdict.baseline.get("commit"), current_commit(str(self.config.rootpath)),
                               ["-m", "perf", "--bpsperf-repeats", str(max(3, settings.repeats)),
                                "--bpsperf-tricks", result.request.trick.name, result.request.test]),
        )
        if update:
            return  # recording: the session's end writes the entry; nothing fails here
        if verdict.status == REGRESSION:
            if confirmations:
                text += f"\n(confirmed: the regression held over {confirmations} extra run(s) of this job)"
            pytest.fail(text, pytrace=False)
        if verdict.status == NO_BASELINE:
            if settings.strict:
                pytest.fail(text + " (--bpsperf-strict: a missing baseline fails)", pytrace=False)
            pytest.skip(text)
        if verdict.status == IMPROVEMENT:
            self.baseline_lines.append(text.splitlines()[0])

    def update_baselines(self) -> None:
        """--bpsperf-update-baselines: write an entry per (test, trick, workload) that ran."""
        from .baselines import BaselineError, check_baseline_quality, current_commit, make_entry

        if not self.config.getoption("bpsperf_update_baselines") or not self.results:
            return
        force = self.config.getoption("bpsperf_force_update")
        groups: dict = {}
        for r in self.results:
            groups.setdefault(self.baseline_key(r), []).append(r)
        commit = current_commit(str(self.config.rootpath))
        entries, refused = {}, []
        for key, runs in groups.items():
            settings = runs[0].request.settings
            samples = [r.img_per_sec for r in runs]
            problem = check_baseline_quality(samples, max_rel_spread=settings.max_spread)
            if problem and not force:
                refused.append(f"{runs[0].request.test} [{runs[0].request.trick.name}]: {problem} "
                               "(--bpsperf-force-update records it anyway)")
                continue
            entries[key] = make_entry(
                test=runs[0].request.test, trick=runs[0].request.trick.name, topology=settings.topology(),
                workload={**settings.workload(), "backend": runs[0].backend}, samples=samples,
                tolerance=settings.tolerance, commit=commit,
                extra={"steps_per_run": settings.steps,
                       "median_step_s": [r.measurement.step_s for r in runs]},
            )
        profile = self.profile()
        if entries:
            try:
                path = self.store().update(profile.id, profile.as_dict(), entries)
            except BaselineError as exc:
                self.baseline_lines.append(f"baselines NOT written: {exc}")
                self.update_failed = True
                return
            self.baseline_lines.append(f"recorded {len(entries)} baseline entr{'y' if len(entries) == 1 else 'ies'} "
                                       f"in {path}")
        for line in refused:
            self.baseline_lines.append("refused: " + line)

    # -- the perf session (Ray) ---------------------------------------------------
    @property
    def session(self):
        """The :class:`~pytest_bpsperf.session.PerfSession`, created on first use."""
        if self._session is None:
            from .session import PerfSession

            self._session = PerfSession(
                ray_address=self.settings.ray_address,
                base_log_dir=str(self.base_log_dir()),
                say=self.say,
                verbose_ps=self.config.getoption("bpsperf_ps_verbose"),
            )
        return self._session

    def base_log_dir(self) -> Path:
        """Where role logs go: --bpsperf-log-dir, else pytest's basetemp/bpsperf."""
        if self.settings.log_dir:
            path = Path(self.settings.log_dir)
        else:
            path = self.config._tmp_path_factory.getbasetemp() / "bpsperf"  # type: ignore[attr-defined]
        path.mkdir(parents=True, exist_ok=True)
        return path

    def say(self, message: str) -> None:
        """A progress line, shown with -v (and kept for the summary's header)."""
        self.messages.append(message)
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None and self.config.option.verbose > 0:
            tr.write_line(f"bpsperf: {message}")

    def close(self) -> None:
        """Tear down Ray (if this session started it)."""
        if self._session is not None:
            self._session.close()

    # -- hooks ------------------------------------------------------------------
    @pytest.hookimpl(trylast=True)
    def pytest_bpsperf_run_job(self, config: pytest.Config, request):
        return self.session.run_job(request)

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config) -> None:
        if not self.results and not self.failures:
            return
        terminalreporter.section("bpsperf")
        for line in self._header_lines():
            terminalreporter.write_line(line)
        for result in self.results:
            terminalreporter.write_line(report.result_line(result))
        for nodeid, reason in self.failures:
            terminalreporter.write_line(f"{nodeid}: FAILED to measure: {reason.splitlines()[0]}")
        for table in report.matrix_tables(self.results):
            terminalreporter.write_line("")
            for line in report.format_matrix_text(table):
                terminalreporter.write_line(line)
        for verdict in self.verdicts:
            terminalreporter.write_line(report.verdict_line(verdict))
        for line in self.baseline_lines:
            terminalreporter.write_line(f"bpsperf: {line}")
        for path in self.written:
            terminalreporter.write_line(f"bpsperf: wrote {path}")
        if os.environ.get("GITHUB_ACTIONS") == "true":
            for line in report.github_annotations(self.verdicts):
                terminalreporter.write_line(line)

    def session_info(self) -> dict:
        """Machine-readable facts of the session (run id, Ray start/stop seconds)."""
        if self._session is None:
            return {}
        c = self._session.cluster
        return {
            "run_id": self._session.run_id,
            "ray": {"embedded": c.owned, "address": c.address, "startup_s": c.startup_s, "shutdown_s": c.shutdown_s},
            "backend_choice": self._session.backend_choice[1] if self._session.backend_choice else None,
            "nodes": [{"name": n.name, "node_id": n.node_id, "ip": n.ip, "cpus": n.cpus, "gpus": n.gpus}
                      for n in self._session.known_nodes()],
        }

    def _header_lines(self) -> list:
        lines = []
        if self._profile is not None:
            p = self._profile
            facts = ", ".join(f"{k}={v}" for k, v in sorted(p.facts.items()) if k != "cluster")
            lines.append(f"profile: {p.id} ({facts})")
        if self._session is not None:
            c = self._session.cluster
            lines.append(
                f"Ray: {'embedded on 127.0.0.1' if c.owned else c.address}; start {c.startup_s:.1f}s"
                + (f", stop {c.shutdown_s:.1f}s" if c.shutdown_s else "")
            )
            if self._session.backend_choice:
                lines.append(f"backend: {self._session.backend_choice[1]}")
        return lines

    def write_reports(self) -> None:
        """Write the JSON and Markdown files asked for on the command line."""
        self.written = []
        json_path = self.config.getoption("bpsperf_json")
        if json_path:
            report.write_json(
                json_path,
                report.json_document(self.results, self.failures, self._header_lines(), self.session_info()),
            )
            self.written.append(json_path)
        markdown = report.markdown_document(self.results, self._header_lines(), self.verdicts)
        md_path = self.config.getoption("bpsperf_markdown")
        if md_path:
            report.write_text(md_path, markdown)
            self.written.append(md_path)
        bench_path = self.config.getoption("bpsperf_benchmark_json")
        if bench_path:
            report.write_json(bench_path, report.benchmark_document(self.results, self._profile))
            self.written.append(bench_path)
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if os.environ.get("GITHUB_ACTIONS") == "true" and summary and self.results:
            with open(summary, "a", encoding="utf-8") as fh:
                fh.write(markdown)


def _plugin(config: pytest.Config) -> BpsPerfPlugin:
    return config.stash[plugin_key]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{PERF_MARKER}: a distributed-training performance test (select with -m perf)")
    config.addinivalue_line(
        "markers",
        f"{SETTINGS_MARKER}(**settings): bpsperf settings for this test, e.g. steps=20, batch_size=8, "
        "tolerance='10%'; they take precedence over command line, environment and ini",
    )
    config.addinivalue_line(
        "markers", f"{TRICKS_MARKER}(*names): run the test once per trick (e.g. 'baseline', 'omp-passive')"
    )
    plugin = BpsPerfPlugin(config)
    config.stash[plugin_key] = plugin
    config.pluginmanager.register(plugin, "bpsperf-session")
    if config.getoption("bpsperf_list_tricks"):
        for name, origin, description in plugin.registry.describe():
            print(f"{name:28s} {origin:24s} {description}")
        pytest.exit("bpsperf: listed tricks", returncode=0)


def pytest_unconfigure(config: pytest.Config) -> None:
    plugin = config.stash.get(plugin_key, None)
    if plugin is None:
        return
    try:
        plugin.close()
    finally:
        config.pluginmanager.unregister(plugin)
        del config.stash[plugin_key]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    plugin = session.config.stash.get(plugin_key, None)
    if plugin is None:
        return
    if plugin.results:
        plugin.profile()  # while Ray is up: the cluster is part of the profile
    # Ray goes down before the summary so its shutdown time can be reported.
    plugin.close()
    if exitstatus == pytest.ExitCode.INTERRUPTED and plugin.config.getoption("bpsperf_update_baselines"):
        plugin.baseline_lines.append("interrupted: no baseline written (an aborted session is not a baseline)")
    else:
        plugin.update_baselines()
    plugin.write_reports()
    if plugin.update_failed:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# -- parametrization over tricks ------------------------------------------------------


class TrickCase:
    """Parameter of a perf test: which trick, which repeat."""

    def __init__(self, trick: str, repeat: int, index: int) -> None:
        self.trick = trick
        self.repeat = repeat
        self.index = index

    def __repr__(self) -> str:
        return f"TrickCase({self.trick!r}, repeat={self.repeat})"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "bpsperf_trick" not in metafunc.fixturenames:
        return
    plugin = _plugin(metafunc.config)
    definition = metafunc.definition
    settings = plugin.settings_for(definition)
    names = plugin.tricks_for(definition.nodeid, definition.get_closest_marker(TRICKS_MARKER), settings)
    cases, ids = [], []
    for repeat in range(settings.repeats):
        for index, trick in enumerate(names):
            cases.append(TrickCase(trick, repeat, index))
            ids.append(trick if settings.repeats == 1 else f"{trick}-r{repeat + 1}")
    metafunc.parametrize("bpsperf_trick", cases, ids=ids, indirect=True)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    """Interleave the runs of different tricks (A B C A B C), so drift hits all alike."""

    def case_of(item) -> "TrickCase | None":
        callspec = getattr(item, "callspec", None)
        return callspec.params.get("bpsperf_trick") if callspec else None

    out, block, block_key = [], [], None
    for item in items + [None]:
        case = case_of(item) if item is not None else None
        key = (item.module.__name__ if hasattr(item, "module") else "", item.originalname) if case else None
        if block and key != block_key:
            block.sort(key=lambda it: (case_of(it).repeat, case_of(it).index))
            out.extend(block)
            block = []
        if case is not None:
            block.append(item)
            block_key = key
        elif item is not None:
            out.append(item)
    items[:] = out


# -- fixtures ---------------------------------------------------------------------------


@pytest.fixture
def bpsperf_trick(request: pytest.FixtureRequest):
    """The trick this perf test runs under (a :class:`~pytest_bpsperf.tricks.Trick`).

    Perf tests are parametrized over tricks by ``@pytest.mark.bpsperf_tricks(...)``
    or ``--bpsperf-tricks``; the test id names the trick.
    """
    case = getattr(request, "param", None)
    plugin = _plugin(request.config)
    if case is None:
        return plugin.registry.get("baseline")
    return plugin.registry.get(case.trick)


@pytest.fixture
def bpsperf_settings(request: pytest.FixtureRequest) -> Settings:
    """The resolved :class:`~pytest_bpsperf.settings.Settings` of this test."""
    return _plugin(request.config).settings_for(request.node)


@pytest.fixture
def bpsperf_train(request: pytest.FixtureRequest, bpsperf_trick) -> Iterator:
    """Run one distributed training job and return its :class:`~pytest_bpsperf.session.RunResult`.

    Call it as ``bpsperf_train(**settings)`` (e.g. ``steps=20``); arguments take
    precedence over markers, command line, environment and ini. The roles are
    started on Ray under this test's trick; the result gives aggregate img/s,
    per-worker img/s, warm-up steps, compute/sync split, bring-up and teardown
    seconds and the role logs.
    """
    from .launcher import RoleFailed
    from .session import JobRequest, job_dir_name

    plugin = _plugin(request.config)
    case = getattr(getattr(request.node, "callspec", None), "params", {}).get("bpsperf_trick")
    repeat = case.repeat if case is not None else 0
    test_id = request.node.nodeid.split("[")[0]

    def train(**overrides: Any):
        settings = plugin.settings_for(request.node, **overrides)
        log_dir = os.path.join(str(plugin.base_log_dir()), job_dir_name(request.node.nodeid))
        job = JobRequest(
            nodeid=request.node.nodeid,
            test=test_id,
            trick=bpsperf_trick,
            repeat=repeat,
            settings=settings,
            log_dir=log_dir,
        )
        failure = None
        try:
            output = request.config.hook.pytest_bpsperf_run_job(config=request.config, request=job)
        except RoleFailed as exc:
            plugin.failures.append((request.node.nodeid, str(exc)))
            failure = str(exc)
        if failure is not None:
            # Outside the except block: the report shows the message once, not as a chain.
            pytest.fail(failure, pytrace=False)
        backend = output.extra.get("backend", settings.backend) if output.extra else settings.backend
        result = _record(plugin, job, output, backend)
        result._assert_hook = lambda r: plugin.check(request.node, r, rerun=lambda: train(**overrides))
        return result

    yield train


def _record(plugin: BpsPerfPlugin, job, output, backend: str):
    from .measurement import MeasurementError, measure
    from .session import RunResult

    failure = None
    try:
        measurement = measure(output)
    except MeasurementError as exc:
        plugin.failures.append((job.nodeid, str(exc)))
        failure = f"bpsperf: {job.nodeid}: cannot measure: {exc}"
    if failure is not None:
        pytest.fail(failure, pytrace=False)
    result = RunResult(request=job, backend=backend, output=output, measurement=measurement)
    plugin.results.append(result)
    return result
