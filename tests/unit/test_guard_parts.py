"""The fault and isolation guards' parts, checked without a session: no Ray, no training.

The stall watchdog, the measurement lock, which roles would outlive their actor,
the shipped perf test's settings, echoed environments, the first-step allowance.
Sessions that the guards stop or warn are in ``tests/pytester/test_guards.py``.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers.paths import ROOT
from pytest_bpsperf import backends
from pytest_bpsperf.launch.machine_lock import LockError, MachineLock
from pytest_bpsperf.launch.watchdog import FIRST_STEP_S, FLOOR_S, StallWatch

# --- stall watchdog ---------------------------------------------------------------

def _status(steps: int, state: str = "S", step_s: float = 0.5) -> dict:
    return {"code": None, "state": state, "steps": steps, "last_step": steps - 1 if steps else None,
            "step_s": step_s}


def test_stall_names_the_stopped_worker_with_its_last_step():
    watch = StallWatch(setting=10.0, origin="command line option --bpsperf-stall-timeout")
    workers = ["worker-0", "worker-1"]
    assert watch.check({"worker-0": _status(5), "worker-1": _status(5)}, workers, now=0.0) is None
    assert watch.check({"worker-0": _status(7), "worker-1": _status(7)}, workers, now=5.0) is None
    # dist_sync: both wait once one stops; the stopped one (state T) is the culprit
    stall = watch.check({"worker-0": _status(7), "worker-1": _status(7, "T")}, workers, now=16.0)
    assert stall is not None and stall.culprits == ("worker-1",)
    assert "worker-1 made no new step for 11s (last step 6)" in stall.message
    assert "stopped (SIGSTOP)" in stall.message and "--bpsperf-stall-timeout" in stall.message


def test_stall_without_a_stopped_process_names_the_worker_behind():
    watch = StallWatch(setting=10.0)
    workers = ["worker-0", "worker-1"]
    watch.check({"worker-0": _status(9), "worker-1": _status(4)}, workers, now=0.0)
    stall = watch.check({"worker-0": _status(9), "worker-1": _status(4)}, workers, now=11.0)
    assert stall.culprits == ("worker-1",) and "behind" in stall.message


def test_derived_stall_limit_follows_step_times_with_a_floor_and_allows_a_slow_first_step():
    watch = StallWatch()
    assert watch.limit() == FLOOR_S
    watch.check({"worker-0": _status(3, step_s=4.0)}, ["worker-0"], now=0.0)
    assert watch.limit() == pytest.approx(80.0)
    fresh = StallWatch()
    fresh.check({"worker-0": _status(0)}, ["worker-0"], now=0.0)
    assert fresh.check({"worker-0": _status(0)}, ["worker-0"], now=FIRST_STEP_S - 1) is None
    assert fresh.check({"worker-0": _status(0)}, ["worker-0"], now=FIRST_STEP_S + 1) is not None


# --- measurement lock ---------------------------------------------------------------

def test_second_session_waits_for_the_lock_and_says_so(tmp_path):
    path = str(tmp_path / "measure.lock")
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; sys.path.insert(0, %r)\n"
        "from pytest_bpsperf.launch.machine_lock import MachineLock\n"
        "MachineLock(%r).acquire(5); print('held', flush=True); time.sleep(3)\n"
    ) % (str(ROOT), path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        said = []
        lock = MachineLock(path)
        waited = lock.acquire(60, said.append, poll=0.1)
        assert lock.held and waited > 0.5
        assert len(said) == 1 and "waiting for the measurement lock" in said[0] and f"pid {holder.pid}" in said[0]
        lock.release()
        assert not lock.held
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("target_exists", [True, False], ids=["to-a-file", "dangling"])
def test_a_symlink_at_the_lock_path_is_refused_and_its_target_left_alone(tmp_path, target_exists):
    # /run/lock and /tmp are shared: a link planted there must not make the plugin create,
    # truncate or lock the file it points to.
    import fcntl

    target = tmp_path / "precious"
    if target_exists:
        target.write_text("keep me\n")
    link = tmp_path / "measure.lock"
    link.symlink_to(target)
    lock = MachineLock(str(link))
    with pytest.raises(LockError, match="symbolic link") as info:
        lock.acquire(1, poll=0.1)
    assert str(link) in str(info.value) and not lock.held
    if target_exists:
        assert target.read_text() == "keep me\n"
        with open(target) as fh:  # not locked either
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    else:
        assert not target.exists()


# --- roles that would outlive their actor --------------------------------------------

def test_the_run_notes_which_roles_would_outlive_their_actor_and_where():
    from pytest_bpsperf.launch.launcher import pdeathsig_notes

    infos = {"scheduler": {"pdeathsig": True}, "server-0": {"pdeathsig": False},
             "worker-0": {"pdeathsig": False}, "worker-1": {"pdeathsig": False}, "gone": {}}
    where = {"server-0": {"hostname": "n1", "ip": "10.0.0.1"}, "worker-0": {"hostname": "n1", "ip": "10.0.0.1"},
             "worker-1": {"hostname": "", "ip": "10.0.0.2"}}
    assert pdeathsig_notes(infos, where) == (
        "setpriv not found on n1: server-0, worker-0 do not die with their actor (no PR_SET_PDEATHSIG; "
        "install util-linux there)",
        "setpriv not found on 10.0.0.2: worker-1 does not die with its actor (no PR_SET_PDEATHSIG; "
        "install util-linux there)",
    )
    assert pdeathsig_notes({"worker-0": {"pdeathsig": True}}, {}) == ()


# --- the shipped perf test ---------------------------------------------------------------

def test_shipped_perf_test_pins_no_default():
    text = open(ROOT / "perf_tests" / "test_resnet50.py").read()
    assert "bpsperf_train()" in text and "model=" not in text


# --- echoed environments ------------------------------------------------------------

def test_every_variable_a_trick_sets_is_echoed_in_records_and_reports():
    from pytest_bpsperf.config.settings import Hardware, Source, resolve
    from pytest_bpsperf.config.tricks import Trick
    from pytest_bpsperf.planning.planner import make_plan
    from pytest_bpsperf.remote.environ import reported
    from pytest_bpsperf.runs.plan import Node

    trick = Trick("preload", env={"worker": {"LD_PRELOAD": "/usr/lib/libfast.so", "MALLOC_ARENA_MAX": "2"}})
    settings = resolve([Source("cli", "command line", {"role_env": "server:GLOO_SOCKET_IFNAME=lo"})],
                       Hardware(gpus=0, cores=2))
    plan = make_plan(settings, trick, [Node("n0", "127.0.0.1", 2, 0)], backend=backends.get("mxnet"), run_id="r")
    worker = plan.by_role("worker")[0].env
    server = plan.by_role("server")[0].env
    # what the role process gets is what the workload's start record and the reports show
    assert reported({**worker, "PATH": "/bin"}).items() >= {"LD_PRELOAD": "/usr/lib/libfast.so",
                                                           "MALLOC_ARENA_MAX": "2"}.items()
    assert "PATH" not in reported(worker)
    assert reported(server)["GLOO_SOCKET_IFNAME"] == "lo"
    assert "LD_PRELOAD" not in plan.scheduler.env


def test_a_gpu_workload_gets_longer_to_its_first_step():
    from pytest_bpsperf.launch.session import first_step_allowance
    from pytest_bpsperf.launch.watchdog import FIRST_STEP_GPU_S, FIRST_STEP_S, StallWatch

    assert first_step_allowance("byteps") == FIRST_STEP_GPU_S > first_step_allowance("mxnet") == FIRST_STEP_S
    watch = StallWatch(0.0, "default", first_step_s=FIRST_STEP_GPU_S)
    status = {"worker-0": {"code": None, "steps": 0}}
    assert watch.check(status, ["worker-0"], 0.0) is None
    assert watch.check(status, ["worker-0"], FIRST_STEP_S + 10) is None  # a CPU run would be stalled by now
    stall = watch.check(status, ["worker-0"], FIRST_STEP_GPU_S + 1)
    assert stall is not None and "worker-0 made no new step" in stall.message


# --- the preflight's child ------------------------------------------------------------

#: An "interpreter" that starts a helper of its own (as an import may) and waits: the helper's pid
#: goes to the file named by $HELPER_PID.
SPAWNING = "#!/bin/sh\nsleep 300 &\necho $! > \"$HELPER_PID\"\nwait\n"


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
        _check(str(python), [], str(tmp_path), ["mxnet"], None, None, None, str(work),
               timeout=2.0 if how == "timeout" else 60.0)
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


# --- the scheduler's port --------------------------------------------------------------

#: A scheduler as ps-lite's ZeroMQ listener binds: SO_REUSEADDR, bind, listen; then it waits.
LISTENER = ("import os, socket, time\n"
            "s = socket.socket()\n"
            "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
            "s.bind(('127.0.0.1', int(os.environ['DMLC_PS_ROOT_PORT'])))\n"
            "s.listen()\n"
            "print('listening', flush=True)\n"
            "time.sleep(60)\n")


def test_the_schedulers_port_is_held_until_the_scheduler_listens_on_it(tmp_path):
    import socket
    import time

    from pytest_bpsperf.remote.environ import PYTHON
    from pytest_bpsperf.remote.roles import RoleProcess, listening

    role = RoleProcess("scheduler", str(tmp_path))
    port = role.pick_port("127.0.0.1")
    # between choosing it and the scheduler binding it, no other process can take the port
    with socket.socket() as other:
        with pytest.raises(OSError):
            other.bind(("127.0.0.1", port))
    role.start([PYTHON, "-c", LISTENER], {"DMLC_PS_ROOT_PORT": str(port)})
    try:
        deadline = time.monotonic() + 30
        while not listening(port) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert listening(port), open(role.log_path).read()  # the scheduler took the held port
        assert role.status()["code"] is None and role._held_port is None  # and the hold is let go
    finally:
        role.stop(grace=1.0)
