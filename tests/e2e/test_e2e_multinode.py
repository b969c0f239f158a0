"""Real clusters, simulated here: one raylet per node, each on its own loopback address.

``ray.cluster_utils.Cluster`` starts, on this machine:

- a head at 127.0.0.1 with 0 CPUs (it must host nothing),
- two "GPU" nodes at 127.0.0.2 and 127.0.0.3 (1 CPU, 2 fake GPUs, ``accelerator_type:V100``),
- two CPU server nodes at 127.0.0.4 and 127.0.0.5 (1 CPU, the ``bpsperf_server`` resource).

Every test asserts from what the roles report (where their actors ran) and
from their logs; nothing is addressed outside 127.0.0.0/8.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import uuid
from pathlib import Path

import pytest

from helpers.entries import ENTRY
from helpers.procs import role_processes, wait_until
from helpers.repos import git, init

ray = pytest.importorskip("ray")
pytest.importorskip("mxnet")

from pytest_bpsperf import backends  # noqa: E402
from pytest_bpsperf.backends import BackendBase, BytePSBackend, PlanError  # noqa: E402
from pytest_bpsperf.backends.byteps_env import server_library  # noqa: E402
from pytest_bpsperf.config.settings import Hardware, Source, resolve  # noqa: E402
from pytest_bpsperf.config.tricks import TrickRegistry  # noqa: E402
from pytest_bpsperf.launch.launcher import RoleFailed, RoleGroup, run_roles  # noqa: E402
from pytest_bpsperf.planning.planner import make_plan  # noqa: E402
from pytest_bpsperf.remote.environ import PYTHON, RECORDS  # noqa: E402

GPU_IPS = ("127.0.0.2", "127.0.0.3")
SERVER_IPS = ("127.0.0.4", "127.0.0.5")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from ray.cluster_utils import Cluster

    # A private temp dir: the cluster's address file must not replace the machine's /tmp/ray one.
    tmp = tmp_path_factory.mktemp("raytmp")
    (tmp / "ray").mkdir()
    saved = {k: os.environ.get(k) for k in ("RAY_TMPDIR", "RAY_AUTH_MODE")}
    os.environ["RAY_TMPDIR"] = str(tmp)
    # A throw-away cluster on loopback: no token (Ray reads the mode once per process, so every
    # cluster these tests start must agree with the others; tests/e2e/test_e2e_cluster.py does the same)
    os.environ["RAY_AUTH_MODE"] = "disabled"
    c = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 0,
            "node_ip_address": "127.0.0.1",
            "include_dashboard": False,
            # notice a lost node in about 2 s instead of 15
            "_system_config": {
                "health_check_period_ms": 500,
                "health_check_failure_threshold": 3,
                "health_check_timeout_ms": 500,
            },
        },
    )
    for ip in GPU_IPS:
        c.add_node(num_cpus=1, num_gpus=2, node_ip_address=ip, resources={"accelerator_type:V100": 1})
    for ip in SERVER_IPS:
        c.add_node(num_cpus=1, node_ip_address=ip, resources={"bpsperf_server": 1})
    c.wait_for_nodes()
    try:
        yield c
    finally:
        c.shutdown()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def settings(**values):
    return resolve([Source("cli", "test", {k: str(v) for k, v in values.items()})], Hardware(gpus=2, cores=1))


DEFAULT = TrickRegistry().get("default")

PERF_TEST = """
import pytest

pytestmark = pytest.mark.perf


def test_train(bpsperf_train):
    assert bpsperf_train().img_per_sec > 0
