"""The byteps backend's real processes: bpslaunch, BytePS's scheduler and servers, GPU training.

- ``worker_env``/``server_env`` against bpslaunch itself, where BytePS is installed
  (it launches a command that records the environment each local rank got);
- BytePS's real scheduler and servers brought up through the plugin's own
  machinery (embedded Ray, role plan, RoleGroup) on a machine without GPUs;
- a full byteps training run through the plugin, on CUDA GPUs only.

The same rules as unit tests, and the comm.json timeline, are in ``tests/unit/backends/``
(``test_byteps_env.py``, ``test_byteps_timeline.py``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from helpers.byteps_runs import GPU_INI, byteps_mxnet_problem
from helpers.procs import role_processes, wait_until
from pytest_bpsperf import backends
from pytest_bpsperf.backends.byteps_env import TraceWindow, server_env, server_library, worker_env
from pytest_bpsperf.config.settings import Hardware, Source, resolve

NEEDS_SERVER = "needs the BytePS server: scripts/install-byteps-server.sh"
BPSLAUNCH = Path(sys.executable).parent / "bpslaunch"


# -- worker_env / server_env, checked against bpslaunch itself ----------------------

DUMP_ENV = """
import json, os, sys
rank = os.environ.get("BYTEPS_LOCAL_RANK", "server")
with open(os.path.join(sys.argv[1], rank + ".json"), "w") as fh:
    json.dump(dict(os.environ), fh)
"""

needs_bpslaunch = pytest.mark.skipif(not BPSLAUNCH.exists(), reason=NEEDS_SERVER + " (it installs bpslaunch)")


def _bpslaunch(env: dict, argv: list, tmp_path: Path) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DMLC_", "BYTEPS_", "NVIDIA_", "CUDA_"))}
    return subprocess.run(
        [sys.executable, str(BPSLAUNCH), *argv],
        env={**base, **env},
        cwd=str(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        universal_newlines=True,
        timeout=60,
    )


@needs_bpslaunch
@pytest.mark.parametrize("local_size", [1, 3])
def test_bpslaunch_gives_each_local_rank_what_worker_env_gives(tmp_path, local_size):
    """bpslaunch starts one process per visible GPU; each must get worker_env's BytePS variables."""
    script = tmp_path / "dump.py"
    script.write_text(DUMP_ENV)
    out = tmp_path / "out"
    out.mkdir()
    window = TraceWindow(3, 6, str(tmp_path / "trace"))
    ours = [
        worker_env(
            worker_id=0, local_rank=r, local_size=local_size, num_workers=1, gpus=range(local_size), trace=window
        )
        for r in range(local_size)
    ]
    # what a user of bpslaunch exports for the node: everything but the per-rank variables
    node_env = {k: v for k, v in ours[0].items() if k not in ("BYTEPS_LOCAL_RANK", "BYTEPS_LOCAL_SIZE")}
    node_env.update({"DMLC_ROLE": "worker", "DMLC_NUM_WORKER": "1", "DMLC_NUM_SERVER": "1"})
    # bpslaunch joins its argv and runs it through a shell: one string
    proc = _bpslaunch(node_env, [f"{sys.executable} {script} {out}"], tmp_path)
    assert proc.returncode == 0, proc.stdout
    got = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}
    assert sorted(got) == [str(r) for r in range(local_size)], proc.stdout
    for rank in range(local_size):
        theirs = got[str(rank)]
        assert {k: theirs.get(k) for k in ours[rank]} == ours[rank]
        # bpslaunch creates <trace dir>/<local rank> (the workload does it when run without bpslaunch)
        assert os.path.isdir(window.rank_dir(rank))
    assert "Enable profiling" in proc.stdout


