"""Settings and tricks in pytest: options, ini keys, markers, parametrization over tricks."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass

import pytest

from .. import backends
from ..config.preflight import WorkloadSpecError, check_workload
from ..config.ray_env import ray_job_source
from ..config.settings import (
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
from ..config.tricks import REFERENCE_TRICK, TrickError, TrickRegistry, parse_definition, runtime_problems

PERF_MARKER = "perf"
SETTINGS_MARKER = "bpsperf"
TRICKS_MARKER = "bpsperf_tricks"
TRICK_DEFS_INI = "bpsperf_define_tricks"


@dataclass(frozen=True)
class ReportOption:
    """A command-line option naming a file (or, with ``directory``, a directory) the session writes."""

    name: str  # "json" is --bpsperf-json
    help: str
    directory: bool = False

    @property
    def flag(self) -> str:
        """The option as typed: ``--bpsperf-json``."""
        return "--bpsperf-" + self.name.replace("_", "-")

    @property
    def dest(self) -> str:
        """The option's name for ``config.getoption``: ``bpsperf_json``."""
        return "bpsperf_" + self.name

    @property
    def metavar(self) -> str:
        return "DIR" if self.directory else "PATH"


#: Every report the session writes at its end: the options, the configure-time check that each
#: path can be written (:mod:`.guard`) and the notice of what pytest-xdist does not write.
REPORT_OPTIONS: "tuple[ReportOption, ...]" = (
    ReportOption("json", "write every perf result as JSON to PATH"),
    ReportOption("markdown", "write the trick matrix and verdicts as Markdown (for a PR comment) to PATH"),
    ReportOption("benchmark_json", "write results in pytest-benchmark's JSON format (per-step times as rounds), "
                                   "readable by 'pytest-benchmark compare'"),
    ReportOption("bmf", "write img/s per job in Bencher Metric Format (bencher run --adapter json)"),
    ReportOption("github_benchmark", "write img/s per job for github-action-benchmark (tool: customBiggerIsBetter)"),
    ReportOption("plots", "write PNG pictures (per-step img/s, trick matrix, compute/sync, history) to DIR "
                          "(default: bpsperf-img/ next to --bpsperf-markdown, when given)", directory=True),
    ReportOption("history", "save this session's results in the history under DIR (one file per session) and "
                            "draw each job's trend with its change points", directory=True),
)


def add_options(parser: pytest.Parser) -> None:
    """Every setting as ``--bpsperf-NAME`` and ini key ``bpsperf_NAME``, plus the command-line-only flags."""
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
    for report in REPORT_OPTIONS:
        group.addoption(report.flag, dest=report.dest, metavar=report.metavar, default=None, help=report.help)
    group.addoption("--bpsperf-update-baselines", action="store_true", default=False,
                    help="record baselines for this hardware profile from what runs (entries of tests that do "
                         "not run are kept)")
    group.addoption("--bpsperf-force-update", action="store_true", default=False,
                    help="with --bpsperf-update-baselines: also record entries whose spread exceeds max_spread")
    group.addoption("--bpsperf-ps-verbose", action="store_true", default=False,
                    help="PS_VERBOSE=1 for every role (ps-lite connection logs)")
    group.addoption("--bpsperf-list-tricks", action="store_true", default=False,
                    help="show the known tricks and exit")


def add_markers(config: pytest.Config) -> None:
    """Declare the markers (``-m perf`` selects perf tests)."""
    config.addinivalue_line("markers", f"{PERF_MARKER}: a distributed-training performance test (select with -m perf)")
    config.addinivalue_line(
        "markers",
        f"{SETTINGS_MARKER}(**settings): bpsperf settings for this test, e.g. steps=20, batch_size=8, "
        "tolerance='10%'; they take precedence over command line, environment and ini",
    )
    config.addinivalue_line(
        "markers", f"{TRICKS_MARKER}(*names): run the test once per trick (e.g. '{REFERENCE_TRICK}', 'omp-passive')"
    )


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


@dataclass(frozen=True)
class TrickCase:
    """Parameter of a perf test: which trick, which repeat, its place in the marker."""

    trick: str
    repeat: int
    index: int