"""


def test_mxnet_trains_across_nodes_where_ray_placed_each_role(cluster, pytester, tmp_path):
    pytester.makeini(
        "[pytest]\nbpsperf_steps = 5\nbpsperf_batch_size = 4\nbpsperf_image_size = 32\n"
        "bpsperf_backend = mxnet\nbpsperf_server_nodes = 2\n"
    )
    pytester.makepyfile(test_perf=PERF_TEST)
    out = tmp_path / "result.json"
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-m",
        "perf",
        "--bpsperf-ps-verbose",
        f"--bpsperf-ray-address={cluster.address}",
        f"--bpsperf-json={out}",
    )
    result.assert_outcomes(passed=1)
    doc = json.loads(out.read_text())
    (entry,) = doc["tests"]
    roles = {r["name"]: r for r in entry["roles"]}
    ran = {name: r["ran_on"]["ip"] for name, r in roles.items()}
    # every worker on its own GPU node, every server on its own server node, the head hosts nothing
    assert sorted([ran["worker-0"], ran["worker-1"]]) == list(GPU_IPS)
    assert sorted([ran["server-0"], ran["server-1"]]) == list(SERVER_IPS)
    assert ran["scheduler"] in SERVER_IPS
    for name, r in roles.items():
        assert r["exit_code"] == 0
        # defaults follow the worker nodes (GPU nodes: 4 OpenMP threads), not this 2-core driver
        assert r["env"]["OMP_NUM_THREADS"] == "4", name
        assert r["env"]["DMLC_PS_ROOT_URI"] == ran["scheduler"], name
        assert r["env"]["DMLC_NODE_HOST"] == ran[name], name
        assert r["ran_on"]["node_id"] and r["ran_on"]["hostname"]
    # ps-lite registration crossed the addresses: the scheduler saw both servers and both workers
    log = open(roles["scheduler"]["log_path"]).read()
    for ip in SERVER_IPS:
        assert re.search(rf"role=server, ip={re.escape(ip)}, port=", log), log[-2000:]
    for ip in GPU_IPS:
        assert re.search(rf"role=worker, ip={re.escape(ip)}, port=", log), log[-2000:]
    # the profile describes the nodes that trained (V100 GPU nodes), not this GPU-less machine
    profile_line = next(line for line in doc["session"] if line.startswith("profile: "))
    assert "gpu_count=2" in profile_line and "gpu_model=V100" in profile_line
    assert profile_line.split()[1].startswith("gpu-2xv100-")
    # the scaling reference ran (on a worker node: the head has no CPU to run it)
    assert entry["single_img_per_sec"] > 0
    assert role_processes(doc["session_info"]["run_id"]) == []


def test_auto_on_a_cluster_with_gpus_probes_a_gpu_node_and_trains(cluster, pytester, tmp_path):
    # backend auto (the default) on a cluster with GPUs: the BytePS probe runs on a GPU node
    # (this machine has no byteps.mxnet, so auto falls back to mxnet and says why)
    pytester.makeini("[pytest]\nbpsperf_workers = 1\nbpsperf_scaling = off\n")
    pytester.makepyfile(test_perf=PERF_TEST)
    out = tmp_path / "result.json"
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-m", "perf", f"--bpsperf-ray-address={cluster.address}", f"--bpsperf-json={out}"
    )
    result.assert_outcomes(passed=1)
    doc = json.loads(out.read_text())
    choice = doc["session_info"]["backend_choice"]
    assert choice.startswith("auto -> mxnet: on 127.0.0.") and choice.split()[4].split("/")[0] in GPU_IPS, choice
    assert "byteps.mxnet does not import" in choice
    (entry,) = doc["tests"]
    assert entry["backend"] == "mxnet"
    # no silent fallback: said without -v, and in the JSON with the node and the import error
    fallback = doc["session_info"]["backend_fallback"]
    assert fallback["node"].split("/")[0] in GPU_IPS and "byteps.mxnet does not import" in fallback["reason"]
    result.stdout.fnmatch_lines(
        [
            "*backend auto fell back to mxnet on a cluster with GPUs: BytePS will not run*",
            "BytePS never ran: auto fell back to mxnet on a cluster with GPUs (on node 127.0.0.*",
        ]
    )
    # the workers train on CPUs, at the CPU sizes (not 100 steps of batch 64 at 224 px)
    assert (entry["settings"]["steps"], entry["settings"]["batch_size"], entry["settings"]["image_size"]) == (20, 8, 32)
    assert role_processes(doc["session_info"]["run_id"]) == []


def test_byteps_set_on_a_cluster_whose_gpu_nodes_cannot_run_it_is_one_usage_error(cluster, pytester):
    pytester.makeini("[pytest]\nbpsperf_backend = byteps\n")
    pytester.makepyfile(test_perf=PERF_TEST)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-m", "perf", f"--bpsperf-ray-address={cluster.address}"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "backend byteps cannot run on the GPU node 127.0.0." in err and "byteps.mxnet does not import" in err
    assert "setting 'backend' from ini key bpsperf_backend" in err


def test_base_vs_head_ships_each_arms_tree_to_the_nodes(cluster, pytester, tmp_path):
    # A user's repository on the driver only: on a cluster each arm's tree travels with Ray's
    # runtime_env (as the plugin itself does), and the roles import the entry module from there.
    pytester.makepyfile(bench=ENTRY.format(extra=0), test_perf=PERF_TEST)
    pytester.makeini(
        "[pytest]\nbpsperf_entry = bench:build\nbpsperf_steps = 4\nbpsperf_batch_size = 2\n"
        "bpsperf_image_size = 16\nbpsperf_workers = 1\nbpsperf_scaling = off\nbpsperf_max_pairs = 3\n"
    )
    init(pytester.path)
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-q", "-m", "c")
    out = tmp_path / "result.json"
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-m",
        "perf",
        "--bpsperf-base=HEAD",
        f"--bpsperf-ray-address={cluster.address}",
        f"--bpsperf-json={out}",
    )
    assert result.ret in (0, 1), result.stdout.str()  # the verdict of 3 tiny pairs is not the point
    doc = json.loads(out.read_text())
    trees = {a: doc["base_vs_head"]["arms"][a]["tree"] for a in ("base", "head")}
    assert doc["base_vs_head"]["arms"]["base"]["versions"]["mxnet"]  # the preflight ran on the nodes
    for t in doc["tests"]:
        for w in t["workers"]:
            # unpacked by Ray on the worker's node, not read from the driver's checkout or worktree
            assert "runtime_resources" in w["entry_file"] and not w["entry_file"].startswith(trees[t["arm"]])
        for role in t["roles"]:
            assert role["env"]["BPSPERF_ARM"] == t["arm"]
    assert {t["arm"] for t in doc["tests"]} == {"base", "head"}
    assert role_processes(doc["session_info"]["run_id"]) == []


class StandInWorkers(BytePSBackend):
    """BytePS's plan and real servers; each worker process only records the environment it got."""

    def worker_command(self, settings):
        code = (
            "import json, os, sys; json.dump({'event': 'start', 'env': dict(os.environ)}, "
            "open(sys.argv[1], 'a')); open(sys.argv[1], 'a').write('\\n')"
        )
        return (PYTHON, "-c", code, RECORDS)


