"""``backends/byteps.py``: the BytePS backend's plans, its push/pull probe and its timelines.

Setting ``launch=bpslaunch``: one bpslaunch per BytePS worker node, as BytePS users start workers; the
roles' environments in a plan; the preflight's push_pull through a real scheduler and server; the
timelines collected from ``comm.json``; a GPU its stack cannot run, refused by the probe. The real
``bpslaunch`` running the planned worker role is in ``tests/e2e/test_e2e_bpslaunch.py``; BytePS's real
scheduler, servers and GPU training in ``tests/e2e/test_e2e_byteps.py``.
"""

from __future__ import annotations

import json
import sys

import pytest

from helpers.byteps_runs import bpslaunch_plan
from helpers.results import REGISTRY
from pytest_bpsperf import backends
from pytest_bpsperf.backends.byteps_env import (
    bpslaunch_node_env,
    server_env,
    worker_env,
)
from pytest_bpsperf.config.settings import Hardware, Source, resolve
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
    assert {
        k: worker.env[k] for k in bpslaunch_node_env(worker_id=0, local_size=4, num_workers=1)
    } == bpslaunch_node_env(worker_id=0, local_size=4, num_workers=1)
    for per_rank in ("BYTEPS_LOCAL_RANK", "BYTEPS_LOCAL_SIZE", "BYTEPS_NUMA_ON"):
        assert per_rank not in worker.env  # NUMA pinning: bpslaunch's default, on
    assert worker.env["NVIDIA_VISIBLE_DEVICES"] == "0,1,2,3"
    assert plan.worker_processes == 4 and plan.topology()["worker_processes"] == 4


def test_direct_mode_is_the_default_one_process_per_gpu():
    plan = bpslaunch_plan(gpus=2, launch="direct")
    assert [w.name for w in plan.by_role("worker")] == ["worker-0.0", "worker-0.1"]
    assert all(w.command[:3] == (PYTHON, "-m", "pytest_bpsperf.remote.workload") for w in plan.by_role("worker"))
    assert all(w.env["BYTEPS_NUMA_ON"] == "0" for w in plan.by_role("worker"))


def _plan(with_workers=True, **values):
    from pytest_bpsperf.config.tricks import BUILTIN_TRICKS

    settings = resolve([Source("cli", "test", values)], Hardware(gpus=0, cores=2))
    nodes = [Node("cpu", "10.0.1.1", 16, 0, "cpu"), Node("gpu", "10.0.0.1", 32, 2, "gpu")]
    return make_plan(
        settings,
        BUILTIN_TRICKS["omp-passive"],
        nodes,
        backend=backends.get("byteps"),
        run_id="r",
        with_workers=with_workers,
        verbose_ps=2,
    )


def test_plan_gives_byteps_roles_their_environment():
    plan = _plan(workers="1")
    workers = plan.by_role("worker")
    assert [w.name for w in workers] == ["worker-0.0", "worker-0.1"]
    for rank, w in enumerate(workers):
        expected = worker_env(worker_id=0, local_rank=rank, local_size=2, num_workers=1)
        assert {k: w.env[k] for k in expected} == expected
        assert w.env["DMLC_NODE_HOST"] == "10.0.0.1"
    for s in plan.by_role("server"):
        assert {k: s.env[k] for k in server_env(num_workers=1)} == server_env(num_workers=1)
    assert {r.env["PS_VERBOSE"] for r in plan.roles} == {"2"}


def test_server_side_plan_without_gpus():
    from pytest_bpsperf.config.tricks import BUILTIN_TRICKS
    from pytest_bpsperf.planning.planner import make_plan
    from pytest_bpsperf.runs.plan import Node, PlanError

    settings = resolve([Source("cli", "test", {"workers": "2"})], Hardware(gpus=0, cores=2))
    cpu_only = [Node("n0", "127.0.0.1", 2, 0)]
    with pytest.raises(PlanError, match="GPU worker node"):
        make_plan(settings, BUILTIN_TRICKS["default"], cpu_only, backend=backends.get("byteps"), run_id="r")
    plan = make_plan(
        settings, BUILTIN_TRICKS["default"], cpu_only, backend=backends.get("byteps"), run_id="r", with_workers=False
    )
    assert [r.name for r in plan.roles] == ["scheduler", "server-0"]
    assert plan.worker_processes == 0
    # the servers still wait for the configured workers
    assert {r.env["DMLC_NUM_WORKER"] for r in plan.roles} == {"2"}
    with pytest.raises(PlanError, match="PS_VERBOSE"):
        make_plan(
            settings,
            BUILTIN_TRICKS["default"],
            cpu_only,
            backend=backends.get("byteps"),
            run_id="r",
            with_workers=False,
            verbose_ps=3,
        )


