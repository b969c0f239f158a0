"""BytePS's GPU worker path end to end on CPUs: a simulated GPU cluster under the BytePS stand-in (tests only).

The cluster (``helpers.gpu_sim``): a head, two nodes with two fake V100 GPUs each, two server nodes,
every one a raylet on its own loopback address. The session's ``runtime_env`` puts the stand-in
first on every actor's path: ``byteps.mxnet`` is BytePS's MXNet plugin on CPU MXNet under BytePS's
rules, ``byteps.server`` MXNet's own parameter server, ``mx.gpu`` the CPU. Everything else is the
plugin's real GPU path: backend auto probing a GPU node, the BytePS preflight, one process per
(simulated) GPU or bpslaunch per node, the workload's GPU branches, .rec input, the scaling
references, Ray's GPU ids, the CPUs Ray holds, the reports and the baselines' refusal.
"""

from __future__ import annotations

import json
import os
import re
import sys
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from helpers.gpu_sim import GPU_IPS, SERVER_IPS, runtime_env, simulated_cluster
from helpers.procs import role_processes, wait_until

ray = pytest.importorskip("ray")
pytest.importorskip("mxnet")

from pytest_bpsperf import backends  # noqa: E402
from pytest_bpsperf.config.settings import Hardware, Source, resolve  # noqa: E402
from pytest_bpsperf.config.tricks import Trick  # noqa: E402
from pytest_bpsperf.planning.placement import is_head  # noqa: E402
from pytest_bpsperf.planning.planner import make_plan, reference_plan  # noqa: E402
from pytest_bpsperf.remote.environ import PYTHON, RECORDS  # noqa: E402
from pytest_bpsperf.remote.roles import scratch_dir  # noqa: E402

BPSLAUNCH = Path(sys.executable).parent / "bpslaunch"
DEFAULT = Trick("default")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with simulated_cluster(tmp_path_factory.mktemp("raytmp")) as c:
        yield c


PERF_TESTS = """
import pytest

pytestmark = pytest.mark.perf


def test_direct(bpsperf_train):
    assert bpsperf_train().img_per_sec > 0


@pytest.mark.bpsperf(launch="bpslaunch", data={rec!r}, data_threads=1, scaling=False,
                     role_env="worker:BYTEPS_NUMA_ON=0")
def test_bpslaunch_rec(bpsperf_train):
    assert bpsperf_train().img_per_sec > 0
"""

INI = """[pytest]
bpsperf_steps = 6
bpsperf_batch_size = 2
bpsperf_image_size = 32
bpsperf_model = mobilenet0.25
"""


