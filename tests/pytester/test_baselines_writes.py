"""Writes to the baselines directory: its lock says who holds it and gives up after a bound; one session once.

A real process holds the lock (``flock`` on the directory, as a writer does);
the writers are the ``bpsperf`` command and a recording pytest session (runs fed
through ``pytest_bpsperf_run``). The store's merge rules are in ``tests/unit/store/test_baselines.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers.cli import bpsperf
from helpers.fakes import MATRIX_TEST, run

#: Holds an exclusive flock on the directory argv[1] until killed; says "locked" once it holds it.
HOLDER = (
    "import fcntl, os, sys, time\n"
    "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
    "fcntl.flock(fd, fcntl.LOCK_EX)\n"
    "print('locked', flush=True)\n"
    "time.sleep(120)\n"
)


@pytest.fixture
def held(tmp_path):
    """A baselines directory whose lock another process holds; yields (directory, that process)."""
    directory = tmp_path / "baselines"
    directory.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(directory)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "locked"
        yield directory, proc
    finally:
        proc.kill()
        proc.wait(10)


def test_a_held_lock_is_named_and_given_up_on_after_the_bound(held, results, capsys):
    directory, holder = held
    code, out, err = bpsperf(
        capsys, "baselines", "record", results, "--baselines-dir", directory, "--lock-timeout", "0.5"
    )
    assert code == 2, out + err
    assert f"waiting for the lock of the baselines directory {directory}, held by pid {holder.pid} (" in err
    assert f"is locked by pid {holder.pid} (" in err and "gave up after waiting 0.5s" in err
    assert "--bpsperf-lock-timeout" in err and "nothing was written" in err
    assert list(directory.iterdir()) == []  # no file, no lock file
    code, _out, err = bpsperf(
        capsys, "baselines", "prune", "testprof", "--test", "*", "--baselines-dir", directory, "--lock-timeout", "0.2"
    )
    assert code == 2  # no file to prune: said before any lock is taken
    holder.kill()
    holder.wait(10)
    code, out, _err = bpsperf(
        capsys, "baselines", "record", results, "--baselines-dir", directory, "--lock-timeout", "0.5"
    )
    assert code == 0 and "recorded 2 baseline entries" in out


def test_a_recording_session_fails_naming_the_holder(held, ourtester):
    directory, holder = held
    ourtester.makepyfile(test_x=MATRIX_TEST)
    result = run(
        ourtester,
        "--bpsperf-update-baselines",
        "--bpsperf-repeats=2",
        "--bpsperf-profile=testprof",
        f"--bpsperf-baselines-dir={directory}",
        "--bpsperf-lock-timeout=0.5",
    )
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            f"bpsperf: waiting for the lock of the baselines directory {directory}, held by pid {holder.pid} *",
            f"bpsperf: baselines NOT written: the baselines directory {directory} is locked by "
            f"pid {holder.pid} *gave up after waiting 0.5s*",
        ]
    )
    assert list(directory.iterdir()) == []


@pytest.mark.parametrize("value", ["0", "-1", "soon"])
def test_the_bound_is_a_setting_checked_like_the_others(ourtester, value):
    ourtester.makepyfile(test_x=MATRIX_TEST)
    result = run(ourtester, f"--bpsperf-lock-timeout={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        f"invalid value {value!r} for setting 'lock_timeout' from command line option --bpsperf-lock-timeout"
        in result.stderr.str()
    )


def test_recording_one_results_file_twice_adds_its_session_once(results, tmp_path, capsys):
    directory = tmp_path / "baselines"
    code, out, _ = bpsperf(capsys, "baselines", "record", results, "--baselines-dir", directory)
    assert code == 0 and "recorded 2 baseline entries" in out
    first = (directory / "testprof.json").read_text()
    code, out, _ = bpsperf(capsys, "baselines", "record", results, "--baselines-dir", directory)
    assert code == 0 and out.count("already recorded: ") == 2 and "not added again" in out and "recorded 2" not in out
    assert (directory / "testprof.json").read_text() == first
    entries = json.loads(first)["entries"]
    assert all(len(e["sessions"]) == 1 for e in entries.values())