class SettingsPlugin:
    """Session settings, the trick registry, settings per test, parametrization and run order."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.hardware = Hardware.detect()
        #: what ``backend=auto`` resolved to, once known (before collection): its workload sizes are the defaults
        self.auto_backend: "str | None" = None
        # inside a Ray job (ray job submit), ray_address defaults to the job's cluster
        self.sources = [_cli_source(config), env_source(os.environ), _ini_source(config), *ray_job_source(os.environ)]
        self.settings = self._resolve(self.sources)
        self._overridden: "set[str]" = set()  # settings whose override by a test was already told
        self.registry = self._build_registry()
        self._check_runtime({role: {var: value} for role, var, value in self.settings.role_env or ()},
                            f"setting 'role_env' from {self.settings.origins.get('role_env')}")
        # Names from the command line, environment or ini are known now: a typo is a
        # usage error here rather than a collection error in every perf module.
        try:
            for name in self.settings.tricks or ():
                where = self.settings.origins["tricks"]
                self._check_runtime(dict(self.registry.get(name, where).env), f"trick {name!r} (from {where})")
        except TrickError as exc:
            raise pytest.UsageError(f"bpsperf: {exc}") from None

    def _defaults_for(self, backend: str, device: str):
        """Workload sizes of ``backend`` on ``device``; ``auto`` as resolved (a fallback trains on CPUs)."""
        return backends.workload_defaults(self.auto_backend if backend == "auto" and self.auto_backend else backend,
                                          device)

    def use_hardware(self, hardware: Hardware) -> None:
        """The settings of tests resolved from now on follow ``hardware`` (an existing cluster's nodes)."""
        self.hardware = hardware

    def resolved_auto(self, backend: str) -> None:
        """``auto`` is ``backend`` for this session: the session's settings follow its workload defaults."""
        self.auto_backend = backend
        self.settings = self._resolve(self.sources)

    def _resolve(self, sources: "list[Source]") -> Settings:
        try:
            settings = resolve(sources, self.hardware, self._defaults_for)
        except SettingsError as exc:
            raise pytest.UsageError(f"bpsperf: {exc}") from None
        if settings.backend != "auto" and settings.backend not in backends.names():
            raise pytest.UsageError(
                f"bpsperf: invalid value {settings.backend!r} for setting 'backend' from "
                f"{settings.origins['backend']}: expected auto or a registered backend "
                f"({', '.join(backends.names())})"
            )
        if settings.normalize == "single" and not settings.scaling:
            raise pytest.UsageError(
                f"bpsperf: normalize=single (from {settings.origins.get('normalize')}) judges img/s relative to "
                f"the single-process run that scaling measures, but scaling is off (from "
                f"{settings.origins.get('scaling')}); turn scaling on or normalize off"
            )
        if not settings.ray_address:
            self._check_machine(settings)
        # What the workers will train is checked here, before Ray and the roles: a bad
        # model name, a missing .rec or an entry point that does not import would
        # otherwise fail on a node, minutes later.
        try:
            settings = check_workload(settings, search=(str(self.config.rootpath),))
            backends.check_settings(settings, gpus=self.hardware.gpus)  # what the backend cannot run
        except (WorkloadSpecError, backends.PlanError) as exc:
            raise pytest.UsageError(f"bpsperf: {exc}") from None
        return settings

    #: On the embedded Ray every role is a process on this machine; beyond this many per
    #: core they only measure the scheduler of the operating system.
    MAX_PROCESSES_PER_CORE = 8

    def _check_machine(self, settings: Settings) -> None:
        """Workers and servers against the embedded cluster (this machine's cores)."""
        processes = settings.workers + settings.server_nodes * settings.servers_per_node + 1
        limit = self.MAX_PROCESSES_PER_CORE * self.hardware.cores
        if processes > limit:
            o = settings.origins
            raise pytest.UsageError(
                f"bpsperf: {settings.workers} worker(s) (from {o.get('workers')}) and {settings.server_nodes} x "
                f"{settings.servers_per_node} server(s) (from {o.get('server_nodes')}) make {processes} role "
                f"processes on this machine's {self.hardware.cores} core(s) (embedded Ray); expected at most "
                f"{limit}, or a cluster with --bpsperf-ray-address")

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

    def settings_for(self, item: pytest.Item, **call_overrides: object) -> Settings:
        """Settings of one test: fixture-call and marker values over the session's sources."""
        sources = list(self.sources)
        source = _marker_source(item.nodeid, item.get_closest_marker(SETTINGS_MARKER))
        if source is not None:
            sources.insert(0, source)
        if call_overrides:
            sources.insert(0, Source("marker", f"bpsperf_train(...) in {item.nodeid}", call_overrides))
        settings = self._resolve(sources)
        self._tell_overrides(settings)
        return settings

    def _tell_overrides(self, settings: Settings) -> None:
        """Say (once per setting) when a test's marker or arguments win over the command line or environment."""
        for source in self.sources:
            if source.kind not in ("cli", "env"):
                continue
            for name, raw in source.values.items():
                origin = settings.origins.get(name, "")
                if name in self._overridden or origin == source.describe(name) or origin.startswith(
                        ("command line", "environment")):
                    continue
                self._overridden.add(name)
                warnings.warn(pytest.PytestWarning(
                    f"bpsperf: {source.describe(name)}={raw} is overridden by {origin} "
                    f"(value {getattr(settings, name)!r}); a test's own marker or arguments win"))

    def _check_runtime(self, env: dict, where: str) -> None:
        """On the embedded Ray (roles run here): variables that would break the roles' runtime are errors."""
        if self.settings.ray_address:
            return  # the files are on the cluster's nodes, not here
        problems = runtime_problems(env)
        if problems:
            raise pytest.UsageError(
                f"bpsperf: {where} would break the roles' runtime: {'; '.join(problems)} (the loader only warns "
                "and the run would measure something else); expected paths of existing shared objects")

    def tricks_for(self, item_name: str, marker: "pytest.Mark | None", settings: Settings) -> "list[str]":
        """Trick names for a test: --bpsperf-tricks/env override > marker > ini > the reference trick."""
        origin = settings.origins.get("tricks", "default")
        if settings.tricks is not None and not origin.startswith("ini"):
            names, where = list(settings.tricks), origin
        elif marker is not None and marker.args:
            names, where = [str(a) for a in marker.args], f"@pytest.mark.{TRICKS_MARKER} on {item_name}"
        elif settings.tricks is not None:
            names, where = list(settings.tricks), origin
        else:
            names, where = [REFERENCE_TRICK], "default"
        try:
            for name in names:
                self._check_runtime(dict(self.registry.get(name, where).env), f"trick {name!r} (from {where})")
        except TrickError as exc:
            raise pytest.UsageError(f"bpsperf: {exc}") from None
        if len(set(names)) != len(names):
            raise pytest.UsageError(f"bpsperf: trick list {names} from {where} names a trick twice")
        return names

    @staticmethod
    def case_of(item: pytest.Item) -> "TrickCase | None":
        """The trick case a perf test item runs, or None for other items."""
        callspec = getattr(item, "callspec", None)
        return callspec.params.get("bpsperf_trick") if callspec else None

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "bpsperf_trick" not in metafunc.fixturenames:
            return
        definition = metafunc.definition
        settings = self.settings_for(definition)
        names = self.tricks_for(definition.nodeid, definition.get_closest_marker(TRICKS_MARKER), settings)
        cases, ids = [], []
        for repeat in range(settings.repeats):
            for index, trick in enumerate(names):
                cases.append(TrickCase(trick, repeat, index))
                ids.append(trick if settings.repeats == 1 else f"{trick}-r{repeat + 1}")
        metafunc.parametrize("bpsperf_trick", cases, ids=ids, indirect=True)

    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config, items: list) -> None:
        """Interleave the runs of different tricks (A B C A B C), so drift hits all alike."""
        out: list = []
        block: list = []
        block_key = None
        for item in items + [None]:
            case = self.case_of(item) if item is not None else None
            key = (item.module.__name__ if hasattr(item, "module") else "", item.originalname) if case else None
            if block and key != block_key:
                block.sort(key=lambda it: (self.case_of(it).repeat, self.case_of(it).index))
                out.extend(block)
                block = []
            if case is not None:
                block.append(item)
                block_key = key
            elif item is not None:
                out.append(item)
        items[:] = out