@pytest.mark.skipif(not BPSLAUNCH.exists(), reason="needs bpslaunch: scripts/install-byteps-server.sh installs it")
def test_the_byteps_gpu_path_runs_end_to_end_on_a_simulated_cluster(cluster, pytester, tmp_path):
    from helpers.recdata import make_rec

    rec = make_rec(tmp_path / "data", images=16, size=40)
    pytester.makeini(INI)
    pytester.makepyfile(test_perf=PERF_TESTS.format(rec=str(rec)))
    out, logs, stored, history = (
        tmp_path / "result.json",
        tmp_path / "logs",
        tmp_path / "baselines",
        tmp_path / "history",
    )
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-m",
        "perf",
        f"--bpsperf-ray-address={cluster.address}",
        f"--bpsperf-runtime-env={runtime_env()}",
        f"--bpsperf-json={out}",
        f"--bpsperf-log-dir={logs}",
        "--bpsperf-update-baselines",
        f"--bpsperf-baselines-dir={stored}",
        f"--bpsperf-history={history}",
    )
    result.assert_outcomes(passed=2)
    doc = json.loads(out.read_text())
    info = doc["session_info"]
    # backend auto probed a GPU node, where byteps.mxnet imports: BytePS, no fallback
    assert info["backend_choice"].startswith("auto -> byteps") and info["backend_fallback"] is None
    # ... and the BytePS preflight pushed and pulled through a scheduler and a server before anything was timed
    preflight = [
        json.loads(line)
        for p in (logs / "preflight-push-pull").glob("worker-*.records.jsonl")
        for line in p.read_text().splitlines()
    ]
    assert [r["event"] for r in preflight] == ["start", "step", "end"] and preflight[1]["value"] == 1.0
    # a simulation, said in the results, on every run's line; never a baseline
    assert "BytePS stand-in" in doc["simulation"]
    result.stdout.fnmatch_lines(
        [
            "*test_direct*img/s*SIMULATION (a stand-in ran, never a baseline)*",
            "*refused: *test_direct [[]default[]]: a simulation is never a baseline*",
        ]
    )
    assert result.ret != 0 and not any(stored.glob("*.json"))
    result.stdout.fnmatch_lines(["bpsperf: history not saved: a simulation (BytePS stand-in*"])
    assert not any(history.rglob("*.json"))
    tests = {t["test"].split("::")[-1]: t for t in doc["tests"]}
    for entry in tests.values():
        assert entry["backend"] == "byteps" and entry["simulation"]
        _check_roles(entry, info["run_id"])
        # windowed timing on GPUs by default: a sync every 2 of the 6 steps (at most a third of them)
        assert entry["settings"]["sync_every"] == 2 and entry["settings"]["server_nodes"] == 2
    direct, spawned = tests["test_direct"], tests["test_bpslaunch_rec"]
    assert sorted(direct["per_worker_img_per_sec"]) == ["worker-0.0", "worker-0.1", "worker-1.0", "worker-1.1"]
    assert direct["single_img_per_sec"] > 0 and direct["node_img_per_sec"] > 0  # both scaling references ran
    # bpslaunch: one role per node, which spawned a training process per simulated GPU, each measured
    assert sorted(r["name"] for r in spawned["roles"] if r["role"] == "worker") == ["worker-0", "worker-1"]
    assert sorted(spawned["per_worker_img_per_sec"]) == ["worker-0.0", "worker-0.1", "worker-1.0", "worker-1.1"]
    assert spawned["settings"]["data"] == str(rec)
    # every worker trained with BytePS's DistributedTrainer, which broadcast the parameters itself
    for entry in tests.values():
        for role in entry["roles"]:
            if role["role"] == "worker":
                log = open(role["log_path"]).read()
                assert "DistributedTrainer broadcast" in log and "from rank 0 at its first step" in log, log[-2000:]
    assert role_processes(info["run_id"]) == []
    assert not os.path.exists(scratch_dir(info["run_id"]))  # the sockets' directory went with the roles


def _check_roles(entry: dict, run_id: str) -> None:
    roles = {r["name"]: r for r in entry["roles"]}
    ran = {name: r["ran_on"]["ip"] for name, r in roles.items()}
    # server_nodes auto: a server on each server node, as many as the worker nodes
    assert sorted(ip for name, ip in ran.items() if name.startswith("server")) == list(SERVER_IPS)
    assert ran["scheduler"] in SERVER_IPS
    sockets = {}
    for name, role in roles.items():
        assert role["exit_code"] == 0, (name, role)
        assert role["ran_on"]["cpus"] > 0, name  # Ray held CPUs for every role
        if role["role"] != "worker":
            continue
        env = role["env"]
        assert ran[name] in GPU_IPS and env["BPSPERF_SIMULATION"]
        # the node's local ranks' sockets: a directory of this run and worker node
        sockets.setdefault(env["DMLC_WORKER_ID"], set()).add(env["BYTEPS_SOCKET_PATH"])
        assert env["BYTEPS_SOCKET_PATH"].startswith(scratch_dir(run_id))
        if "." in name:  # one process per GPU: the GPU Ray gave its actor is its local rank's
            ids = sorted(
                g for n, r in roles.items() if n.startswith(name.split(".")[0] + ".") for g in r["ran_on"]["gpu_ids"]
            )
            assert env["CUDA_VISIBLE_DEVICES"] == ",".join(map(str, ids))
            assert role["ran_on"]["gpu_ids"] == [ids[int(env["BYTEPS_LOCAL_RANK"])]]
    assert len(sockets) == 2 and all(len(paths) == 1 for paths in sockets.values())
    assert sockets["0"] != sockets["1"]


