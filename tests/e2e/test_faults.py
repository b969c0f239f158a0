"""Fault injection: real roles under Ray on this machine, each fault applied from outside.

One pytest session (in a subprocess, as a user runs it) trains under one trick
per fault; this test waits until that run's workers train, then signals one of
the processes that session started (a worker, a server, the scheduler, a role's
actor, the raylet), and checks that the run fails within a generous bound,
that the failure names the culprit, that the failed runs are in the JSON
report, and that nothing is left running. Other tests: two sessions at once
with SIGTERM to the first, and an unreachable cluster address. The bounds are
failure conditions for a loaded machine, not benchmarks.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from helpers.procs import alive, cmdline_of, role_processes, snapshot_tree, wait_until
from pytest_bpsperf.remote.roles import read_environ

pytest.importorskip("mxnet")
pytest.importorskip("ray")

FAULTS = ("kill-worker", "kill-server", "kill-scheduler", "stop-worker", "kill-actor", "stop-actor", "kill-raylet")

PERF_TEST = """
import pytest

pytestmark = pytest.mark.perf


@pytest.mark.bpsperf_tricks({tricks})
def test_train(bpsperf_train):
    assert bpsperf_train().img_per_sec > 0
"""

# A tiny, cheap workload: the faults are about the harness, not the model.
INI = """
[pytest]
bpsperf_steps = {steps}
bpsperf_batch_size = 4
bpsperf_image_size = 32
bpsperf_model = mobilenet0.25
bpsperf_workers = 2
bpsperf_omp_threads = 1
bpsperf_scaling = off
bpsperf_timeout = 900
bpsperf_stall_timeout = 15
bpsperf_define_tricks =
{tricks}
"""

#: seconds from the fault until the run's roles are all gone (failure diagnosed, teardown done)
FAULT_BOUND_S = {"stop-worker": 150, "stop-actor": 150, "kill-raylet": 150}
DEFAULT_BOUND_S = 90


def write_project(path, tricks, steps):
    path.mkdir(parents=True, exist_ok=True)
    defs = "\n".join(f"    {t}: all:BPSPERF_FAULT_TARGET={t}" for t in tricks)
    (path / "pytest.ini").write_text(INI.format(steps=steps, tricks=defs))
    (path / "test_perf.py").write_text(PERF_TEST.format(tricks=", ".join(repr(t) for t in tricks)))
    (path / "baselines").mkdir(exist_ok=True)
    (path / "baselines" / "kept.json").write_text('{"schema_version": 1, "entries": {}}\n')


def start_pytest(cwd, *args, env=None, log=None):
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "perf", *args],
        cwd=str(cwd),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={**os.environ, **(env or {})},
    )


def roles_of(driver_pid, key, value):
    """role name -> pid of the live role processes below ``driver_pid`` whose environment has key=value."""
    out = {}
    for pid in snapshot_pids(driver_pid):
        env = read_environ(pid) or {}
        if env.get(key) == value and env.get("DMLC_ROLE"):
            argv = cmdline_of(pid).split()
            if "--records" in argv:  # a worker: its name is its records file's
                name = os.path.basename(argv[argv.index("--records") + 1]).split(".")[0]
            else:
                name = "server-0" if env["DMLC_ROLE"] == "server" else env["DMLC_ROLE"]
            out[name] = pid
    return out


def snapshot_pids(driver_pid):
    return [p for p, _, _ in snapshot_tree(driver_pid)]


def steps_done(pid):
    """Step records the worker ``pid`` wrote so far (its --records file from its command line)."""
    argv = cmdline_of(pid).split()
    path = argv[argv.index("--records") + 1] if "--records" in argv else ""
    try:
        with open(path) as fh:
            return sum(1 for line in fh if '"event": "step"' in line)
    except OSError:
        return 0


def parent_of(pid):
    with open(f"/proc/{pid}/stat") as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[1])


def in_tree(driver_pid, pid):
    return pid in snapshot_pids(driver_pid)


def test_faults_fail_fast_name_the_culprit_and_leave_nothing(tmp_path):
    project = tmp_path / "faults"
    write_project(project, FAULTS, steps=100000)
    kept = (project / "baselines" / "kept.json").read_bytes()
    report = tmp_path / "faults.json"
    log = open(tmp_path / "faults.log", "w+")
    # The embedded default must not follow RAY_ADDRESS (nothing listens there).
    driver = start_pytest(project, "-q", f"--bpsperf-json={report}", env={"RAY_ADDRESS": "127.0.0.1:1"}, log=log)
    seen, timings = [], {}
    try:
        for fault in FAULTS:

            def training(fault=fault):
                roles = roles_of(driver.pid, "BPSPERF_FAULT_TARGET", fault)
                ready = len(roles) == 4 and all(steps_done(p) >= 2 for n, p in roles.items() if n.startswith("worker"))
                return roles if ready else None

            roles = wait_until(training, timeout=300, interval=0.5)
            assert roles, f"{fault}: the run never trained; output so far:\n{open(log.name).read()[-3000:]}"
            seen.extend(snapshot_tree(driver.pid))
            if fault == "kill-raylet":
                target = next(p for p, _, cmd in snapshot_tree(driver.pid) if "/raylet/raylet" in cmd)
            else:
                role = {
                    "kill-worker": "worker-0",
                    "kill-server": "server-0",
                    "kill-scheduler": "scheduler",
                    "stop-worker": "worker-1",
                    "kill-actor": "worker-0",
                    "stop-actor": "worker-1",
                }[fault]
                target = roles[role] if fault.endswith(("worker", "server", "scheduler")) else parent_of(roles[role])
            assert in_tree(driver.pid, target)  # only ever a process this test's session started
            t0 = time.monotonic()
            os.kill(target, signal.SIGSTOP if fault.startswith("stop") else signal.SIGKILL)
            gone = wait_until(
                lambda roles=roles: not alive([s for s in seen if s[0] in roles.values()]),
                timeout=FAULT_BOUND_S.get(fault, DEFAULT_BOUND_S),
                interval=0.5,
            )
            timings[fault] = time.monotonic() - t0
            assert gone, f"{fault}: roles still running {timings[fault]:.0f}s after the fault"
        driver.wait(timeout=240)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait()
    out = open(log.name).read()
    print(out[-6000:])
    print("seconds from fault to roles gone:", {k: round(v, 1) for k, v in timings.items()})
    assert driver.returncode == 1, out[-3000:]
    doc = json.loads(report.read_text())
    assert doc["session_info"]["ray"]["embedded"] is True
    reasons = {f["nodeid"].split("[")[1].rstrip("]"): f["reason"] for f in doc["failures"]}
    assert set(reasons) == set(FAULTS), reasons.keys()
    first = {k: v.splitlines()[0] for k, v in reasons.items()}
    assert "worker-0 (exit -9)" in first["kill-worker"]
    assert "server-0 (exit -9)" in first["kill-server"]
    assert "scheduler (exit -9)" in first["kill-scheduler"]
    assert "stalled: worker-1 made no new step" in first["stop-worker"] and "stopped (SIGSTOP)" in first["stop-worker"]
    assert "worker-0" in first["kill-actor"] and "ActorDiedError" in first["kill-actor"]
    assert (
        "worker-1" in first["stop-actor"]
        and "do not answer" in first["stop-actor"]
        and "state T" in first["stop-actor"]
    )
    assert "worker-0" in first["kill-raylet"] and "node 127.0.0.1" in first["kill-raylet"]
    for reason in reasons.values():
        assert "--- role " in reason and "log " in reason, reason  # the roles and where their logs are
    assert "    " in reasons["stop-worker"]  # the stuck worker's log tail
    left = wait_until(lambda: not alive(seen), timeout=90)
    assert left, f"still running after the session: {alive(seen)}"
    assert role_processes(doc["session_info"]["run_id"]) == []
    assert (project / "baselines" / "kept.json").read_bytes() == kept


def test_two_sessions_serialize_and_sigterm_ends_the_first_like_ctrl_c(tmp_path):
    first_dir, second_dir = tmp_path / "first", tmp_path / "second"
    write_project(first_dir, ("long",), steps=100000)
    write_project(second_dir, ("short",), steps=6)
    logs = [open(tmp_path / "first.log", "w+"), open(tmp_path / "second.log", "w+")]
    report = tmp_path / "second.json"
    first = start_pytest(first_dir, "-q", log=logs[0])
    second = None
    try:

        def training():
            roles = roles_of(first.pid, "BPSPERF_FAULT_TARGET", "long")
            return roles if roles.get("worker-0") and steps_done(roles["worker-0"]) >= 1 else None

        assert wait_until(training, timeout=300), open(logs[0].name).read()[-3000:]
        tree = snapshot_tree(first.pid)
        second = start_pytest(second_dir, "-q", "-s", f"--bpsperf-json={report}", log=logs[1])
        told = wait_until(lambda: "waiting for the measurement lock" in open(logs[1].name).read(), timeout=120)
        assert told, open(logs[1].name).read()
        # waiting is not measured: the second session has started nothing yet
        assert not any("raylet" in cmd for _, _, cmd in snapshot_tree(second.pid))
        t0 = time.monotonic()
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=90)
        ended = time.time()
        print("SIGTERM to exit:", round(time.monotonic() - t0, 1), "s")
        out = open(logs[0].name).read()
        assert first.returncode == pytest.ExitCode.INTERRUPTED, out[-3000:]  # like Ctrl-C, not an abort
        assert "KeyboardInterrupt" in out or "Interrupted" in out
        assert wait_until(lambda: not alive(tree), timeout=60), alive(tree)
        second.wait(timeout=400)
        assert second.returncode == 0, open(logs[1].name).read()[-3000:]
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    doc = json.loads(report.read_text())
    log_dir = doc["tests"][0]["log_dir"]
    with open(os.path.join(log_dir, "worker-0.records.jsonl")) as fh:
        steps = [json.loads(line) for line in fh if '"event": "step"' in line]
    assert steps and min(s["time"] for s in steps) > ended  # measured only after the first session ended


def test_unreachable_cluster_is_one_quick_error_for_the_session(tmp_path):
    project = tmp_path / "unreachable"
    write_project(project, ("a", "b"), steps=6)
    t0 = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-m",
            "perf",
            "--bpsperf-ray-address=127.0.0.1:1",
            "--bpsperf-connect-timeout=3",
        ],
        cwd=str(project),
        capture_output=True,
        text=True,
        timeout=120,
    )
    elapsed = time.monotonic() - t0
    assert elapsed < 60, elapsed
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    err = done.stderr
    assert err.count("nothing answers at '127.0.0.1:1'") == 1, err
    assert "connect_timeout" in err and "--bpsperf-ray-address" in err