@needs_bpslaunch
@pytest.mark.parametrize("workers", [1, 2])
def test_bpslaunch_starts_a_server_with_server_env(tmp_path, workers):
    """bpslaunch runs `python3 -c 'import byteps.server'` from PATH: a stand-in records that it ran."""
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    stand_in = fake_bin / "python3"
    stand_in.write_text(f"#!/bin/sh\nexec {sys.executable} {tmp_path / 'dump.py'} {tmp_path}\n")
    stand_in.chmod(0o755)
    (tmp_path / "dump.py").write_text(DUMP_ENV)
    common = {
        "DMLC_ROLE": "server",
        "DMLC_NUM_WORKER": str(workers),
        "DMLC_NUM_SERVER": "1",
        "DMLC_PS_ROOT_URI": "127.0.0.1",
        "DMLC_PS_ROOT_PORT": "1",
        "PATH": f"{fake_bin}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    proc = _bpslaunch({**common, **server_env(num_workers=workers)}, [], tmp_path)
    assert proc.returncode == 0, proc.stdout
    ran = json.loads((tmp_path / "server.json").read_text())
    assert ran["BYTEPS_SERVER_ENGINE_THREAD"] == "4"
    if workers == 1:
        # the rule server_env exists for: without FORCE a one-worker job gets no server
        (tmp_path / "server.json").unlink()
        proc = _bpslaunch(common, [], tmp_path)
        assert proc.returncode == 0 and not (tmp_path / "server.json").exists(), proc.stdout


# -- BytePS's real server side through the plugin's machinery ---------------------


@pytest.fixture
def ray_cluster(tmp_path):
    from pytest_bpsperf.launch.cluster import RayCluster

    cluster = RayCluster(watch_dir=str(tmp_path)).start()
    try:
        yield cluster
    finally:
        cluster.close()
    assert not cluster.started


def _server_ports(log: str) -> set:
    pattern = r"cmd=ADD_NODE, node=\{ \[role=server, ip=127\.0\.0\.1, port=(\d+)"
    return set(re.findall(pattern, log))


@pytest.mark.skipif(server_library() is None, reason=NEEDS_SERVER)
def test_byteps_scheduler_and_servers_come_up_and_go(ray_cluster, tmp_path):
    pytest.importorskip("ray")
    from pytest_bpsperf.config.tricks import BUILTIN_TRICKS
    from pytest_bpsperf.launch.launcher import RoleGroup
    from pytest_bpsperf.planning.planner import make_plan

    settings = resolve(
        [Source("cli", "test", {"workers": "1", "servers_per_node": "2", "omp_threads": "3"})],
        Hardware(gpus=0, cores=2),
    )
    run_id = "bps-" + uuid.uuid4().hex[:8]
    plan = make_plan(
        settings,
        BUILTIN_TRICKS["omp-passive"],
        ray_cluster.nodes(),
        backend=backends.get("byteps"),
        run_id=run_id,
        verbose_ps=2,
        with_workers=False,
    )
    assert [r.name for r in plan.roles] == ["scheduler", "server-0", "server-1"]

    with RoleGroup(plan, str(tmp_path / "logs")) as group:
        group.start(timeout=120)
        assert group.root["DMLC_PS_ROOT_URI"] == "127.0.0.1"

        # every server registers with the scheduler (ps-lite's ADD_NODE, logged at PS_VERBOSE=2);
        # the deadline only bounds the wait
        def registered():
            tails = group.log_tails(200)
            return tails if len(_server_ports(tails["scheduler"])) == 2 else None

        tails = wait_until(registered, timeout=60)
        assert tails, group.log_tails(200)
        # without a worker, BytePS's scheduler and servers keep waiting: alive
        assert group.poll() == {"scheduler": None, "server-0": None, "server-1": None}
        assert role_processes(run_id), "the roles do not carry BPSPERF_RUN_ID"
        for name in ("server-0", "server-1"):
            assert "BytePS server engine uses 4 threads" in tails[name]
            assert "role=server, ip=127.0.0.1" in tails[name]
        assert (
            "Bind to [role=scheduler, id=1, ip=127.0.0.1, port=" + group.root["DMLC_PS_ROOT_PORT"]
            in (tails["scheduler"])
        )
    group.stop()  # idempotent

    outcomes = {o.name: o for o in group.outcomes()}
    for name in ("server-0", "server-1"):
        env = outcomes[name].environ  # read back from /proc/<pid>/environ of the live process
        assert env["OMP_WAIT_POLICY"] == "PASSIVE"
        assert env["OMP_NUM_THREADS"] == "3"
        assert env["DMLC_NODE_HOST"] == "127.0.0.1"
        assert env["DMLC_ROLE"] == "server"
        assert env["BYTEPS_SERVER_ENGINE_THREAD"] == "4"
        assert env["BPSPERF_RUN_ID"] == run_id
    sched = outcomes["scheduler"].environ
    assert "OMP_WAIT_POLICY" not in sched and sched["OMP_NUM_THREADS"] == "3"
    assert sched["DMLC_NODE_HOST"] == "127.0.0.1"
    for o in outcomes.values():
        assert o.killed and o.exit_code is not None  # stopped by the teardown, not exited
    assert wait_until(lambda: role_processes(run_id) == [], timeout=30), role_processes(run_id)


# -- full BytePS training through the plugin (GPU only) ----------------------------


GPU_PERF_TEST = """
import pytest

pytestmark = pytest.mark.perf


@pytest.mark.bpsperf_tricks("default", "omp-passive")
def test_train(bpsperf_train):
    result = bpsperf_train()
    assert result.img_per_sec > 0
"""


def test_byteps_training_end_to_end_on_gpus(pytester, tmp_path):
    problem = byteps_mxnet_problem()
    if problem:
        pytest.skip(f"needs CUDA GPUs and BytePS's MXNet worker build (byteps.mxnet importable): {problem}")
    pytester.makeini(GPU_INI)
    pytester.makepyfile(test_perf=GPU_PERF_TEST)
    out = tmp_path / "result.json"
    t0 = time.monotonic()
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-m", "perf", "--bpsperf-json", str(out))
    result.assert_outcomes(passed=2)
    doc = json.loads(out.read_text())
    tests = {t["trick"]: t for t in doc["tests"]}
    assert set(tests) == {"default", "omp-passive"}
    for entry in tests.values():
        assert entry["backend"] == "byteps"
        roles = {r["name"]: r for r in entry["roles"]}
        workers = sorted(n for n in roles if n.startswith("worker-0."))
        assert workers and set(entry["per_worker_img_per_sec"]) == set(workers)
        for name, role in roles.items():
            # BytePS's servers and scheduler exit by themselves once the worker shut down
            assert role["exit_code"] == 0 and not role["killed"], (name, role, time.monotonic() - t0)
            assert role["env"]["DMLC_NODE_HOST"] == "127.0.0.1"
        for rank, name in enumerate(workers):
            env = roles[name]["env"]
            assert env["BYTEPS_LOCAL_RANK"] == str(rank)
            assert env["BYTEPS_LOCAL_SIZE"] == str(len(workers))
            assert env["BYTEPS_FORCE_DISTRIBUTED"] == "1"
    passive = {r["name"]: r["env"] for r in tests["omp-passive"]["roles"]}
    assert passive["server-0"]["OMP_WAIT_POLICY"] == "PASSIVE"
    assert role_processes(doc["session_info"]["run_id"]) == []
