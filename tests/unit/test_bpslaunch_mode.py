"""Setting ``launch=bpslaunch``: one bpslaunch per BytePS worker node, as BytePS users start workers.

The plan is checked here as a unit, with how bpslaunch pins ranks and what a
rank's start record says. The real ``bpslaunch`` running the planned worker role
is in ``tests/e2e/test_e2e_bpslaunch.py``.
"""

from __future__ import annotations

import pytest

from helpers.byteps_runs import bpslaunch_plan
from pytest_bpsperf import backends
from pytest_bpsperf.backends.byteps_env import TraceWindow, bpslaunch_node_env, worker_env
from pytest_bpsperf.config.settings import Hardware, Source, resolve
from pytest_bpsperf.config.tricks import Trick
from pytest_bpsperf.planning.planner import make_plan
from pytest_bpsperf.remote.environ import PYTHON, RECORDS
from pytest_bpsperf.runs.plan import Node

SHIM = (PYTHON, "-m", "pytest_bpsperf.remote.bpslaunch")


def test_bpslaunch_mode_plans_one_launcher_per_worker_node():
    plan = bpslaunch_plan(gpus=4)
    [worker] = plan.by_role("worker")
    assert worker.name == "worker-0"
    assert worker.command[:3] == SHIM
    workload = worker.command[3:]
    assert workload[:3] == (PYTHON, "-m", "pytest_bpsperf.remote.workload")
    assert "--records-per-rank" in workload and RECORDS in workload
    # the node's variables, as a bpslaunch user exports them: bpslaunch adds the per-rank ones
    assert {k: worker.env[k] for k in bpslaunch_node_env(worker_id=0, local_size=4, num_workers=1)} == \
        bpslaunch_node_env(worker_id=0, local_size=4, num_workers=1)
    for per_rank in ("BYTEPS_LOCAL_RANK", "BYTEPS_LOCAL_SIZE", "BYTEPS_NUMA_ON"):
        assert per_rank not in worker.env  # NUMA pinning: bpslaunch's default, on
    assert worker.env["NVIDIA_VISIBLE_DEVICES"] == "0,1,2,3"
    assert plan.worker_processes == 4 and plan.topology()["worker_processes"] == 4


def test_direct_mode_is_the_default_one_process_per_gpu():
    plan = bpslaunch_plan(gpus=2, launch="direct")
    assert [w.name for w in plan.by_role("worker")] == ["worker-0.0", "worker-0.1"]
    assert all(w.command[:3] == (PYTHON, "-m", "pytest_bpsperf.remote.workload") for w in plan.by_role("worker"))
    assert all(w.env["BYTEPS_NUMA_ON"] == "0" for w in plan.by_role("worker"))


def test_bpslaunch_node_env_is_worker_env_without_the_per_rank_part():
    window = TraceWindow(3, 6, "trace/worker-1")
    node = bpslaunch_node_env(worker_id=1, local_size=2, num_workers=2, trace=window)
    rank0 = worker_env(worker_id=1, local_rank=0, local_size=2, num_workers=2, trace=window)
    assert node == {k: v for k, v in rank0.items() if k not in ("BYTEPS_LOCAL_RANK", "BYTEPS_LOCAL_SIZE",
                                                                 "BYTEPS_NUMA_ON")}


def test_mxnet_backend_refuses_bpslaunch_at_plan_time():
    from pytest_bpsperf.backends import PlanError

    settings = resolve([Source("cli", "test", {"backend": "mxnet", "launch": "bpslaunch"})], Hardware(0, 2))
    with pytest.raises(PlanError, match="setting 'launch' .*needs backend byteps, not mxnet"):
        make_plan(settings, Trick("default"), [Node("n", "127.0.0.1", 2)], backend=backends.get("mxnet"), run_id="r")


@pytest.mark.parametrize("environ, numactl, nodes, expected, numa_on", [
    ({}, True, ["node0", "node1"], "pinned by numactl to bpslaunch's split of 2 NUMA node(s)", None),
    ({}, False, ["node0"], "unpinned: numactl is not installed", "0"),
    ({}, True, [], "unpinned: no NUMA information on this node", "0"),  # bpslaunch's split raises TypeError
    ({"BYTEPS_VISIBLE_CPU_CORES": "0-3:4-7"}, True, [], "pinned by numactl to BYTEPS_VISIBLE_CPU_CORES=0-3:4-7",
     None),
    ({"BYTEPS_NUMA_ON": "0"}, True, ["node0"], "unpinned (BYTEPS_NUMA_ON=0)", None),
])
def test_bpslaunch_runs_unpinned_where_it_cannot_pin_and_says_so(tmp_path, environ, numactl, nodes, expected,
                                                                  numa_on):
    from pytest_bpsperf.remote.bpslaunch import pinning

    for n in nodes:
        (tmp_path / n).mkdir()
    updates, message = pinning(environ, numa_dir=str(tmp_path), numactl=numactl)
    assert message.startswith(expected)
    assert updates.get("BYTEPS_NUMA_ON") == numa_on


def test_start_records_say_where_a_rank_may_run(tmp_path):
    from pytest_bpsperf.remote.workload import cpu_placement

    (tmp_path / "node0").mkdir()
    (tmp_path / "node0" / "cpulist").write_text("0-1023\n")
    (tmp_path / "node1").mkdir()
    (tmp_path / "node1" / "cpulist").write_text("4096-4100\n")
    found = cpu_placement(str(tmp_path))
    assert found["cpu_affinity"] and found["numa_nodes"] == [0]
    assert cpu_placement(str(tmp_path / "absent"))["numa_nodes"] is None