@pytest.mark.skipif(server_library() is None, reason="needs the BytePS server (scripts/install-byteps-server.sh)")
def test_byteps_plan_follows_rays_gpu_assignment_and_servers_register_across_nodes(driver, tmp_path):
    s = settings(workers=2, server_nodes=2, backend="byteps", omp_threads=1)
    backend = StandInWorkers()
    nodes = driver.nodes()
    run_id = "mn-" + uuid.uuid4().hex[:8]

    def plan_with(gpu_ids=None):
        return make_plan(s, DEFAULT, nodes, backend=backend, run_id=run_id, verbose_ps=2, gpu_ids=gpu_ids)

    with RoleGroup(plan_with(), str(tmp_path / "logs")) as group:
        group.start(timeout=120, placement_timeout=30, replan=plan_with)
        sched_ip = group.where["scheduler"]["ip"]
        assert sched_ip in SERVER_IPS and group.root["DMLC_PS_ROOT_URI"] == sched_ip

        def registered():
            tails = group.log_tails(400)
            ips = set(re.findall(r"cmd=ADD_NODE, node=\{ \[role=server, ip=(127\.0\.0\.\d+)", tails["scheduler"]))
            return tails if ips == set(SERVER_IPS) else None

        assert wait_until(registered, timeout=90), group.log_tails(400)["scheduler"][-3000:]
        assert wait_until(lambda: all(group.poll()[w.name] == 0 for w in group.plan.by_role("worker")), 60)
    envs = {w.name: w.start["env"] for w in group.records}
    assert set(envs) == {"worker-0.0", "worker-0.1", "worker-1.0", "worker-1.1"}
    for wid in (0, 1):
        names = [f"worker-{wid}.0", f"worker-{wid}.1"]
        ips = {group.where[n]["ip"] for n in names}
        assert len(ips) == 1 and ips <= set(GPU_IPS)  # one GPU node per worker node
        ray_ids = sorted(g for n in names for g in group.where[n]["gpu_ids"])
        for rank, name in enumerate(names):
            env = envs[name]
            assert env["DMLC_WORKER_ID"] == str(wid)
            assert env["BYTEPS_LOCAL_RANK"] == str(rank) and env["BYTEPS_LOCAL_SIZE"] == "2"
            # the visible devices are the GPUs Ray gave this run on the node, and local rank k
            # runs on the k-th of them: the one Ray assigned to that process's actor
            assert env["CUDA_VISIBLE_DEVICES"] == ",".join(map(str, ray_ids)) == env["NVIDIA_VISIBLE_DEVICES"]
            assert group.where[name]["gpu_ids"] == [ray_ids[rank]]
            assert env["DMLC_NODE_HOST"] == group.where[name]["ip"]
    for o in group.outcomes():
        assert o.environ["DMLC_PS_ROOT_URI"] == sched_ip, o.name
    assert role_processes(run_id) == []


