"""Session-level guards in pytest: SIGTERM, report paths, xdist.

- SIGTERM and SIGHUP (a closed terminal, an ssh session that dropped) end the
  session like Ctrl-C (teardown runs, nothing more starts, a normal non-zero
  exit) instead of killing pytest mid-run, once perf tests are collected or the
  Ray side is first used (roles, Ray, the base worktree and the measurement
  lock must be torn down); a session that does neither keeps the handlers it
  had. SIGKILL cannot be caught: the next session sweeps what it left.
- Report files must be writable: checked at configure time, before anything
  runs; when recording, the baselines directory too, once perf tests are
  selected (where it is depends on the settings, resolved then).
- Under pytest-xdist, each perf test fails at once with how to run perf tests
  (alone, in one process: ``-p no:xdist`` or ``-n 0``), other tests run in
  parallel, and no process writes a report file (none of them saw every run).
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any, Iterable

import pytest

from .options import REPORT_OPTIONS, uses_runs

#: The signals that end a measuring session like Ctrl-C: a service manager's stop, a closed terminal.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def unwritable(path: str, *, directory: bool = False) -> "str | None":
    """Why ``path`` (a file, or with ``directory`` a directory) cannot be written, or None.

    Nothing is created: the nearest existing ancestor must be a writable directory
    (``os.access`` also refuses a read-only mount, also for root).
    """
    target = os.path.abspath(path)
    if os.path.exists(target):
        if directory and not os.path.isdir(target):
            return f"{target} is a file, not a directory"
        if not directory and os.path.isdir(target):
            return f"{target} is a directory"
        check = target if directory else os.path.dirname(target)
    else:
        check = os.path.dirname(target)
        while not os.path.exists(check):
            check = os.path.dirname(check)
        if not os.path.isdir(check):
            return f"{check} is a file, so {target} cannot be created under it"
    if not os.access(check, os.W_OK | os.X_OK):
        return f"{check} is not writable ({'read-only file system' if _read_only(check) else 'permission denied'})"
    return None


def _read_only(path: str) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def under_xdist(config: pytest.Config) -> bool:
    """Whether this pytest is an xdist controller or worker."""
    if hasattr(config, "workerinput"):
        return True
    return bool(getattr(config.option, "numprocesses", None)) and config.pluginmanager.hasplugin("xdist")


class SessionGuard:
    """Checks what must hold before the first test runs; installs the SIGTERM and SIGHUP handler once the session
    measures."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self._previous: "dict[signal.Signals, Any] | None" = None  # the handlers install() replaced
        self._installed = False
        self._refused: "set[str]" = set()
        self._check_reports()

    def _check_reports(self) -> None:
        """Report files asked for on the command line (written at the session's end, perf tests or not)."""
        for option in REPORT_OPTIONS:
            path = self.config.getoption(option.dest)
            problem = path and unwritable(path, directory=option.directory)
            if problem:
                expected = (
                    "a writable directory, or one that can be made"
                    if option.directory
                    else "a file path in a writable directory"
                )
                raise pytest.UsageError(
                    f"bpsperf: cannot write the report {option.flag}={path}: {problem}; expected {expected}"
                )

    @staticmethod
    def check_baselines_dir(baselines_dir: str, updating: bool) -> None:
        """When recording (``updating``), the baselines directory must be writable: checked once perf
        tests are selected, before anything runs."""
        problem = updating and unwritable(baselines_dir, directory=True)
        if problem:
            raise pytest.UsageError(
                f"bpsperf: --bpsperf-update-baselines cannot write the baselines directory "
                f"{baselines_dir}: {problem}; expected a writable directory (setting "
                "'baselines_dir')"
            )

    def _on_sigterm(self, signum: int, frame: object) -> None:
        # One shot: a second signal during teardown must not interrupt the teardown itself.
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        raise KeyboardInterrupt(signal.Signals(signum).name)

    def install(self) -> None:
        """Make SIGTERM and SIGHUP end the session like Ctrl-C (from the main thread only; idempotent)."""
        if not self._installed and threading.current_thread() is threading.main_thread():
            self._previous = {sig: signal.signal(sig, self._on_sigterm) for sig in STOP_SIGNALS}
            self._installed = True

    def restore(self) -> None:
        """Put back the handlers that were there before :meth:`install`."""
        if self._installed and threading.current_thread() is threading.main_thread():
            for sig, previous in (self._previous or {}).items():
                # None: the handler was not set from Python; the default is what it did
                signal.signal(sig, signal.SIG_DFL if previous is None else previous)
            self._previous, self._installed = None, False

    @pytest.hookimpl(tryfirst=True)  # before the base-vs-head worktree and the preflights
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Once perf tests are selected to run here, SIGTERM must tear their runs down, not kill pytest."""
        if session.config.option.collectonly or hasattr(session.config, "workerinput"):
            return  # nothing runs; an xdist worker refuses perf tests
        if _perf_items(session.items):
            self.install()

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config, items: list) -> None:
        """Under an xdist worker, note the perf tests that are still selected (after -m/-k deselection)."""
        if hasattr(config, "workerinput"):
            self._refused = set(_perf_items(items))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """A perf test in an xdist worker fails at once with how to run it (a raise in a worker's
        collection would only show as an xdist internal error)."""
        if item.nodeid in self._refused:
            pytest.fail(
                "bpsperf: usage: perf tests cannot run under pytest-xdist (they measure alone, in one process): "
                "run them with -p no:xdist (or -n 0), and the other tests with -m 'not perf' -n auto",
                pytrace=False,
            )


def _perf_items(items: Iterable[pytest.Item]) -> list:
    return [item.nodeid for item in items if uses_runs(item)]
