"""pytest glue: options, markers, parametrization over tricks, fixtures, reports.

Everything that does work lives in plain modules (settings, tricks, plan,
launcher, measurement, stats, baselines, report); this module wires them into
pytest's hooks.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator

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
        group.addoption(flag(opt.name), dest=ini_key(opt.name), default=None, metavar="VALUE", help=help_text)
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


def _marker_source(item_name: str, marker: "pytest.Mark | None", **extra: Any) -> "Source | None":
    values = dict(marker.kwargs) if marker is not None else {}
    if marker is not None and marker.args:
        raise pytest.UsageError(
            f"@pytest.mark.{SETTINGS_MARKER} on {item_name} takes keyword arguments only "
            f"(e.g. steps=20), not {marker.args!r}"
        )
    values.update(extra)
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
        for path in self.written:
            terminalreporter.write_line(f"bpsperf: wrote {path}")

    def session_info(self) -> dict:
        """Machine-readable facts of the session (run id, Ray start/stop seconds)."""
        if self._session is None:
            return {}
        c = self._session.cluster
        return {
            "run_id": self._session.run_id,
            "ray": {"embedded": c.owned, "address": c.address, "startup_s": c.startup_s, "shutdown_s": c.shutdown_s},
            "backend_choice": self._session.backend_choice[1] if self._session.backend_choice else None,
        }

    def _header_lines(self) -> list:
        lines = []
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
        md_path = self.config.getoption("bpsperf_markdown")
        if md_path:
            report.write_text(md_path, report.markdown_document(self.results, self._header_lines()))
            self.written.append(md_path)


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
    # Ray goes down before the summary so its shutdown time can be reported.
    plugin.close()
    plugin.write_reports()


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
    name = metafunc.definition.nodeid
    settings_marker = metafunc.definition.get_closest_marker(SETTINGS_MARKER)
    source = _marker_source(name, settings_marker)
    sources = ([source] if source else []) + plugin.sources
    try:
        settings = resolve(sources, plugin.hardware)
    except SettingsError as exc:
        raise pytest.UsageError(f"bpsperf: {exc}") from None
    names = plugin.tricks_for(name, metafunc.definition.get_closest_marker(TRICKS_MARKER), settings)
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
        try:
            output = request.config.hook.pytest_bpsperf_run_job(config=request.config, request=job)
        except RoleFailed as exc:
            plugin.failures.append((request.node.nodeid, str(exc)))
            pytest.fail(str(exc), pytrace=False)
        backend = output.extra.get("backend", settings.backend) if output.extra else settings.backend
        return _record(plugin, job, output, backend)

    yield train


def _record(plugin: BpsPerfPlugin, job, output, backend: str):
    from .measurement import MeasurementError, measure
    from .session import RunResult

    try:
        measurement = measure(output)
    except MeasurementError as exc:
        plugin.failures.append((job.nodeid, str(exc)))
        pytest.fail(f"bpsperf: {job.nodeid}: cannot measure: {exc}", pytrace=False)
    result = RunResult(request=job, backend=backend, output=output, measurement=measurement)
    plugin.results.append(result)
    return result