def test_the_byteps_preflight_is_one_push_pull_through_a_real_scheduler_and_server():
    from pytest_bpsperf.backends.byteps import PushPullProbe
    from pytest_bpsperf.config.tricks import BUILTIN_TRICKS
    from pytest_bpsperf.planning.planner import make_plan
    from pytest_bpsperf.runs.plan import Node

    s = resolve([Source("cli", "c", {"backend": "byteps", "workers": "1"})], Hardware(gpus=8, cores=8))
    nodes = [Node("g", "10.0.0.2", 8, 8, "gpu"), Node("c", "10.0.0.3", 8, 0, "cpu")]
    plan = make_plan(
        s.with_values(gpus_per_worker=1), BUILTIN_TRICKS["default"], nodes, backend=PushPullProbe(), run_id="pre"
    )
    assert [r.role for r in plan.roles] == ["scheduler", "server", "worker"]
    (worker,) = plan.by_role("worker")
    assert worker.gpus == 1 and worker.env["BYTEPS_FORCE_DISTRIBUTED"] == "1"  # through the server, not NCCL only
    assert worker.command[1:3] == ("-m", "pytest_bpsperf.remote.byteps_preflight") and worker.command[-1] == "{records}"
    assert plan.backend == "byteps"  # the launcher collects as for BytePS (nothing: no trace)


def test_the_byteps_probe_refuses_a_gpu_its_stack_cannot_run(monkeypatch):
    import types

    from pytest_bpsperf.remote import gpu_stack

    monkeypatch.setitem(sys.modules, "byteps", types.ModuleType("byteps"))
    monkeypatch.setitem(sys.modules, "byteps.mxnet", types.ModuleType("byteps.mxnet"))
    monkeypatch.setattr(gpu_stack, "node_gpus", lambda: [(0, "NVIDIA H200", 9.0)])
    monkeypatch.setattr(gpu_stack, "mxnet_cuda", lambda: ((11, 2), "mxnet-cu112"))
    problem = backends.get("byteps").probe()
    assert problem and "compute capability 9.0 (Hopper)" in problem
    monkeypatch.setattr(gpu_stack, "node_gpus", lambda: [(0, "Tesla V100-SXM2-32GB", 7.0)])
    assert backends.get("byteps").probe() is None


def test_byteps_backend_collects_timelines_from_comm_json():
    """What the launcher fetches from the workers' trace dirs becomes a PUSH/PULL summary per node."""
    from pytest_bpsperf import backends
    from pytest_bpsperf.planning.planner import make_plan
    from pytest_bpsperf.runs.plan import Node

    gpu = Node("g", "10.9.9.9", 8, 1, "gpu")
    s = resolve(
        [Source("cli", "command line", {"trace": "3:4", "steps": "10", "workers": "1"})], Hardware(gpus=1, cores=8)
    )
    plan = make_plan(s, REGISTRY.get("default"), [gpu], backend=backends.get("byteps"), run_id="r")
    byteps = backends.get("byteps")
    (worker,) = plan.by_role("worker")
    assert byteps.artifact_dirs(worker) == ("trace/worker-0/0",)  # the root local rank's directory alone
    # two traced steps of one tensor, each with a PUSH and a PULL of one partition (us)
    events = []
    for t0 in (0, 1_000_000):
        events += [
            {"name": "Comm.w", "ph": "X", "tid": "total", "ts": t0, "dur": 300_000, "pid": 0},
            {"name": "Comm.w.PUSH", "ph": "X", "tid": "1", "ts": t0, "dur": 100_000, "pid": 0},
            {"name": "Comm.w.PULL", "ph": "X", "tid": "1", "ts": t0 + 100_000, "dur": 200_000, "pid": 0},
        ]
    files = {worker.name: {"trace/worker-0/0/comm.json": json.dumps({"traceEvents": events})}}
    (window,) = byteps.collect(plan, files)
    assert window.name == "trace/worker-0"
    assert window.push_s == pytest.approx(0.1)
    assert window.pull_s == pytest.approx(0.2)
    (empty,) = byteps.collect(plan, {worker.name: {}})
    assert empty.error is not None


