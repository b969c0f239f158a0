"""``remote/preflight.py``: can this interpreter run the roles? Data on the node, its child processes, two MXNets.

Two distributions that both provide ``mxnet`` are tested with real (tiny) distributions' metadata in a
temporary directory on the path (``two_mxnets``, ``tests/conftest.py``); the session they stop is in
``tests/pytester/test_runner.py``.
"""

from __future__ import annotations

import importlib.machinery
import json
import subprocess
import sys
import types
from collections import namedtuple
from pathlib import Path

import pytest

from helpers.dists import dist
from pytest_bpsperf.remote.preflight import (
    PreflightError,
    check_interpreter,
    distributions_providing,
    mxnet_conflict,
    mxnet_missing_reason,
)


def test_the_preflight_finds_the_workers_data_missing_on_their_node(tmp_path):
    from pytest_bpsperf.remote.preflight import facts

    rec = tmp_path / "train.rec"
    rec.write_bytes(b"")
    found = facts([], None, None, data=str(rec))
    assert any("train.idx" in p and "setting 'data'" in p for p in found["problems"])
    (tmp_path / "train.idx").write_bytes(b"")
    assert facts([], None, None, data=str(rec))["problems"] == []


def test_the_interpreter_preflight_runs_as_a_module_with_the_byteps_server_need(tmp_path):
    # how every node of a cluster runs it: `main()` at the end of the module, after server_library
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_bpsperf.remote.preflight", "--needs", "byteps.server"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout.splitlines()[-1])
    assert all("NameError" not in p for p in found["problems"])


#: An "interpreter" that starts a helper of its own (as an import may) and waits: the helper's pid
#: goes to the file named by $HELPER_PID.
SPAWNING = '#!/bin/sh\nsleep 300 &\necho $! > "$HELPER_PID"\nwait\n'


def _alive(pid: int) -> bool:

    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("how", ["timeout", "ctrl-c"])
def test_the_preflights_child_and_what_it_started_die_when_it_is_stopped(tmp_path, monkeypatch, how):
    import os
    import signal
    import threading
    import time

    from pytest_bpsperf.remote.preflight import PreflightError, _check

    python = tmp_path / "python"
    python.write_text(SPAWNING)
    python.chmod(0o755)
    monkeypatch.setenv("HELPER_PID", str(tmp_path / "helper.pid"))
    work = tmp_path / "work"
    work.mkdir()
    timer = None
    if how == "ctrl-c":
        # Python's own Ctrl-C handler, whatever an earlier test of this process left there
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)

        def interrupt():
            while not (tmp_path / "helper.pid").exists():
                time.sleep(0.05)
            os.kill(os.getpid(), signal.SIGINT)  # a real signal: it interrupts the wait

        timer = threading.Thread(target=interrupt, daemon=True)
        timer.start()
    expected = PreflightError if how == "timeout" else KeyboardInterrupt
    with pytest.raises(expected):
        _check(
            str(python),
            [],
            str(tmp_path),
            ["mxnet"],
            None,
            None,
            None,
            str(work),
            timeout=2.0 if how == "timeout" else 60.0,
        )
    if how == "ctrl-c":
        signal.signal(signal.SIGINT, previous)
    helper = int((tmp_path / "helper.pid").read_text())
    deadline = time.monotonic() + 10
    while _alive(helper) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = _alive(helper)
    if alive:
        os.kill(helper, 9)
    assert not alive, "the preflight's helper outlived it"


def test_distributions_providing_reads_top_level_and_record(two_mxnets: Path):
    found = distributions_providing("mxnet", [str(two_mxnets)])
    assert [(name, version) for name, version, _ in found] == [("mxnet", "1.9.1"), ("mxnet-cu112", "1.9.1")]
    assert all(where == str(two_mxnets) for _, _, where in found)
    assert distributions_providing("gluoncv", [str(two_mxnets)])[0][0] == "gluoncv"
    assert distributions_providing("bin", [str(two_mxnets)]) == []