@pytest.mark.parametrize(
    "values, message",
    [
        ({"workers": 3}, "needs 3 GPU worker node(s)"),
        ({"server_nodes": 3}, "3 server node(s) (setting 'server_nodes') need as many nodes with the custom resource"),
    ],
)
def test_impossible_shapes_fail_before_anything_starts(driver, values, message):
    t0 = time.monotonic()
    with pytest.raises(PlanError) as excinfo:
        make_plan(
            settings(backend="byteps", **values), DEFAULT, driver.nodes(), backend=backends.get("byteps"), run_id="r"
        )
    assert message in str(excinfo.value)
    assert "127.0.0.4" in str(excinfo.value)  # the message lists what each node has
    assert time.monotonic() - t0 < 30


def test_mixed_gpu_counts_are_an_error_on_a_real_cluster(cluster, driver):
    extra = cluster.add_node(
        num_cpus=1, num_gpus=1, node_ip_address="127.0.0.6", resources={"accelerator_type:V100": 1}
    )
    cluster.wait_for_nodes()
    try:
        with pytest.raises(PlanError, match="different GPU counts"):
            make_plan(
                settings(backend="byteps", workers=3),
                DEFAULT,
                driver.nodes(),
                backend=backends.get("byteps"),
                run_id="r",
            )
        plan = make_plan(
            settings(backend="byteps", workers=3, gpus_per_worker=1),
            DEFAULT,
            driver.nodes(),
            backend=backends.get("byteps"),
            run_id="r",
        )
        assert len(plan.by_role("worker")) == 3
    finally:
        cluster.remove_node(extra)


SLOW_RANKS = """
import json, os, sys, time
from pytest_bpsperf.remote.environ import rank_records_path

rank = os.environ["BYTEPS_LOCAL_RANK"]
stuck = os.environ.get("STUCK_RANK") == rank
with open(rank_records_path(sys.argv[1], rank), "w") as fh:
    fh.write(json.dumps({"event": "start", "batch_size": 4}) + "\\n")
    fh.flush()
    for i in range(12):
        time.sleep(40 if stuck and i == 3 else 0.4)
        fh.write(json.dumps({"event": "step", "step": i, "total_s": 0.4, "images": 4}) + "\\n")
        fh.flush()
    fh.write(json.dumps({"event": "end"}) + "\\n")
"""


