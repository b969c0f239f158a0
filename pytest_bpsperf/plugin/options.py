"""Settings and tricks in pytest: options, ini keys, markers, parametrization over tricks."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Callable

import pytest

from .. import backends
from ..config.ray_env import ray_job_source
from ..config.reports import REPORT_OPTIONS, ReportOption  # noqa: F401 (the report options' one table)
from ..config.settings import (
    OPTION_GROUPS,
    OPTIONS,
    OPTIONS_BY_NAME,
    Hardware,
    Option,
    Settings,
    SettingsError,
    Source,
    default_text,
    env_source,
    env_var,
    flag,
    format_value,
    ini_key,
    no_flag,
    resolve,
    resolve_value,
)
from ..config.tricks import REFERENCE_TRICK, TrickError, TrickRegistry, parse_definition, runtime_problems
from ..config.workload_spec import WorkloadSpecError, check_workload

PERF_MARKER = "perf"
SETTINGS_MARKER = "bpsperf"
TRICKS_MARKER = "bpsperf_tricks"
#: keyword of the tricks marker: tricks that add servers are skipped under a backend without servers
SERVERS_OPTIONAL = "servers_optional"
TRICK_DEFS_INI = "bpsperf_define_tricks"


#: ``--help`` groups of the flags that are no setting (the settings' are settings.OPTION_GROUPS).
REPORTS_GROUP = ("reports", "report files, and what the session shows")


def _help(text: str, default: str) -> str:
    """A flag's help, ending with its default; %-escaped, as argparse %-formats help ('10%')."""
    return f"{text} (default: {default})".replace("%", "%%")


def add_options(parser: pytest.Parser) -> None:
    """Every setting as ``--bpsperf-NAME`` and ini key ``bpsperf_NAME``, plus the command-line-only flags,
    in ``--help`` groups (workload, topology, gate, cluster, reports); each help ends with its default."""
    groups = {
        name: parser.getgroup(f"bpsperf-{name}", f"bpsperf {name}: {title}")
        for name, title, _names in OPTION_GROUPS + (REPORTS_GROUP + ((),),)
    }
    for name, _title, names in OPTION_GROUPS:
        for opt in (OPTIONS_BY_NAME[n] for n in names):
            _add_setting(groups[name], opt)
    for opt in OPTIONS:
        parser.addini(ini_key(opt.name), help=f"bpsperf: {opt.help} ({opt.accepted})", default="")
    parser.addini(
        TRICK_DEFS_INI,
        type="linelist",
        default=[],
        help="bpsperf: user-defined tricks, one per line: "
        "'NAME: ROLES:VAR=VALUE ... [extra_servers=N] [-- DESCRIPTION]'",
    )
    reports = groups[REPORTS_GROUP[0]]
    for report in REPORT_OPTIONS:
        reports.addoption(
            report.flag, dest=report.dest, metavar=report.metavar, default=None, help=_help(report.help, report.default)
        )
    groups["gate"].addoption(
        "--bpsperf-update-baselines",
        action="store_true",
        default=False,
        help=_help(
            "record baselines for this hardware profile from what runs (entries of tests that do not run are kept)",
            "off",
        ),
    )
    groups["gate"].addoption(
        "--bpsperf-force-update",
        action="store_true",
        default=False,
        help=_help("with --bpsperf-update-baselines: also record entries whose spread exceeds max_spread", "off"),
    )
    groups["cluster"].addoption(
        "--bpsperf-ps-verbose",
        action="store_true",
        default=False,
        help=_help("PS_VERBOSE=1 for every role (ps-lite connection logs)", "off"),
    )
    groups["workload"].addoption(
        "--bpsperf-list-tricks", action="store_true", default=False, help=_help("show the known tricks and exit", "off")
    )
    reports.addoption(
        "--bpsperf-show-settings",
        action="store_true",
        default=False,
        help=_help("show every setting of the session with its value and where it came from, and exit", "off"),
    )


def _add_setting(group: "pytest.OptionGroup", opt: Option) -> None:
    where = f"[env {env_var(opt.name)}, ini {ini_key(opt.name)}]"
    if opt.switch:
        # A flag takes no value (pytest's convention): `--bpsperf-strict perf_tests` keeps
        # perf_tests as a path to test. Environment and ini take on/off.
        group.addoption(
            flag(opt.name),
            dest=ini_key(opt.name),
            action="store_const",
            const=True,
            default=None,
            help=_help(f"{opt.help} {where}", default_text(opt)),
        )
        group.addoption(
            no_flag(opt.name),
            dest=ini_key(opt.name),
            action="store_const",
            const=False,
            default=None,
            help=_help(f"turn {opt.name} off (see {flag(opt.name)})", default_text(opt)),
        )
    else:
        group.addoption(
            flag(opt.name),
            dest=ini_key(opt.name),
            default=None,
            metavar="VALUE",
            help=_help(f"{opt.help}; {opt.accepted} {where}", default_text(opt)),
        )