# -- the rules one at a time, on the same cluster ----------------------------------------------


def settings(**values):
    return resolve(
        [Source("cli", "test", {k: str(v) for k, v in values.items()})],
        Hardware(gpus=2, cores=1),
        backends.workload_defaults,
    )


DUMP = (
    "import json, os, sys, time; f = open(sys.argv[1], 'w'); "
    "f.write(json.dumps({'event': 'start', 'env': dict(os.environ)}) + '\\n'); f.flush(); "
    "time.sleep(float(sys.argv[2])); f.write(json.dumps({'event': 'end'}) + '\\n')"
)


def _dumping(plan, seconds: float = 0.0):
    """``plan`` whose every role records its environment (and waits ``seconds``) instead of its command."""
    return replace(
        plan, roles=tuple(replace(r, command=(PYTHON, "-c", DUMP, RECORDS, str(seconds))) for r in plan.roles)
    )


def test_the_head_node_of_a_simulated_cluster_is_known_and_hosts_no_server(driver):
    nodes = sorted(driver.nodes(), key=lambda n: not is_head(n))  # head first, as the listing says
    assert [n.ip for n in nodes if is_head(n)] == ["127.0.0.1"] and nodes[0].cpus == 1
    # no node marked as a server node: the CPU-only nodes with CPUs serve, the head only where none is left
    plan = make_plan(
        settings(backend="byteps", server_resource="no_such_marker", server_nodes=2),
        DEFAULT,
        nodes,
        backend=backends.get("byteps"),
        run_id="head",
    )
    assert sorted(s.node.ip for s in plan.by_role("server")) == list(SERVER_IPS)
    assert plan.scheduler.node.ip != "127.0.0.1"


def test_the_per_gpu_reference_trains_on_the_gpu_ray_reserved(cluster, driver, tmp_path):
    from pytest_bpsperf.launch.launcher import run_roles

    node = next(n for n in driver.nodes() if n.ip == GPU_IPS[0])
    # someone else holds a GPU of the node: Ray gives the reference the other one
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from pytest_bpsperf.remote.roles import RoleProcess

    holder = (
        ray.remote(num_gpus=1, num_cpus=0)(RoleProcess)
        .options(scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False))
        .remote("holder", str(tmp_path))
    )
    taken = ray.get(holder.where.remote(), timeout=60)["gpu_ids"]
    s = settings(backend="byteps", workers=1)

    def plan_with(gpu_ids=None):
        return _dumping(
            reference_plan(
                s,
                DEFAULT,
                node,
                backend=backends.get("byteps"),
                run_id="ref-gpu",
                gpus=2,
                one_gpu=True,
                gpu_ids=gpu_ids,
            )
        )

    try:
        output = run_roles(plan_with(), str(tmp_path / "logs"), timeout=60, replan=plan_with)
    finally:
        ray.kill(holder)
    (role,) = output.roles
    (worker,) = output.workers
    assert list(role.gpu_ids) != taken and len(role.gpu_ids) == 1
    assert worker.start["env"]["CUDA_VISIBLE_DEVICES"] == str(role.gpu_ids[0])