def test_two_mxnet_distributions_are_named_both(two_mxnets: Path):
    message = mxnet_conflict([str(two_mxnets)])
    assert message is not None
    assert "mxnet 1.9.1 (in " in message and "mxnet-cu112 1.9.1 (in " in message
    assert "pip uninstall" in message and "[mxnet] extra" in message


def test_one_mxnet_or_one_found_twice_is_no_conflict(tmp_path: Path):
    dist(tmp_path / "a", "mxnet", "1.9.1", top_level="mxnet")
    assert mxnet_conflict([str(tmp_path / "a")]) is None
    dist(tmp_path / "b", "MXNet", "1.9.1", top_level="mxnet")  # the same distribution in another directory
    assert mxnet_conflict([str(tmp_path / "a"), str(tmp_path / "b")]) is None
    assert mxnet_conflict([str(tmp_path / "empty")]) is None


def test_role_preflight_refuses_an_interpreter_with_two_mxnets(two_mxnets: Path):
    # the real preflight subprocess, with the fake distributions first on the roles' import path
    with pytest.raises(PreflightError) as info:
        check_interpreter(None, [str(two_mxnets)], None, ["mxnet"], timeout=120)
    assert "mxnet-cu112 1.9.1" in str(info.value) and "mxnet 1.9.1" in str(info.value)


def test_role_preflight_does_not_look_where_no_role_imports_mxnet(two_mxnets: Path):
    found = check_interpreter(None, [str(two_mxnets)], None, [], timeout=120)
    assert found["problems"] == []


def _python(major: int, minor: int, micro: int = 0):
    return namedtuple("version_info", "major minor micro releaselevel serial")(major, minor, micro, "final", 0)


@pytest.mark.parametrize("minor, says", [(9, False), (11, False), (12, True), (13, True)])
def test_mxnet_missing_on_a_python_it_has_no_wheels_for_says_why(monkeypatch, minor: int, says: bool):
    from pytest_bpsperf.remote.preflight import _check_need

    monkeypatch.setitem(sys.modules, "mxnet", None)  # not installed, wherever these tests run
    with monkeypatch.context() as m:  # only around the calls: pytest reads sys.version_info too
        m.setattr(sys, "version_info", _python(3, minor, 1))
        reason, problem = mxnet_missing_reason(), _check_need("mxnet")
    assert problem is not None and problem.startswith("mxnet does not import: ModuleNotFoundError")
    if not says:
        assert reason is None and "Python" not in problem
        return
    assert reason == (
        f"MXNet 1.9.1 has no wheels for Python 3.{minor} (the newest it has are for Python 3.11), so there the "
        "extra [mxnet] installs nothing: use Python <= 3.11 for backends mxnet and byteps, or --bpsperf-backend=torch"
    )
    assert problem.endswith(f"({reason})")


def test_an_installed_mxnet_is_the_roles_to_import_on_any_python(monkeypatch):
    # one built from source on 3.12: found (not imported here), so no reason is given
    monkeypatch.setitem(sys.modules, "mxnet", types.ModuleType("mxnet", "a stand-in"))
    monkeypatch.setattr(sys.modules["mxnet"], "__spec__", importlib.machinery.ModuleSpec("mxnet", None))
    assert mxnet_missing_reason((3, 12)) is None
    monkeypatch.setitem(sys.modules, "mxnet", None)
    assert mxnet_missing_reason((3, 12)) is not None and mxnet_missing_reason((3, 11)) is None


def test_the_python_mxnet_stops_at_is_where_the_extra_does():
    # pyproject.toml's markers and the message agree on the newest Python of MXNet's wheels
    from packaging.requirements import Requirement

    from helpers.paths import ROOT
    from pytest_bpsperf.remote.preflight import MXNET_NEWEST_PYTHON

    tomllib = pytest.importorskip("tomllib")
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["mxnet"]
    major, minor = MXNET_NEWEST_PYTHON
    for line in extra:
        marker = Requirement(line).marker
        assert marker is not None and marker.evaluate({"python_version": f"{major}.{minor}", "extra": "mxnet"})
        assert not marker.evaluate({"python_version": f"{major}.{minor + 1}", "extra": "mxnet"})