def add_markers(config: pytest.Config) -> None:
    """Declare the markers (``-m perf`` selects perf tests)."""
    config.addinivalue_line("markers", f"{PERF_MARKER}: a distributed-training performance test (select with -m perf)")
    config.addinivalue_line(
        "markers",
        f"{SETTINGS_MARKER}(**settings): bpsperf settings for this test, e.g. steps=20, batch_size=8, "
        "tolerance='10%'; they take precedence over command line, environment and ini",
    )
    config.addinivalue_line(
        "markers",
        f"{TRICKS_MARKER}(*names, {SERVERS_OPTIONAL}=False): run the test once per trick (e.g. "
        f"'{REFERENCE_TRICK}', 'omp-passive'); {SERVERS_OPTIONAL}=True skips, with the reason, the tricks "
        "that add servers where the backend has none (torch)",
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


def trick_names(
    item_name: str, marker: "pytest.Mark | None", setting: "tuple | None", origin: str
) -> "tuple[list[str], str]":
    """Trick names for a test and where they came from: --bpsperf-tricks/env override > marker > ini >
    the reference trick (``setting`` is the ``tricks`` setting, ``origin`` where it came from)."""
    if setting is not None and not origin.startswith("ini"):
        return list(setting), origin
    if marker is not None and marker.args:
        return [str(a) for a in marker.args], f"@pytest.mark.{TRICKS_MARKER} on {item_name}"
    if setting is not None:
        return list(setting), origin
    return [REFERENCE_TRICK], "default"


@dataclass(frozen=True)
class TrickCase:
    """Parameter of a perf test: which trick, which repeat, its place in the marker."""

    trick: str
    repeat: int
    index: int


def uses_runs(item: pytest.Item) -> bool:
    """Whether ``item`` trains: it uses the ``bpsperf_trick`` fixture (``bpsperf_train`` asks for it), so it
    is parametrized over tricks and its runs start roles."""
    return "bpsperf_trick" in getattr(item, "fixturenames", ())


def is_perf_item(item: pytest.Item) -> bool:
    """Whether ``item`` is a perf test: marked ``perf``, or using the plugin's fixtures (``bpsperf_train``,
    ``bpsperf_trick``, ``bpsperf_settings``). Only sessions that select one resolve and check the settings."""
    if item.get_closest_marker(PERF_MARKER) is not None:
        return True
    return uses_runs(item) or "bpsperf_settings" in getattr(item, "fixturenames", ())


class SettingsPlugin:
    """Session settings, the trick registry, settings per test, parametrization and run order.

    Nothing is resolved, detected or imported when the plugin is configured: the session's
    settings are resolved and checked by :meth:`activate`, once perf tests are selected to run
    (or by the first reader of :attr:`settings`, e.g. ``--bpsperf-show-settings``), so that a
    session without perf tests never fails on them.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self._hardware: "Hardware | None" = None
        #: what ``backend=auto`` resolved to, once known (when perf tests are selected): its workload sizes are
        #: the defaults
        self.auto_backend: "str | None" = None
        # inside a Ray job (ray job submit), ray_address defaults to the job's cluster
        self.sources = [_cli_source(config), env_source(os.environ), _ini_source(config), *ray_job_source(os.environ)]
        self._settings: "Settings | None" = None
        self._registry: "TrickRegistry | None" = None
        self._overridden: "set[str]" = set()  # settings whose override by a test was already told
        #: what could not parametrize a perf test, by its function's id: an error only if it is selected
        self._deferred: "dict[str, pytest.UsageError]" = {}
        self._checked: "set[str]" = set()  # perf test functions whose own settings and tricks were checked
        #: whether perf tests were selected and :meth:`activate` ran
        self.active = False
        #: whether :meth:`activate` got through: the session's settings, its hooks, each test's own settings
        self.ready = False
        #: called once by :meth:`activate`, after the session's settings are checked and before each
        #: test's own are (plugin.py connects to an existing cluster there)
        self.on_activate: "list[Callable[[], None]]" = []

    @property
    def hardware(self) -> Hardware:
        """What the defaults depend on: this machine (detected when first needed), or the cluster's nodes."""
        if self._hardware is None:
            self._hardware = Hardware.detect()
        return self._hardware

    @property
    def settings(self) -> Settings:
        """The session's settings (no marker): resolved and checked when first read; a bad value is a
        ``pytest.UsageError`` naming the value and where it came from."""
        if self._settings is None:
            settings = self._resolve(self.sources)
            self._settings = settings
            try:
                self._check_runtime(
                    {role: {var: value} for role, var, value in settings.role_env or ()},
                    f"setting 'role_env' from {settings.origins.get('role_env')}",
                )
                # Names from the command line, environment or ini are known now: a typo is one
                # usage error for the session rather than one per perf test.
                for name in settings.tricks or ():
                    where = settings.origins["tricks"]
                    self._check_runtime(dict(self.registry.get(name, where).env), f"trick {name!r} (from {where})")
            except TrickError as exc:
                self._settings = None
                raise pytest.UsageError(f"bpsperf: {exc}") from None
            except pytest.UsageError:
                self._settings = None
                raise
        return self._settings

    @property
    def registry(self) -> TrickRegistry:
        """The known tricks: built in, ``bpsperf_define_tricks``, ``pytest_bpsperf_tricks`` (built when first read)."""
        if self._registry is None:
            self._registry = self._build_registry()
        return self._registry

    def activate(self, items: "list[pytest.Item]") -> None:
        """Perf tests are selected to run (``items``): resolve and check the session's settings, let
        :attr:`on_activate` follow them, then check each test's own settings and tricks. Once, before
        anything is timed (the session's settings also before Ray starts). Raises ``pytest.UsageError``."""
        if self.active:
            return
        self.active = True
        _ = self.settings
        for hook in self.on_activate:
            hook()
        for item in items:
            self.check_item(item)
        self.ready = True

    def describe(self) -> "list[str]":
        """Every setting of the session (no marker) with its value and where it came from, one line each:
        what ``--bpsperf-show-settings`` prints."""
        settings = self.settings
        rows = []
        for opt in OPTIONS:
            value, origin = getattr(settings, opt.name), settings.origins.get(opt.name, "default")
            unset = origin == "default" and value == opt.default and opt.shown_default is not None
            rows.append((opt.name, str(opt.shown_default) if unset else format_value(opt, value), origin))
        names = max(len(name) for name, _value, _origin in rows)
        values = min(32, max(len(value) for _name, value, _origin in rows))
        return [f"{name:{names}s}  {value:{values}s}  {origin}" for name, value, origin in rows]

    def check_item(self, item: pytest.Item) -> None:
        """A selected perf test's own settings (marker included) and tricks, once per test function."""
        function = item.nodeid.split("[")[0]
        if function in self._deferred:
            raise self._deferred[function]
        if function in self._checked:
            return
        self._checked.add(function)
        settings = self.settings_for(item)
        if uses_runs(item):
            self.tricks_for(function, item.get_closest_marker(TRICKS_MARKER), settings)

    def _defaults_for(self, backend: str, device: str):
        """Workload sizes of ``backend`` on ``device``; ``auto`` as resolved (a fallback trains on CPUs)."""
        return backends.workload_defaults(
            self.auto_backend if backend == "auto" and self.auto_backend else backend, device
        )

    def use_hardware(self, hardware: Hardware) -> None:
        """The settings of tests resolved from now on follow ``hardware`` (an existing cluster's nodes)."""
        self._hardware = hardware

    def resolved_auto(self, backend: str) -> None:
        """``auto`` is ``backend`` for this session: the session's settings follow its workload defaults."""
        self.auto_backend = backend
        self._settings = self._resolve(self.sources)

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
            backend = self.backend_of(settings)
            framework = getattr(backends.get(backend), "framework", "mxnet") if backend else "mxnet"
            settings = check_workload(settings, search=(str(self.config.rootpath),), framework=framework)
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
                f"{limit}, or a cluster with --bpsperf-ray-address"
            )

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
                if (
                    name in self._overridden
                    or origin == source.describe(name)
                    or origin.startswith(("command line", "environment"))
                ):
                    continue
                self._overridden.add(name)
                warnings.warn(
                    pytest.PytestWarning(
                        f"bpsperf: {source.describe(name)}={raw} is overridden by {origin} "
                        f"(value {getattr(settings, name)!r}); a test's own marker or arguments win"
                    ),
                    stacklevel=2,
                )

    def _check_runtime(self, env: dict, where: str) -> None:
        """On the embedded Ray (roles run here): variables that would break the roles' runtime are errors."""
        if self.settings.ray_address:
            return  # the files are on the cluster's nodes, not here
        problems = runtime_problems(env)
        if problems:
            raise pytest.UsageError(
                f"bpsperf: {where} would break the roles' runtime: {'; '.join(problems)} (the loader only warns "
                "and the run would measure something else); expected paths of existing shared objects"
            )

    def tricks_for(self, item_name: str, marker: "pytest.Mark | None", settings: Settings) -> "list[str]":
        """Trick names for a test, each known and none twice (see :func:`trick_names`)."""
        names, where = trick_names(item_name, marker, settings.tricks, settings.origins.get("tricks", "default"))
        try:
            for name in names:
                self._check_runtime(dict(self.registry.get(name, where).env), f"trick {name!r} (from {where})")
        except TrickError as exc:
            raise pytest.UsageError(f"bpsperf: {exc}") from None
        if len(set(names)) != len(names):
            raise pytest.UsageError(f"bpsperf: trick list {names} from {where} names a trick twice")
        backend = self.backend_of(settings)
        if backend is not None and not backends.has_servers(backends.get(backend)):
            optional = bool(marker is not None and marker.kwargs.get(SERVERS_OPTIONAL)) and where.startswith("@")
            for name in names:
                trick = self.registry.get(name, where)
                if trick.extra_servers_per_node and not optional:
                    from ..planning.planner import check_trick

                    try:
                        check_trick(trick, backends.get(backend))
                    except backends.PlanError as exc:
                        raise pytest.UsageError(
                            f"bpsperf: {exc} (trick from {where}, backend from {settings.origins.get('backend')})"
                        ) from None
        return names

    def backend_of(self, settings: Settings) -> "str | None":
        """The backend ``settings`` run on, where known now: set, or ``auto`` once resolved."""
        if settings.backend != "auto":
            return settings.backend if settings.backend in backends.names() else None
        return self.auto_backend

    def servers_skip(self, item: pytest.Item, trick: "object") -> "str | None":
        """Why ``item`` is skipped under ``trick``: the trick adds servers, the backend has none and the
        tricks marker says ``servers_optional=True``; None otherwise (make_plan refuses it then)."""
        if not getattr(trick, "extra_servers_per_node", 0):
            return None
        backend = self.backend_of(self.settings_for(item))
        marker = item.get_closest_marker(TRICKS_MARKER)
        if backend is None or backends.has_servers(backends.get(backend)) or marker is None:
            return None
        if not marker.kwargs.get(SERVERS_OPTIONAL):
            return None
        return (
            f"trick {getattr(trick, 'name', trick)!r} adds servers and backend {backend} has none (its workers "
            f"average gradients among themselves); @pytest.mark.{TRICKS_MARKER}({SERVERS_OPTIONAL}=True) skips it"
        )

    @classmethod
    def _case_order(cls, item: pytest.Item) -> "tuple[int, int]":
        """Where ``item`` goes among the cases of its test: repeat, then the trick's place in the marker."""
        case = cls.case_of(item)
        return (case.repeat, case.index) if case is not None else (0, 0)

    @staticmethod
    def case_of(item: pytest.Item) -> "TrickCase | None":
        """The trick case a perf test item runs, or None for other items."""
        callspec = getattr(item, "callspec", None)
        return callspec.params.get("bpsperf_trick") if callspec else None

    def parametrization(self, definition: pytest.Item) -> "tuple[int, list[str]]":
        """Repeats and trick names of a perf test function: the two settings its ids need, and nothing
        else (no hardware, no checks: those wait until it is selected to run)."""
        sources = list(self.sources)
        marker = _marker_source(definition.nodeid, definition.get_closest_marker(SETTINGS_MARKER))
        if marker is not None:
            sources.insert(0, marker)
        try:
            repeats = resolve_value(OPTIONS_BY_NAME["repeats"], sources)
            tricks = resolve_value(OPTIONS_BY_NAME["tricks"], sources)
        except SettingsError as exc:
            raise pytest.UsageError(f"bpsperf: {exc}") from None
        names, _where = trick_names(
            definition.nodeid,
            definition.get_closest_marker(TRICKS_MARKER),
            tricks[0] if tricks else None,
            tricks[1] if tricks else "default",
        )
        return (repeats[0] if repeats else OPTIONS_BY_NAME["repeats"].default), names

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "bpsperf_trick" not in metafunc.fixturenames:
            return
        definition = metafunc.definition
        try:
            repeats, names = self.parametrization(definition)
        except pytest.UsageError as exc:
            # Raised only if this test is selected to run (activate): a deselected perf test stops nothing.
            self._deferred[definition.nodeid] = exc
            return
        cases, ids = [], []
        for repeat in range(repeats):
            for index, trick in enumerate(names):
                cases.append(TrickCase(trick, repeat, index))
                ids.append(trick if repeats == 1 else f"{trick}-r{repeat + 1}")
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
                block.sort(key=self._case_order)
                out.extend(block)
                block = []
            if case is not None:
                block.append(item)
                block_key = key
            elif item is not None:
                out.append(item)
        items[:] = out