def test_ray_holds_the_cpus_a_run_trains_on(driver, tmp_path):
    from ray._private import state

    from pytest_bpsperf.launch.launcher import RoleGroup

    s = settings(backend="byteps", workers=2)
    run_id = "cpus-" + uuid.uuid4().hex[:6]

    def plan_with(gpu_ids=None):
        return _dumping(
            make_plan(s, DEFAULT, driver.nodes(), backend=backends.get("byteps"), run_id=run_id, gpu_ids=gpu_ids),
            seconds=30,
        )

    used = {r.node.node_id for r in plan_with().roles}
    with RoleGroup(plan_with(), str(tmp_path / "logs")) as group:
        group.start(timeout=120, replan=plan_with)
        available = state.available_resources_per_node()
        # every node the run uses is held whole: other Ray work cannot land on its cores mid-run
        assert {n: round(available.get(n, {}).get("CPU", 0.0), 2) for n in used} == {n: 0.0 for n in used}
    after = state.available_resources_per_node()
    assert wait_until(
        lambda: all(state.available_resources_per_node().get(n, {}).get("CPU", 0) >= 1 for n in used), 30
    ), after


def test_a_chosen_network_interface_is_where_the_roles_bind(driver, tmp_path):
    from pytest_bpsperf.launch.launcher import RoleFailed, run_roles

    def plan_for(interface, run_id):
        s = settings(backend="byteps", workers=1, role_env=f"scheduler,server,worker:DMLC_INTERFACE={interface}")

        def plan_with(gpu_ids=None):
            return _dumping(
                make_plan(s, DEFAULT, driver.nodes(), backend=backends.get("byteps"), run_id=run_id, gpu_ids=gpu_ids)
            )

        return plan_with

    plan_with = plan_for("lo", "iface-lo")
    output = run_roles(plan_with(), str(tmp_path / "lo"), timeout=60, replan=plan_with)
    # the nodes are 127.0.0.2-5 to Ray; on interface lo every role is 127.0.0.1, the scheduler's address too
    assert {o.ip for o in output.roles} - {"127.0.0.1"}
    assert {o.environ["DMLC_NODE_HOST"] for o in output.roles} == {"127.0.0.1"}
    assert {o.environ["DMLC_PS_ROOT_URI"] for o in output.roles} == {"127.0.0.1"}
    plan_with = plan_for("no-such0", "iface-none")
    with pytest.raises(RoleFailed) as excinfo:
        run_roles(plan_with(), str(tmp_path / "none"), timeout=60, replan=plan_with)
    msg = str(excinfo.value)
    assert "DMLC_INTERFACE=no-such0: no such network interface on node" in msg and "lo" in msg
    assert re.search(r"scheduler on \S+ 127\.0\.0\.[45]", msg), msg
    assert role_processes("iface-none") == []


def test_the_preflight_without_its_declaration_stops_the_session(cluster, tmp_path, monkeypatch):
    """The blocker of issue 25: a push_pull of an undeclared tensor aborts BytePS (here, the stand-in)."""
    from pytest_bpsperf.backends import byteps
    from pytest_bpsperf.config.parsers import parse_runtime_env
    from pytest_bpsperf.launch.launcher import RoleFailed
    from pytest_bpsperf.launch.session import PerfSession
    from pytest_bpsperf.remote import byteps_preflight
    from pytest_bpsperf.runs.spec import RunSpec

    source = open(byteps_preflight.__file__).read()
    undeclared = "\n".join(line for line in source.splitlines() if "bps.byteps_declare_tensor(" not in line)

    class Undeclared(byteps.PushPullProbe):
        def worker_command(self, settings):
            return (PYTHON, "-c", undeclared, RECORDS)

    monkeypatch.setattr(byteps, "PushPullProbe", Undeclared)
    session = PerfSession(
        ray_address=cluster.address, base_log_dir=str(tmp_path), runtime_env=parse_runtime_env(runtime_env())
    )
    spec = RunSpec(
        nodeid="t::test",
        test="t::test",
        trick=DEFAULT,
        repeat=0,
        settings=settings(backend="byteps"),
        log_dir=str(tmp_path / "run"),
    )
    try:
        with pytest.raises(RoleFailed) as excinfo:
            session.push_pull_check(spec)
    finally:
        session.close()
    assert "worker-0.0 (exit -6)" in str(excinfo.value)
    assert "byteps.bpsperf.preflight is not initialized" in str(excinfo.value)
    assert role_processes(session.run_id) == []