class BpslaunchStandIn(BytePSBackend):
    """BytePS's plan with launch=bpslaunch, run by the real bpslaunch; its ranks only write slow steps."""

    def __init__(self, script):
        self.script = script

    def server_command(self):
        return (PYTHON, "-c", "import time; time.sleep(1)")

    def worker_command(self, settings):
        return (PYTHON, "-m", "pytest_bpsperf.remote.bpslaunch", PYTHON, self.script, RECORDS)


@pytest.mark.skipif(
    not (Path(sys.executable).parent / "bpslaunch").exists(),
    reason="needs bpslaunch: scripts/install-byteps-server.sh installs it",
)
@pytest.mark.parametrize("stuck", [False, True], ids=["progress", "stuck-rank"])
def test_bpslaunch_ranks_show_progress_and_a_stuck_rank_stalls_by_name(driver, tmp_path, monkeypatch, stuck):
    from pytest_bpsperf.config.tricks import Trick
    from pytest_bpsperf.launch import launcher
    from pytest_bpsperf.launch.watchdog import StallWatch

    monkeypatch.setattr(launcher, "PROGRESS_SECONDS", 1.0)
    script = tmp_path / "ranks.py"
    script.write_text(SLOW_RANKS)
    worker_env = {"BYTEPS_VISIBLE_CPU_CORES": "0:0"}  # bpslaunch's own NUMA split needs more cores
    if stuck:
        worker_env["STUCK_RANK"] = "1"
    trick = Trick("pin", env={"worker": worker_env})
    s = settings(workers=1, backend="byteps", launch="bpslaunch", omp_threads=1, steps=12)
    nodes = driver.nodes()
    backend = BpslaunchStandIn(str(script))

    def plan_with(gpu_ids=None):
        return make_plan(s, trick, nodes, backend=backend, run_id="bpsl-" + uuid.uuid4().hex[:6], gpu_ids=gpu_ids)

    lines = []
    t0 = time.monotonic()
    if stuck:
        with pytest.raises(RoleFailed) as excinfo:
            run_roles(
                plan_with(),
                str(tmp_path / "logs"),
                timeout=120,
                replan=plan_with,
                live=lines.append,
                label="job",
                steps=12,
                stall=StallWatch(4.0, "test"),
            )
        # the rank that stopped holds the node's role back: named, long before the 40 s it sleeps
        assert "stalled: worker-0 made no new step" in str(excinfo.value)
        assert time.monotonic() - t0 < 35
        return
    output = run_roles(
        plan_with(),
        str(tmp_path / "logs"),
        timeout=120,
        replan=plan_with,
        live=lines.append,
        label="job",
        steps=12,
        stall=StallWatch(4.0, "test"),
    )
    assert [w.name for w in output.workers] == ["worker-0.0", "worker-0.1"]
    assert all(len(w.steps) == 12 and w.finished for w in output.workers)
    # the live line reads the ranks' own records: the launcher saw them train
    steps_seen = [int(m.group(1)) for m in (re.search(r"step (\d+)/12", line) for line in lines) if m]
    assert steps_seen and max(steps_seen) >= 3, lines


TRAIN_THEN_EXIT = """
import json, sys
with open(sys.argv[1], "w") as fh:
    fh.write(json.dumps({"event": "start", "batch_size": 4}) + "\\n")
    for i in range(4):
        fh.write(json.dumps({"event": "step", "step": i, "total_s": 0.1, "images": 4}) + "\\n")
    if sys.argv[2] == "after":
        fh.write(json.dumps({"event": "end"}) + "\\n")
sys.exit(3)
"""


