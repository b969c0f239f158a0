"""``remote/roles.py``: a role process's scratch and socket directory, its node's address, ports, records."""

from __future__ import annotations

import json
import os

import pytest

from helpers.byteps_source import byteps_source
from helpers.clusters import CPUS, DEFAULT, GPUS, HEAD, settings
from pytest_bpsperf import backends
from pytest_bpsperf.planning.planner import make_plan
from pytest_bpsperf.remote.roles import RoleProcess


def test_each_run_and_worker_node_gets_its_own_socket_directory(tmp_path, monkeypatch):
    from pytest_bpsperf.remote.roles import RoleProcess

    nodes = [HEAD] + GPUS + CPUS

    def socket_paths(run_id):
        plan = make_plan(settings(backend="byteps"), DEFAULT, nodes, backend=backends.get("byteps"), run_id=run_id)
        return {w.name: w.env["BYTEPS_SOCKET_PATH"] for w in plan.by_role("worker")}

    paths = socket_paths("run-a")
    assert paths["worker-0.0"] == paths["worker-0.1"] != paths["worker-1.0"]  # one per node, shared by its ranks
    # the role actor makes it under this run's scratch directory, and removes it at the end
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    made = []
    for run_id in ("run-a", "run-b"):  # two sessions (runs) on one node
        role = RoleProcess("worker-0.0", str(tmp_path / run_id))
        role.start(
            ["{python}", "-c", "import os; print(os.environ['BYTEPS_SOCKET_PATH'])"],
            {"BYTEPS_SOCKET_PATH": socket_paths(run_id)["worker-0.0"], "BPSPERF_RUN_ID": run_id},
        )
        role.wait(60)
        made.append(role.environ["BYTEPS_SOCKET_PATH"])
        assert os.path.isdir(made[-1]) and made[-1].startswith(str(tmp_path / f"bpsperf-{run_id}"))
        role.stop()
        assert not os.path.exists(role.scratch)
    assert made[0] != made[1]
    monkeypatch.undo()
    from pytest_bpsperf.remote.roles import scratch_dir

    # a Unix socket's path holds 108 bytes: a session id (12 hex digits) under the node's temp dir fits
    assert len(scratch_dir("0123456789ab") + "/byteps-w15/socket_standin_data_15") < 100


def test_byteps_takes_over_a_socket_path_it_finds():
    # why one path per job: BytePS unlinks and binds whatever is there (communicator.cc:146-147)
    lines = byteps_source("byteps/common/communicator.cc").splitlines()
    assert "unlink(fd_path.c_str());" in lines[146] and "BYTEPS_SOCKET_PATH" in lines[98]


def test_an_interfaces_address_is_read_on_the_node():
    from pytest_bpsperf.remote.roles import RoleProcess, interface_address

    assert interface_address("lo") == "127.0.0.1"
    with pytest.raises(ValueError, match=r"DMLC_INTERFACE=no-such0: no such network interface on node .*lo"):
        interface_address("no-such0")
    assert RoleProcess("r", "/tmp").address_of("no-such0")["error"].startswith("DMLC_INTERFACE=no-such0")


#: A scheduler as ps-lite's ZeroMQ listener binds: SO_REUSEADDR, bind, listen; then it waits.
LISTENER = (
    "import os, socket, time\n"
    "s = socket.socket()\n"
    "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "s.bind(('127.0.0.1', int(os.environ['DMLC_PS_ROOT_PORT'])))\n"
    "s.listen()\n"
    "print('listening', flush=True)\n"
    "time.sleep(60)\n"
)


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


def test_latest_record_skips_a_torn_line(tmp_path):
    role = RoleProcess("worker-0", str(tmp_path))
    assert role.latest_record() is None
    with open(role.records_path, "w") as fh:
        fh.write(json.dumps({"event": "step", "step": 4}) + "\n" + '{"event": "st')
    assert role.latest_record() == {"event": "step", "step": 4}
