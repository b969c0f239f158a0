"""Setting ``launch=bpslaunch``: one bpslaunch per BytePS worker node, as BytePS users start workers.

The plan is checked as a unit; the real ``bpslaunch`` (installed with the
BytePS server build) then runs the planned worker role through the plugin's
own role process, with stand-in worker processes instead of GPU training:
each local rank must get BytePS's per-rank variables and write its own
records, which the role reads back as one worker per GPU.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pytest_bpsperf import backends
from pytest_bpsperf.backends.byteps_env import TraceWindow, bpslaunch_node_env, worker_env
from pytest_bpsperf.config.settings import Hardware, Source, resolve
from pytest_bpsperf.config.tricks import Trick
from pytest_bpsperf.planning.model import Node
from pytest_bpsperf.planning.plan import PYTHON, RECORDS, make_plan
from pytest_bpsperf.remote.bpslaunch import has_numactl
from pytest_bpsperf.remote.roles import RoleProcess

BPSLAUNCH = Path(sys.executable).parent / "bpslaunch"
needs_bpslaunch = pytest.mark.skipif(
    not BPSLAUNCH.exists(), reason="needs bpslaunch: scripts/install-byteps-server.sh installs it")
SHIM = (PYTHON, "-m", "pytest_bpsperf.remote.bpslaunch")

STAND_IN = """
import json, os, sys
from pytest_bpsperf.remote.environ import rank_records_path, reported
path = rank_records_path(sys.argv[1], os.environ["BYTEPS_LOCAL_RANK"])
with open(path, "w") as fh:
    fh.write(json.dumps({"event": "start", "env": reported(os.environ)}) + "\\n")
    for i in range(3):
        fh.write(json.dumps({"event": "step", "step": i, "total_s": 0.1, "images": 4}) + "\\n")
    fh.write(json.dumps({"event": "end"}) + "\\n")
"""


def _plan(gpus: int, launch: str = "bpslaunch", trick: "Trick | None" = None):
    values = {"backend": "byteps", "launch": launch, "workers": "1", "steps": "8", "batch_size": "4",
              "image_size": "32"}
    settings = resolve([Source("cli", "test", values)], Hardware(gpus=gpus, cores=2), backends.workload_defaults)
    nodes = [Node("cpu", "127.0.0.1", 2, 0, "cpu"), Node("gpu", "127.0.0.1", 2, gpus, "gpu")]
    return make_plan(settings, trick or Trick("default"), nodes, backend=backends.get("byteps"), run_id="bpslaunch-test")


def test_bpslaunch_mode_plans_one_launcher_per_worker_node():
    plan = _plan(gpus=4)
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
    plan = _plan(gpus=2, launch="direct")
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


@needs_bpslaunch
@pytest.mark.parametrize("gpus", [1, 3])
def test_real_bpslaunch_spawns_one_process_per_gpu_each_with_its_records(tmp_path, gpus):
    # bpslaunch's automatic NUMA split needs more cores than a 2-core machine has (IndexError in
    # bpslaunch); pin explicitly through a trick, as a user would export it: it must reach bpslaunch.
    cores = ":".join(["0", "1", "0"][:gpus])
    trick = Trick("pin", env={"worker": {"BYTEPS_VISIBLE_CPU_CORES": cores}})
    plan = _plan(gpus=gpus, trick=trick)
    [worker] = plan.by_role("worker")
    stand_in = tmp_path / "stand_in.py"
    stand_in.write_text(STAND_IN)
    command = list(worker.command[:3]) + [PYTHON, str(stand_in), RECORDS]
    role = RoleProcess(worker.name, str(tmp_path / "logs"))
    role.start(command, {**worker.env, "DMLC_PS_ROOT_URI": "127.0.0.1", "DMLC_PS_ROOT_PORT": "1"})
    try:
        code = role.wait(120)
    finally:
        role.stop()
    log = role.log_tail(60)
    assert code == 0, log
    assert "BytePS launching worker" in log
    per_process = role.process_records()
    assert [suffix for suffix, _ in per_process] == [f".{r}" for r in range(gpus)], log
    for rank, (_suffix, records) in enumerate(per_process):
        env = records[0]["env"]
        assert env["BYTEPS_LOCAL_RANK"] == str(rank) and env["BYTEPS_LOCAL_SIZE"] == str(gpus)
        assert env["NVIDIA_VISIBLE_DEVICES"] == ",".join(str(g) for g in range(gpus))
        assert env["DMLC_WORKER_ID"] == "0" and env["BPSPERF_RUN_ID"] == "bpslaunch-test"
        assert [r["event"] for r in records] == ["start", "step", "step", "step", "end"]
        assert env["BYTEPS_VISIBLE_CPU_CORES"] == cores
        # whether the ranks were pinned is in each rank's own record
        assert env["BPSPERF_PINNING"] == ("pinned by numactl to BYTEPS_VISIBLE_CPU_CORES=" + cores if has_numactl()
                                          else "unpinned: numactl is not installed on this node (bpslaunch pins "
                                               "through it: apt-get install numactl)")
    if has_numactl():
        assert "enable NUMA finetune" in log  # bpslaunch pinned each process
    else:  # bpslaunch would only warn: pinning is off, and the log says why
        assert "bpsperf: bpslaunch: unpinned: numactl is not installed" in log
        assert all(records[0]["env"]["BYTEPS_NUMA_ON"] == "0" for _s, records in per_process)


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


GPU_PERF_TEST = """
import pytest

pytestmark = pytest.mark.perf


@pytest.mark.bpsperf(dtype="float16")
def test_fp16(bpsperf_train):
    assert bpsperf_train().img_per_sec > 0


@pytest.mark.bpsperf(launch="bpslaunch")
def test_bpslaunch(bpsperf_train):
    assert bpsperf_train().img_per_sec > 0
"""

def test_fp16_and_bpslaunch_training_end_to_end_on_gpus(pytester, tmp_path):
    from test_byteps import GPU_INI, _byteps_mxnet_problem  # the BytePS GPU test's settings

    problem = _byteps_mxnet_problem()
    if problem:
        pytest.skip("fp16 and bpslaunch mode train on GPUs: needs CUDA GPUs and BytePS's MXNet worker build "
                    f"(byteps.mxnet importable): {problem}")
    pytester.makeini(GPU_INI)
    pytester.makepyfile(test_perf=GPU_PERF_TEST)
    out = tmp_path / "result.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-m", "perf", f"--bpsperf-json={out}")
    result.assert_outcomes(passed=2)
    tests = {t["test"].split("::")[-1]: t for t in json.loads(out.read_text())["tests"]}
    assert tests["test_fp16"]["settings"]["dtype"] == "float16"
    spawned = tests["test_bpslaunch"]
    [launcher] = [r for r in spawned["roles"] if r["role"] == "worker"]
    assert launcher["name"] == "worker-0"  # one bpslaunch for the node ...
    # ... that started one training process per GPU, each measured
    assert sorted(spawned["per_worker_img_per_sec"]) == [f"worker-0.{r}" for r in range(len(spawned["per_worker_img_per_sec"]))]