class ExitsAfterTraining(BackendBase):
    """Workers that write their records and then exit 3 (as a shutdown barrier that fails would)."""

    name = "mxnet"

    def __init__(self, when):
        self.when = when

    def server_command(self):
        return (PYTHON, "-c", "import time; time.sleep(2)")

    def worker_command(self, settings):
        return (PYTHON, "-c", TRAIN_THEN_EXIT, RECORDS, self.when)

    def worker_processes(self, settings, worker_id, node, gpus):
        from pytest_bpsperf.backends import WorkerProcess

        return (WorkerProcess(""),)


def test_an_exit_error_after_training_finished_is_said_not_a_failed_measurement(driver, tmp_path):
    plan = make_plan(settings(workers=1), DEFAULT, driver.nodes(), backend=ExitsAfterTraining("after"), run_id="x1")
    output = run_roles(plan, str(tmp_path / "a"), timeout=60)
    assert [w.finished for w in output.workers] == [True] and len(output.workers[0].steps) == 4
    assert output.notes == ("worker-0 exited 3 after training finished (shutdown)",)
    # the same exit before the end record is a failed run, as before
    plan = make_plan(settings(workers=1), DEFAULT, driver.nodes(), backend=ExitsAfterTraining("before"), run_id="x2")
    with pytest.raises(RoleFailed, match=r"worker-0 \(exit 3\)"):
        run_roles(plan, str(tmp_path / "b"), timeout=60)


class Sleepers(BackendBase):
    """Roles that just wait: servers and workers sleep (the run is stopped or lost, never finished)."""

    name = "mxnet"  # the launcher asks the registry what to collect: nothing

    def server_command(self):
        return (PYTHON, "-c", "import time; time.sleep(120)")

    def worker_command(self, settings):
        return (PYTHON, "-c", "import time; time.sleep(120)")

    def worker_processes(self, settings, worker_id, node, gpus):
        from pytest_bpsperf.backends import WorkerProcess

        return (WorkerProcess(""),)


def test_node_removed_before_the_run_fails_the_reservation_in_bounded_time(cluster, driver, tmp_path):
    extra = cluster.add_node(num_cpus=1, node_ip_address="127.0.0.7", resources={"bpsperf_server": 1})
    cluster.wait_for_nodes()
    nodes = driver.nodes()  # read while the node is alive ...
    plan = make_plan(settings(server_nodes=3), DEFAULT, nodes, backend=Sleepers(), run_id="gone")
    assert "127.0.0.7" in {r.node.ip for r in plan.by_role("server")}
    cluster.remove_node(extra)  # ... and gone when the run starts
    t0 = time.monotonic()
    with pytest.raises(RoleFailed) as excinfo:
        run_roles(plan, str(tmp_path / "logs"), timeout=60, placement_timeout=5)
    assert time.monotonic() - t0 < 60
    msg = str(excinfo.value)
    assert "could not reserve the run's nodes within 5s" in msg
    assert "127.0.0.7" in msg and "bpsperf_server" in msg  # what was asked and what each node has
    assert role_processes("gone") == []


def test_node_lost_mid_run_fails_naming_the_node_and_its_roles(cluster, driver, tmp_path):
    gpu = cluster.add_node(num_cpus=1, num_gpus=2, node_ip_address="127.0.0.8", resources={"accelerator_type:V100": 1})
    cluster.wait_for_nodes()
    nodes = [n for n in driver.nodes() if n.ip not in GPU_IPS]  # the new GPU node is the only one
    plan = make_plan(settings(workers=1), DEFAULT, nodes, backend=Sleepers(), run_id="lost")
    assert plan.by_role("worker")[0].node.ip == "127.0.0.8"

    def remove_soon():
        time.sleep(3)
        cluster.remove_node(gpu, allow_graceful=False)

    import threading

    threading.Thread(target=remove_soon, daemon=True).start()
    t0 = time.monotonic()
    with pytest.raises(RoleFailed) as excinfo:
        run_roles(plan, str(tmp_path / "logs"), timeout=90, placement_timeout=30)
    assert time.monotonic() - t0 < 80
    msg = str(excinfo.value)
    assert "127.0.0.8" in msg and "worker-0" in msg
    assert wait_until(lambda: role_processes("lost") == [], 30)