def test_byteps_timeline_reads_the_root_local_rank_only():
    """BytePS's root local rank (the last) does PUSH/PULL; the other ranks' traces have none."""
    from pytest_bpsperf import backends
    from pytest_bpsperf.planning.planner import make_plan
    from pytest_bpsperf.runs.plan import Node

    gpu = Node("g", "10.9.9.9", 8, 4, "gpu")
    s = resolve(
        [Source("cli", "command line", {"trace": "3:4", "steps": "10", "workers": "1"})], Hardware(gpus=4, cores=8)
    )
    plan = make_plan(
        s,
        REGISTRY.get("default"),
        [gpu, Node("c", "10.9.9.8", 8, 0, "cpu")],
        backend=backends.get("byteps"),
        run_id="r",
    )
    byteps = backends.get("byteps")
    root_events, other_events = [], []
    for t0 in (0, 1_000_000):
        root_events += [
            {"name": "Comm.w", "ph": "X", "tid": "total", "ts": t0, "dur": 300_000, "pid": 0},
            {"name": "Comm.w.PUSH", "ph": "X", "tid": "1", "ts": t0, "dur": 100_000, "pid": 0},
            {"name": "Comm.w.PULL", "ph": "X", "tid": "1", "ts": t0 + 100_000, "dur": 200_000, "pid": 0},
        ]
        # a non-root rank only reduces and broadcasts locally: no PUSH, no PULL
        other_events += [
            {"name": "Comm.w", "ph": "X", "tid": "total", "ts": t0, "dur": 300_000, "pid": 0},
            {"name": "Comm.w.REDUCE", "ph": "X", "tid": "1", "ts": t0, "dur": 50_000, "pid": 0},
        ]
    texts = {
        f"trace/worker-0/{rank}/comm.json": json.dumps({"traceEvents": root_events if rank == 3 else other_events})
        for rank in range(4)
    }
    files = {w.name: texts for w in plan.by_role("worker")}
    (window,) = byteps.collect(plan, files)
    assert window.push_s == pytest.approx(0.1)  # averaging 4 ranks would give 0.025
    assert window.pull_s == pytest.approx(0.2)
    assert window.detail["ranks"] == 1
    # only the root rank's role fetches, and only its own directory
    assert [byteps.artifact_dirs(w) for w in plan.by_role("worker")] == [(), (), (), ("trace/worker-0/3",)]


def test_byteps_trace_with_bpslaunch_reads_the_root_rank_of_the_launchers_node():
    """With launch=bpslaunch one role runs every rank of a node (no BYTEPS_LOCAL_SIZE in its environment)."""
    from pytest_bpsperf import backends
    from pytest_bpsperf.planning.planner import make_plan
    from pytest_bpsperf.runs.plan import Node

    gpu = Node("g", "10.9.9.9", 8, 4, "gpu")
    s = resolve(
        [
            Source(
                "cli",
                "command line",
                {"trace": "3:4", "steps": "10", "workers": "1", "backend": "byteps", "launch": "bpslaunch"},
            )
        ],
        Hardware(gpus=4, cores=8),
    )
    plan = make_plan(
        s,
        REGISTRY.get("default"),
        [gpu, Node("c", "10.9.9.8", 8, 0, "cpu")],
        backend=backends.get("byteps"),
        run_id="r",
    )
    byteps = backends.get("byteps")
    (launcher,) = plan.by_role("worker")
    assert "BYTEPS_LOCAL_SIZE" not in launcher.env
    assert byteps.artifact_dirs(launcher) == ("trace/worker-0/3",)
    events = [{"name": "Comm.w", "ph": "X", "tid": "total", "ts": t0, "dur": 300_000, "pid": 0} for t0 in (0, 10**6)]
    events += [{"name": "Comm.w.PUSH", "ph": "X", "tid": "1", "ts": t0, "dur": 100_000, "pid": 0} for t0 in (0, 10**6)]
    (window,) = byteps.collect(
        plan, {launcher.name: {"trace/worker-0/3/comm.json": json.dumps({"traceEvents": events})}}
    )
    assert window.error is None and window.push_s == pytest.approx(0.1)


def test_the_byteps_probe_says_why_on_such_a_python(monkeypatch):
    # where MXNet has no wheels for the node's Python (faked: 3.13), the probe's import error says so
    from collections import namedtuple

    from pytest_bpsperf.backends import BytePSBackend

    python = namedtuple("version_info", "major minor micro releaselevel serial")(3, 13, 0, "final", 0)
    for name in ("mxnet", "byteps", "byteps.mxnet"):
        monkeypatch.setitem(sys.modules, name, None)
    with monkeypatch.context() as m:
        m.setattr(sys, "version_info", python)
        problem = BytePSBackend().probe()
    assert problem is not None and problem.startswith("byteps.mxnet does not import")
    assert "MXNet 1.9.1 has no wheels for Python 3.13" in problem and "--bpsperf-backend=torch" in problem
