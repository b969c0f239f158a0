"""Setting ``launch=bpslaunch`` with the real ``bpslaunch`` (installed with the BytePS server build).

It runs the planned worker role through the plugin's own role process, with
stand-in worker processes instead of GPU training: each local rank must get
BytePS's per-rank variables and write its own records, which the role reads
back as one worker per GPU. On CUDA GPUs, fp16 and bpslaunch training run end
to end. The plan itself is checked in ``tests/unit/backends/test_byteps.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from helpers.byteps_runs import GPU_INI, bpslaunch_plan, byteps_mxnet_problem
from pytest_bpsperf.config.tricks import Trick
from pytest_bpsperf.remote.bpslaunch import has_numactl
from pytest_bpsperf.remote.environ import PYTHON, RECORDS
from pytest_bpsperf.remote.roles import RoleProcess

BPSLAUNCH = Path(sys.executable).parent / "bpslaunch"
needs_bpslaunch = pytest.mark.skipif(
    not BPSLAUNCH.exists(), reason="needs bpslaunch: scripts/install-byteps-server.sh installs it"
)

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


@needs_bpslaunch
@pytest.mark.parametrize("gpus", [1, 3])
def test_real_bpslaunch_spawns_one_process_per_gpu_each_with_its_records(tmp_path, gpus):
    # bpslaunch's automatic NUMA split needs more cores than a 2-core machine has (IndexError in
    # bpslaunch); pin explicitly through a trick, as a user would export it: it must reach bpslaunch.
    cores = ":".join(["0", "1", "0"][:gpus])
    trick = Trick("pin", env={"worker": {"BYTEPS_VISIBLE_CPU_CORES": cores}})
    plan = bpslaunch_plan(gpus=gpus, trick=trick)
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
        assert env["BPSPERF_PINNING"] == (
            "pinned by numactl to BYTEPS_VISIBLE_CPU_CORES=" + cores
            if has_numactl()
            else "unpinned: numactl is not installed on this node (bpslaunch pins through it: apt-get install numactl)"
        )
    if has_numactl():
        assert "enable NUMA finetune" in log  # bpslaunch pinned each process
    else:  # bpslaunch would only warn: pinning is off, and the log says why
        assert "bpsperf: bpslaunch: unpinned: numactl is not installed" in log
        assert all(records[0]["env"]["BYTEPS_NUMA_ON"] == "0" for _s, records in per_process)


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
    problem = byteps_mxnet_problem()
    if problem:
        pytest.skip(
            "fp16 and bpslaunch mode train on GPUs: needs CUDA GPUs and BytePS's MXNet worker build "
            f"(byteps.mxnet importable): {problem}"
        )
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
    assert sorted(spawned["per_worker_img_per_sec"]) == [
        f"worker-0.{r}" for r in range(len(spawned["per_worker_img_per_sec"]))
    ]
