"""The pytest layer, and its entry point (``pytest11``): hooks and fixtures, each a few lines over its objects.

The work is done by plain modules below; the modules here are the small
plugin objects that register their own hooks, created in ``pytest_configure``
and wired here:

- :mod:`.options`: options, ini keys, markers, each test's settings and its tricks (:class:`~.options.SettingsPlugin`);
- :mod:`.runner`: the Ray session and the runs, the default ``pytest_bpsperf_run`` (:class:`~.runner.RunnerPlugin`);
- :mod:`.baseline_gate`: jobs against the stored baselines, and recording them (:class:`~.baseline_gate.BaselineGate`);
- :mod:`.pair_gate`: base against head in one session (:class:`~.pair_gate.PairGate`);
- :mod:`.outcomes`: a verdict as the test's outcome, for both gates;
- :mod:`.reports`: the terminal section and the report files (:class:`~.reports.ReportPlugin`);
- :mod:`.guard`: SIGTERM, report paths, xdist (:class:`~.guard.SessionGuard`);
- :mod:`.junit`: verdicts as JUnit properties; :mod:`.hookspec`: the plugin's hook specifications.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterator

import pytest

from ..config.settings import Settings
from ..config.tricks import Trick
from ..judge.job import Ledger, RunResult
from . import hookspec
from .baseline_gate import BaselineGate
from .guard import SessionGuard, under_xdist
from .options import REPORT_OPTIONS, SettingsPlugin, add_markers, add_options, is_perf_item
from .pair_gate import PairGate
from .reports import ReportPlugin
from .runner import RunnerPlugin, report_header, spec_of

settings_key = pytest.StashKey[SettingsPlugin]()
runner_key = pytest.StashKey[RunnerPlugin]()
gate_key = pytest.StashKey[BaselineGate]()
report_key = pytest.StashKey[ReportPlugin]()
guard_key = pytest.StashKey[SessionGuard]()
_KEYS: "tuple[pytest.StashKey[Any], ...]" = (report_key, gate_key, runner_key, settings_key, guard_key)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspec)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> "int | None":
    if config.getoption("bpsperf_show_settings") and not config.option.help:
        # The session pytest's own show-and-exit commands run in (--fixtures, --cache-show): configured,
        # so that plugins' backends and tricks are registered; a bad value is its usage error (exit 4).
        from _pytest.main import wrap_session

        return wrap_session(config, _show_settings)
    return None


def _show_settings(config: pytest.Config, session: pytest.Session) -> int:
    tr = config.pluginmanager.get_plugin("terminalreporter")
    write = tr.write_line if tr is not None else print
    settings = config.stash[settings_key]
    for line in _header(config):
        write(line)
    write(
        "bpsperf settings: value, and where it came from (marker > command line > environment > ini > "
        "default; a test's marker or bpsperf_train arguments win over these)"
    )
    for line in settings.describe():
        write(line)
    return 0


def pytest_configure(config: pytest.Config) -> None:
    # Nothing here resolves a setting, detects hardware or imports the user's code: a session
    # without perf tests is untouched (see _activate, once perf tests are selected).
    add_markers(config)
    ledger = Ledger()
    settings = config.stash[settings_key] = SettingsPlugin(config)
    runner = config.stash[runner_key] = RunnerPlugin(config, settings, ledger)
    gate = config.stash[gate_key] = BaselineGate(config, settings, runner, ledger)
    config.stash[report_key] = ReportPlugin(config, runner, gate, ledger)
    guard = config.stash[guard_key] = SessionGuard(config)
    runner.before_ray = guard.install
    settings.on_activate.append(lambda: _activate(config))
    for key in _KEYS:
        config.pluginmanager.register(config.stash[key], f"bpsperf-{type(config.stash[key]).__name__}")
    if config.getoption("bpsperf_list_tricks"):
        for name, origin, description in settings.registry.describe():
            print(f"{name:28s} {origin:24s} {description}")
        pytest.exit("bpsperf: listed tricks", returncode=0)


@pytest.hookimpl(trylast=True)  # after -m and -k deselected what does not run
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: "list[pytest.Item]") -> None:
    if settings_key not in config.stash or hasattr(config, "workerinput"):
        return  # an xdist worker fails its perf tests at setup (plugin/guard.py)
    perf = [item for item in items if is_perf_item(item)]
    if perf:
        config.stash[settings_key].activate(perf)


def pytest_report_collectionfinish(config: pytest.Config, start_path: object, items: list) -> "list[str]":
    # The header of a session that runs perf tests. pytest_report_header comes before collection,
    # when no one knows yet whether any perf test will run (and nothing is resolved then).
    if settings_key not in config.stash or not config.stash[settings_key].active or config.option.collectonly:
        return []
    if config.option.verbose < 0 or getattr(config.option, "no_header", False):
        return []  # as pytest's own header
    return _header(config)


#: The profile id the header named before Ray was up (checked against the run's at the end).
header_profile_key = pytest.StashKey[str]()


def _header(config: pytest.Config) -> "list[str]":
    gate = config.stash[gate_key]
    profile = gate.expected_profile()
    if profile is not None:
        config.stash[header_profile_key] = profile.id
    from ..config.ray_env import ray_notices

    lines = report_header(gate.settings, profile, gate.baselines_text(profile), updating=gate.updating)
    # what the session does about a Ray job, RAY_ADDRESS or RAY_JOB_ID, before anything runs
    return lines + [f"bpsperf: {line}" for line in ray_notices(os.environ, gate.settings)]


def _activate(config: pytest.Config) -> None:
    """Perf tests are selected and the session's settings checked: what follows from them, before
    anything runs (the recording directory, the base-vs-head gate, an existing cluster)."""
    settings, runner, gate = config.stash[settings_key], config.stash[runner_key], config.stash[gate_key]
    SessionGuard.check_baselines_dir(str(gate.store().directory), gate.updating)
    if settings.settings.base or settings.settings.head:
        # The base-vs-head gate takes the stored-baseline gate's place (its checks of the arms run now).
        pairs = PairGate(config, settings, runner, gate.ledger)
        config.pluginmanager.unregister(gate)
        config.stash[gate_key] = config.stash[report_key].gate = pairs
        config.pluginmanager.register(pairs, f"bpsperf-{type(pairs).__name__}")
    runner.connect()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if runner_key not in config.stash:
        return
    gate, reports = config.stash[gate_key], config.stash[report_key]
    if gate.ledger.runs:
        profile = gate.profile()  # while Ray is up: the cluster is part of the profile
        said = config.stash.get(header_profile_key, None)
        if said is not None and profile.id != said:
            gate.ledger.note(
                f"the runs' profile is {profile.id}, not {said} as the header said before Ray was up "
                "(Ray counted this machine's cores or GPUs otherwise)"
            )
    config.stash[runner_key].close()  # before the summary, so that Ray's stop time is reported
    # Each file on its own: an I/O error names its file and loses neither the summary nor the others.
    gate.write_baselines(interrupted=exitstatus == pytest.ExitCode.INTERRUPTED)
    if under_xdist(config):
        asked = [o.flag for o in REPORT_OPTIONS if config.getoption(o.dest)]
        if asked:
            gate.ledger.note(
                f"no report files under pytest-xdist ({', '.join(asked)}): no process saw every "
                "run; run perf tests with -p no:xdist"
            )
    else:
        reports.write_reports()
    if (gate.update_failed or reports.write_failed) and session.exitstatus in (0, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config: pytest.Config) -> None:
    if runner_key in config.stash:
        config.stash[runner_key].close()
    if gate_key in config.stash:
        config.stash[gate_key].close()  # after Ray: no role may still read the base worktree
    if guard_key in config.stash:
        config.stash[guard_key].restore()
    for key in _KEYS:
        if key in config.stash:
            if config.pluginmanager.is_registered(config.stash[key]):  # not when configure stopped early
                config.pluginmanager.unregister(config.stash[key])
            del config.stash[key]


@pytest.fixture
def bpsperf_trick(request: pytest.FixtureRequest) -> Trick:
    """The trick this perf test runs under (a :class:`~pytest_bpsperf.config.tricks.Trick`).

    Perf tests are parametrized over tricks by ``@pytest.mark.bpsperf_tricks(...)``
    or ``--bpsperf-tricks``; the test id names the trick.
    """
    settings = request.config.stash[settings_key]
    case = getattr(request, "param", None)
    trick = settings.registry.get(case.trick if case is not None else "default")
    why = settings.servers_skip(request.node, trick)
    if why is not None:
        pytest.skip(why)
    return trick


@pytest.fixture
def bpsperf_settings(request: pytest.FixtureRequest) -> Settings:
    """The resolved :class:`~pytest_bpsperf.config.settings.Settings` of this test."""
    return request.config.stash[settings_key].settings_for(request.node)


@pytest.fixture
def bpsperf_train(request: pytest.FixtureRequest, bpsperf_trick: Trick) -> Iterator[Callable[..., RunResult]]:
    """Run one distributed training run and return its :class:`~pytest_bpsperf.judge.job.RunResult`.

    Call it as ``bpsperf_train(**settings)`` (e.g. ``steps=20``); arguments take
    precedence over markers, command line, environment and ini. The roles are
    started on Ray under this test's trick; the result gives aggregate img/s,
    per-worker img/s, warm-up steps, compute/sync split, bring-up and teardown
    seconds and the role logs. ``result.assert_within_baseline()`` compares the
    run's job with its stored baseline, or, with ``--bpsperf-base``, with the
    base arm: each call then runs a pair (base and head, in alternating
    order) and returns the head run.
    """
    config = request.config

    def train(**overrides: object) -> RunResult:
        spec = spec_of(
            request.node,
            config.stash[settings_key],
            config.stash[runner_key].base_log_dir(),
            bpsperf_trick,
            **overrides,
        )
        return config.stash[gate_key].train(spec)

    yield train
