"""``planning/planner.py``: role plans: placement, counts and the environment of every role.

The last tests pin the plans ``make_plan`` gave before it was split into parts (the run's common
environment, each role's layers, servers and workers apart). CPUs held and the GPU path's topology are in
``tests/unit/planning/test_placement.py``.
"""

from __future__ import annotations

import pytest

from pytest_bpsperf import backends
from pytest_bpsperf.backends import workload_command
from pytest_bpsperf.config.settings import Hardware, Source, resolve
from pytest_bpsperf.config.tricks import BUILTIN_TRICKS, Trick, TrickRegistry
from pytest_bpsperf.planning.planner import make_plan
from pytest_bpsperf.remote.environ import PYTHON, RECORDS
from pytest_bpsperf.remote.environ import scrub as clean_env
from pytest_bpsperf.runs.plan import Node, PlanError

EMBEDDED = Node("n0", "127.0.0.1", 2, 0)
GPU_NODES = [Node("gpu-a", "10.0.0.1", 32, 8, "gpu-a"), Node("gpu-b", "10.0.0.2", 32, 8, "gpu-b")]
CPU_NODES = [Node("cpu-a", "10.0.1.1", 16, 0, "cpu-a"), Node("cpu-b", "10.0.1.2", 16, 0, "cpu-b")]


def settings(**values):
    return resolve([Source("cli", "command line", values)] if values else [], Hardware(gpus=0, cores=2))


def trick(name):
    return TrickRegistry().get(name)


def plan_for(trick_name="default", nodes=(EMBEDDED,), backend="mxnet", **values):
    return make_plan(settings(**values), trick(trick_name), list(nodes), backend=backends.get(backend), run_id="run-1")


def test_embedded_mxnet_roles():
    plan = plan_for()
    assert [r.name for r in plan.roles] == ["scheduler", "server-0", "worker-0", "worker-1"]
    assert [r.role for r in plan.roles] == ["scheduler", "server", "worker", "worker"]
    assert all(r.node == EMBEDDED for r in plan.roles)
    assert plan.scheduler.role == "scheduler"
    assert len(plan.by_role("server")) == 1
    assert len(plan.by_role("worker")) == 2
    assert (plan.num_workers, plan.num_servers, plan.worker_processes) == (2, 1, 2)
    assert plan.topology() == {
        "workers": 2,
        "worker_processes": 2,
        "server_nodes": 1,
        "servers_per_node": 1,
        "servers": 1,
        "machines": 1,
    }
    assert [r.worker_rank for r in plan.by_role("worker")] == [0, 1]


def test_embedded_mxnet_env_is_the_ps_lite_protocol():
    plan = plan_for()
    for r in plan.roles:
        assert r.env["DMLC_NUM_WORKER"] == "2"
        assert r.env["DMLC_NUM_SERVER"] == "1"
        assert r.env["DMLC_ROLE"] == r.role
        assert r.env["DMLC_NODE_HOST"] == "127.0.0.1"
        assert r.env["BPSPERF_RUN_ID"] == "run-1"
        assert "PS_VERBOSE" not in r.env
        # the launcher adds the scheduler's address once it has a port
        assert "DMLC_PS_ROOT_URI" not in r.env


def test_commands():
    plan = plan_for(steps="9", batch_size="3", image_size="40", model="resnet18_v1")
    assert plan.scheduler.command == (PYTHON, "-c", "import mxnet")
    assert plan.by_role("server")[0].command == (PYTHON, "-c", "import mxnet")
    cmd = plan.by_role("worker")[0].command
    assert cmd[:3] == (PYTHON, "-m", "pytest_bpsperf.remote.workload")
    args = dict(zip(cmd[3::2], cmd[4::2]))
    assert args == {
        "--backend": "mxnet",
        "--model": "resnet18_v1",
        "--steps": "9",
        "--batch-size": "3",
        "--image-size": "40",
        "--timing": "overlapped",
        "--dtype": "float32",
        "--data": "synthetic",
        "--data-threads": "4",
        "--records": RECORDS,
        "--diagnostic-steps": "3",
    }
    assert workload_command(settings(), "local")[4] == "local"
    # the single-process reference trains no diagnostic steps (it is never broken down)
    assert "--diagnostic-steps" not in workload_command(settings(), "local")
    assert "--diagnostic-steps" not in workload_command(settings(breakdown_steps="0"), "mxnet")


def test_verbose_ps_reaches_every_role():
    plan = make_plan(
        settings(), trick("default"), [EMBEDDED], backend=backends.get("mxnet"), run_id="r", verbose_ps=True
    )
    assert all(r.env["PS_VERBOSE"] == "1" for r in plan.roles)


@pytest.mark.parametrize("configured, expected", [({}, "2"), ({"omp_threads": "3"}, "3"), ({"omp_threads": "1"}, "1")])
def test_omp_num_threads_comes_from_settings(configured, expected):
    plan = plan_for(**configured)
    assert {r.env["OMP_NUM_THREADS"] for r in plan.roles} == {expected}


def test_omp_num_threads_is_never_ray_default_one_unless_configured():
    # Ray hands actors OMP_NUM_THREADS=1; the plan must set the configured value explicitly.
    plan = make_plan(
        resolve([], Hardware(gpus=0, cores=8)), trick("default"), [EMBEDDED], backend=backends.get("mxnet"), run_id="r"
    )
    assert {r.env["OMP_NUM_THREADS"] for r in plan.roles} == {"4"}


def test_omp_passive_env_only_on_server_and_worker():
    plan = plan_for("omp-passive")
    assert "OMP_WAIT_POLICY" not in plan.scheduler.env
    for r in plan.by_role("server") + plan.by_role("worker"):
        assert r.env["OMP_WAIT_POLICY"] == "PASSIVE"
    assert {r.env["OMP_NUM_THREADS"] for r in plan.roles} == {"2"}


def test_baseline_sets_no_wait_policy():
    assert all("OMP_WAIT_POLICY" not in r.env for r in plan_for().roles)


def test_trick_may_override_omp_num_threads_for_its_roles():
    t = Trick("omp-4", env={"server": {"OMP_NUM_THREADS": "4"}})
    plan = make_plan(settings(), t, [EMBEDDED], backend=backends.get("mxnet"), run_id="r")
    assert plan.by_role("server")[0].env["OMP_NUM_THREADS"] == "4"
    assert plan.scheduler.env["OMP_NUM_THREADS"] == "2"
    assert plan.by_role("worker")[0].env["OMP_NUM_THREADS"] == "2"


@pytest.mark.parametrize("name", ["extra-servers", "omp-passive+extra-servers"])
def test_extra_servers_doubles_servers(name):
    plan = plan_for(name)
    servers = plan.by_role("server")
    assert [r.name for r in servers] == ["server-0", "server-1"]
    assert plan.num_servers == 2
    assert plan.servers_per_node == 2
    assert {r.env["DMLC_NUM_SERVER"] for r in plan.roles} == {"2"}
    assert len(plan.by_role("worker")) == 2
    assert plan.topology()["servers"] == 2


def test_extra_servers_on_each_server_node():
    plan = plan_for("extra-servers", nodes=CPU_NODES, server_nodes="2", servers_per_node="2", colocate="on")
    servers = plan.by_role("server")
    assert len(servers) == 6
    assert [s.node.node_id for s in servers] == ["cpu-a"] * 3 + ["cpu-b"] * 3
    assert {r.env["DMLC_NUM_SERVER"] for r in plan.roles} == {"6"}
    assert (plan.server_nodes, plan.servers_per_node) == (2, 3)


def test_multi_node_placement_mxnet():
    nodes = [CPU_NODES[0], GPU_NODES[0], CPU_NODES[1], GPU_NODES[1]]
    plan = plan_for(nodes=nodes, workers="2", server_nodes="2")
    cpu_ids = {n.node_id for n in CPU_NODES}
    assert plan.scheduler.node.node_id in cpu_ids
    servers = plan.by_role("server")
    assert [s.node.node_id for s in servers] == ["cpu-a", "cpu-b"]
    workers = plan.by_role("worker")
    assert [w.node.node_id for w in workers] == ["gpu-a", "gpu-b"]
    for r in plan.roles:
        assert r.env["DMLC_NODE_HOST"] == r.node.ip
    assert plan.topology()["machines"] == 4


def test_mxnet_workers_stay_on_gpu_nodes_and_leave_cpu_nodes_to_servers():
    plan = plan_for(nodes=GPU_NODES + CPU_NODES, workers="3")
    assert [w.node.node_id for w in plan.by_role("worker")] == ["gpu-a", "gpu-b", "gpu-a"]
    assert all("GPU" not in b.resources for b in plan.bundles)  # a CPU backend holds no GPU
    # ... but the CPUs it trains on: each node's CPUs split among the run's processes there
    assert [r.cpus for r in plan.by_role("worker")] == [16.0, 32.0, 16.0]
    assert {s.node.node_id for s in plan.by_role("server")} <= {"cpu-a", "cpu-b"}


def test_more_workers_than_gpu_nodes_is_an_error_listing_the_nodes():
    with pytest.raises(PlanError) as excinfo:
        plan_for(nodes=GPU_NODES + CPU_NODES, workers="3", backend="byteps")
    msg = str(excinfo.value)
    assert "backend byteps needs 3 GPU worker node(s)" in msg and "the cluster has 2" in msg
    assert "gpu-a 10.0.0.1 (32 CPU, 8 GPU)" in msg and "cpu-b 10.0.1.2 (16 CPU, 0 GPU)" in msg


def test_cpu_cluster_keeps_server_nodes_apart_from_workers():
    plan = plan_for(nodes=CPU_NODES, workers="3")
    assert [w.node.node_id for w in plan.by_role("worker")] == ["cpu-b", "cpu-b", "cpu-b"]
    assert [s.node.node_id for s in plan.by_role("server")] == ["cpu-a"]


def test_servers_share_gpu_nodes_only_with_colocate():
    with pytest.raises(PlanError) as excinfo:
        plan_for(nodes=GPU_NODES, server_nodes="2")
    assert "setting 'colocate'" in str(excinfo.value) and "2 server node(s)" in str(excinfo.value)
    plan = plan_for(nodes=GPU_NODES, server_nodes="2", colocate="on")
    assert [s.node.node_id for s in plan.by_role("server")] == ["gpu-a", "gpu-b"]
    assert plan.scheduler.node.node_id == "gpu-a"


HEAD = Node("head", "127.0.0.1", 0, 0, "head")
MARKED = [Node(f"srv-{i}", f"127.0.0.{4 + i}", 1, 0, f"srv-{i}", {"CPU": 1, "bpsperf_server": 1}) for i in range(2)]
FAKE_GPU = [Node(f"g{i}", f"127.0.0.{2 + i}", 1, 2, f"g{i}", {"GPU": 2, "accelerator_type:V100": 1}) for i in range(2)]


def test_marked_server_nodes_take_the_servers_and_the_head_stays_out():
    plan = plan_for(nodes=[HEAD, Node("spare", "127.0.0.9", 4, 0, "spare")] + FAKE_GPU + MARKED, server_nodes="2")
    assert [s.node.node_id for s in plan.by_role("server")] == ["srv-0", "srv-1"]
    assert plan.scheduler.node.node_id == "srv-0"
    assert {w.node.node_id for w in plan.by_role("worker")} == {"g0", "g1"}
    with pytest.raises(PlanError, match="need as many nodes with the custom resource 'bpsperf_server'"):
        plan_for(nodes=[HEAD] + FAKE_GPU + MARKED, server_nodes="3")


def test_bundles_reserve_worker_gpus_and_server_nodes():
    plan = plan_for(nodes=[HEAD] + FAKE_GPU + MARKED, backend="byteps", server_nodes="2")
    # each bundle holds its node's CPUs too: the workers' (half a CPU per GPU process here), a sliver for
    # the scheduler and the rest of its node for the server
    assert [(b.node.node_id, dict(b.resources)) for b in plan.bundles] == [
        ("g0", {"GPU": 2.0, "CPU": 1.0}),
        ("g1", {"GPU": 2.0, "CPU": 1.0}),
        ("srv-0", {"CPU": 1.0}),
        ("srv-1", {"CPU": 1.0}),
    ]
    assert {r.name: r.cpus for r in plan.roles} == {
        "scheduler": 0.01,
        "server-0": 0.99,
        "server-1": 1.0,
        "worker-0.0": 0.5,
        "worker-0.1": 0.5,
        "worker-1.0": 0.5,
        "worker-1.1": 0.5,
    }
    assert {r.name: r.bundle for r in plan.roles if r.role != "worker"} == {
        "scheduler": 2,
        "server-0": 2,
        "server-1": 3,
    }
    assert {r.name: (r.bundle, r.gpus) for r in plan.by_role("worker")} == {
        "worker-0.0": (0, 1),
        "worker-0.1": (0, 1),
        "worker-1.0": (1, 1),
        "worker-1.1": (1, 1),
    }


def test_gpu_ids_from_ray_become_local_ranks_and_visible_devices():
    plan = make_plan(
        settings(),
        trick("default"),
        [HEAD] + FAKE_GPU + MARKED,
        backend=backends.get("byteps"),
        run_id="r",
        gpu_ids={0: [3, 1], 1: [0, 2]},
    )
    env = {r.name: r.env for r in plan.by_role("worker")}
    assert env["worker-0.0"]["CUDA_VISIBLE_DEVICES"] == "1,3" == env["worker-0.1"]["CUDA_VISIBLE_DEVICES"]
    assert (env["worker-0.0"]["BYTEPS_LOCAL_RANK"], env["worker-0.1"]["BYTEPS_LOCAL_RANK"]) == ("0", "1")
    assert env["worker-1.1"]["NVIDIA_VISIBLE_DEVICES"] == "0,2"
    assert {e["DMLC_WORKER_ID"] for n, e in env.items() if n.startswith("worker-1")} == {"1"}


def test_mixed_gpu_counts_need_gpus_per_worker():
    mixed = [Node("g8", "10.0.0.1", 32, 8, "g8"), Node("g4", "10.0.0.2", 32, 4, "g4")] + CPU_NODES
    with pytest.raises(PlanError, match="different GPU counts .*g8: 8, g4: 4.*'gpus_per_worker'"):
        plan_for(nodes=mixed, backend="byteps")
    plan = plan_for(nodes=mixed, backend="byteps", gpus_per_worker="4")
    assert len(plan.by_role("worker")) == 8
    assert {b.resources.get("GPU") for b in plan.bundles[:2]} == {4.0}
    with pytest.raises(PlanError, match="at least 6 GPU"):
        plan_for(nodes=mixed, backend="byteps", gpus_per_worker="6")


@pytest.mark.parametrize("nodes, have", [([EMBEDDED], 0), ([GPU_NODES[0]] + CPU_NODES, 1)])
def test_byteps_without_enough_gpu_nodes(nodes, have):
    with pytest.raises(PlanError) as excinfo:
        plan_for(nodes=nodes, backend="byteps", workers="2")
    msg = str(excinfo.value)
    assert "needs 2 GPU worker node(s)" in msg
    assert f"the cluster has {have}" in msg


def test_byteps_gpu_placement():
    pytest.importorskip("pytest_bpsperf.backends.byteps_env")
    nodes = CPU_NODES + GPU_NODES
    plan = plan_for(nodes=nodes, backend="byteps", workers="2", server_nodes="2")
    workers = plan.by_role("worker")
    assert len(workers) == 16  # one process per GPU
    assert plan.worker_processes == 16
    assert {w.node.node_id for w in workers} == {"gpu-a", "gpu-b"}
    assert [w.worker_rank for w in workers] == list(range(16))
    assert {s.node.node_id for s in plan.by_role("server")} == {"cpu-a", "cpu-b"}
    assert plan.scheduler.node.node_id in {"cpu-a", "cpu-b"}
    for s in plan.by_role("server"):
        assert s.env["BYTEPS_FORCE_DISTRIBUTED"] == "1"
        assert s.command == (PYTHON, "-c", "import byteps.server")
    assert {r.env["DMLC_NUM_WORKER"] for r in plan.roles} == {"2"}
    # one process per GPU: the node's worker id, a local rank each
    for wid, node in enumerate(GPU_NODES):
        on_node = [w for w in workers if w.node == node]
        assert {w.env["DMLC_WORKER_ID"] for w in on_node} == {str(wid)}
        assert sorted(int(w.env["BYTEPS_LOCAL_RANK"]) for w in on_node) == list(range(8))
        assert all(w.env["DMLC_ROLE"] == "worker" for w in on_node)
    assert "BYTEPS_LOCAL_RANK" not in plan.scheduler.env


@pytest.mark.parametrize("backend", ["auto", "tensorflow"])
def test_backend_must_be_resolved(backend):
    with pytest.raises(PlanError, match=repr(backend)):
        plan_for(backend=backend)


def test_no_nodes_is_an_error():
    with pytest.raises(PlanError, match="no alive nodes"):
        plan_for(nodes=[])


def test_user_variables_reach_roles_and_win_over_backend_defaults():
    engine = Trick("engine-8", env={"server": {"BYTEPS_SERVER_ENGINE_THREAD": "8", "DMLC_INTERFACE": "lo"}})
    s = settings(role_env="server,scheduler:DMLC_ENABLE_RDMA=1 worker:BYTEPS_ENABLE_IPC=0")
    plan = make_plan(s, engine, [HEAD] + FAKE_GPU + MARKED, backend=backends.get("byteps"), run_id="r")
    server = plan.by_role("server")[0].env
    assert server["BYTEPS_SERVER_ENGINE_THREAD"] == "8"  # the backend's default is 4
    assert (server["DMLC_INTERFACE"], server["DMLC_ENABLE_RDMA"]) == ("lo", "1")
    assert plan.scheduler.env["DMLC_ENABLE_RDMA"] == "1"
    assert all(w.env["BYTEPS_ENABLE_IPC"] == "0" for w in plan.by_role("worker"))


def test_plan_env_over_clean_env_gives_exactly_the_planned_openmp_settings():
    role = plan_for("omp-passive").by_role("worker")[0]
    final = {**clean_env({"OMP_NUM_THREADS": "1", "OMP_PROC_BIND": "true", "PATH": "/bin"}), **role.env}
    assert final["OMP_NUM_THREADS"] == "2"
    assert final["OMP_WAIT_POLICY"] == "PASSIVE"
    assert "OMP_PROC_BIND" not in final
    assert final["PATH"] == "/bin"


def test_builtin_tricks_pass_the_plan_check():
    for name in BUILTIN_TRICKS:
        plan_for(name)


def test_byteps_trace_window_reaches_every_worker_of_a_node():
    nodes = CPU_NODES + GPU_NODES
    plan = plan_for(nodes=nodes, backend="byteps", workers="2", trace="10:20", steps="30")
    for w in plan.by_role("worker"):
        wid = w.env["DMLC_WORKER_ID"]
        assert w.env["BYTEPS_TRACE_ON"] == "1"
        assert (w.env["BYTEPS_TRACE_START_STEP"], w.env["BYTEPS_TRACE_END_STEP"]) == ("10", "20")
        # one directory per worker node, relative to the role's log dir; local ranks write below it
        assert w.env["BYTEPS_TRACE_DIR"] == f"trace/worker-{wid}"
    assert all("BYTEPS_TRACE_ON" not in r.env for r in plan.roles if r.role != "worker")


@pytest.mark.parametrize(
    "backend, trace, steps, message",
    [
        ("mxnet", "10:20", "30", "needs backend byteps, not mxnet"),
        ("byteps", "1:5", "30", "must start at step 3 or later"),
        ("byteps", "10:20", "15", "trains only 15 steps"),
    ],
)
def test_unusable_trace_window_is_a_plan_error(backend, trace, steps, message):
    with pytest.raises(PlanError, match=message) as excinfo:
        plan_for(nodes=CPU_NODES + GPU_NODES, backend=backend, workers="2", trace=trace, steps=steps)
    assert "setting 'trace'" in str(excinfo.value)


def test_scaling_reference_trains_on_the_workers_device():
    from pytest_bpsperf.planning.planner import local_command
    from pytest_bpsperf.remote.workload import parse_args

    cpu = local_command(settings())
    gpu = local_command(settings(), "gpu")
    assert cpu[cpu.index("--backend") + 1] == "local" and cpu[-2:] == ("--device", "cpu")
    args = parse_args([a if a != RECORDS else "r.jsonl" for a in gpu[3:]])
    assert (args.backend, args.device) == ("local", "gpu")


def test_omp_threads_sets_the_byteps_servers_summation_threads_too():
    s = settings(omp_threads="3")
    plan = make_plan(s, Trick("default"), [HEAD] + FAKE_GPU + MARKED, backend=backends.get("byteps"), run_id="r")
    for server in plan.by_role("server"):
        assert server.env["BYTEPS_OMP_THREAD_PER_GPU"] == "3" and server.env["OMP_NUM_THREADS"] == "3"
    assert s.workload("byteps")["omp_threads"] == 3  # what the key records
    # a trick still wins over the backend's value
    more = Trick("sum-8", env={"server": {"BYTEPS_OMP_THREAD_PER_GPU": "8"}})
    plan = make_plan(s, more, [HEAD] + FAKE_GPU + MARKED, backend=backends.get("byteps"), run_id="r")
    assert {sv.env["BYTEPS_OMP_THREAD_PER_GPU"] for sv in plan.by_role("server")} == {"8"}


def test_the_scaling_reference_is_one_worker_node_alone_under_the_same_trick():
    from pytest_bpsperf.planning.planner import reference_plan

    passive = Trick(
        "omp-passive", env={"server": {"OMP_WAIT_POLICY": "PASSIVE"}, "worker": {"OMP_WAIT_POLICY": "PASSIVE"}}
    )
    # CPU: a worker node runs one process, so the node reference is one process, no kvstore
    cpu = reference_plan(settings(), passive, MARKED[0], backend=backends.get("mxnet"), run_id="r")
    (single,) = cpu.roles
    assert cpu.by_role("scheduler") == [] and cpu.num_servers == 0
    assert single.command[single.command.index("--backend") + 1] == "local"
    assert single.env["OMP_WAIT_POLICY"] == "PASSIVE" and single.env["OMP_NUM_THREADS"] == str(settings().omp_threads)
    assert cpu.bundles[0].resources == {"CPU": 1.0}  # the node's CPUs, for its one process
    # GPUs: every GPU of one worker node as one BytePS worker node, reducing on the node only
    node = reference_plan(settings(), passive, FAKE_GPU[0], backend=backends.get("byteps"), run_id="r", gpus=2)
    assert [r.name for r in node.roles] == ["node.0", "node.1"] and node.by_role("scheduler") == []
    for r in node.roles:
        assert r.env["DMLC_NUM_WORKER"] == "1" and "BYTEPS_FORCE_DISTRIBUTED" not in r.env
        assert r.env["OMP_WAIT_POLICY"] == "PASSIVE" and r.gpus == 1
        assert r.command[r.command.index("--backend") + 1] == "byteps"
    assert node.bundles[0].resources == {"GPU": 2.0, "CPU": 1.0} and node.worker_processes == 2
    # and one process on one GPU alone: the per-GPU figure
    (gpu,) = reference_plan(
        settings(), passive, FAKE_GPU[0], backend=backends.get("byteps"), run_id="r", gpus=2, one_gpu=True
    ).roles
    assert gpu.gpus == 1 and gpu.command[-2:] == ("--device", "gpu")


def _plan_settings(**values):
    from pytest_bpsperf.config.settings import Hardware, Source, resolve

    return resolve([Source("cli", "command line", values)] if values else [], Hardware(gpus=0, cores=2))


_LAYERED = dict(role_env="server,scheduler:DMLC_ENABLE_RDMA=1 worker:OMP_WAIT_POLICY=ACTIVE")


def _layered_trick():
    from pytest_bpsperf.config.tricks import Trick

    return Trick(
        "mixed",
        env={"worker": {"OMP_WAIT_POLICY": "PASSIVE", "KMP_BLOCKTIME": "0"}, "server": {"OMP_NUM_THREADS": "3"}},
    )


def _common(role, chosen):
    return [
        ("BPSPERF_CHOSEN_VARS", chosen),
        ("DMLC_NUM_WORKER", "2"),
        ("DMLC_NUM_SERVER", "1"),
        ("BPSPERF_RUN_ID", "run-1"),
        ("PS_VERBOSE", "2"),
        ("DMLC_ROLE", role),
        ("DMLC_NODE_HOST", "127.0.0.1"),
    ]


#: the embedded mxnet plan as make_plan made it before the split: (name, bundle, worker_rank, env in order)
EMBEDDED_PLAN = [
    (
        "scheduler",
        2,
        None,
        [("OMP_NUM_THREADS", "2"), ("DMLC_ENABLE_RDMA", "1")] + _common("scheduler", "DMLC_ENABLE_RDMA"),
    ),
    (
        "server-0",
        2,
        None,
        [("OMP_NUM_THREADS", "3"), ("DMLC_ENABLE_RDMA", "1")] + _common("server", "DMLC_ENABLE_RDMA,OMP_NUM_THREADS"),
    ),
    (
        "worker-0",
        0,
        0,
        [("OMP_NUM_THREADS", "2"), ("OMP_WAIT_POLICY", "PASSIVE"), ("KMP_BLOCKTIME", "0")]
        + _common("worker", "KMP_BLOCKTIME,OMP_WAIT_POLICY"),
    ),
    (
        "worker-1",
        1,
        1,
        [("OMP_NUM_THREADS", "2"), ("OMP_WAIT_POLICY", "PASSIVE"), ("KMP_BLOCKTIME", "0")]
        + _common("worker", "KMP_BLOCKTIME,OMP_WAIT_POLICY"),
    ),
]


def test_make_plan_gives_the_environments_it_gave_before_the_split():
    from pytest_bpsperf import backends
    from pytest_bpsperf.planning.planner import make_plan
    from pytest_bpsperf.runs.plan import Node

    plan = make_plan(
        _plan_settings(**_LAYERED),
        _layered_trick(),
        [Node("n0", "127.0.0.1", 2, 0)],
        backend=backends.get("mxnet"),
        run_id="run-1",
        verbose_ps=2,
    )
    assert [(r.name, r.bundle, r.worker_rank, list(r.env.items())) for r in plan.roles] == EMBEDDED_PLAN
    # the machine's 2 CPUs held by the run: a sliver for the scheduler, the rest split among its 3 processes
    assert [dict(b.resources) for b in plan.bundles] == [{"CPU": 0.66}, {"CPU": 0.66}, {"CPU": 0.67}]
    assert (plan.num_servers, plan.worker_processes, plan.servers_per_node) == (1, 2, 1)


def test_make_plan_places_byteps_processes_as_it_did_before_the_split():
    from pytest_bpsperf import backends
    from pytest_bpsperf.planning.planner import make_plan
    from pytest_bpsperf.runs.plan import Node

    head = Node("head", "127.0.0.1", 0, 0, "head")
    marked = [Node(f"srv-{i}", f"127.0.0.{4 + i}", 1, 0, f"srv-{i}", {"CPU": 1, "bpsperf_server": 1}) for i in range(2)]
    gpus = [Node(f"g{i}", f"127.0.0.{2 + i}", 1, 2, f"g{i}", {"GPU": 2, "accelerator_type:V100": 1}) for i in range(2)]
    plan = make_plan(
        _plan_settings(**_LAYERED),
        _layered_trick(),
        [head] + gpus + marked,
        backend=backends.get("byteps"),
        run_id="r",
        gpu_ids={0: [3, 1], 1: [0, 2]},
    )
    got = [
        (
            r.name,
            r.node.node_id,
            r.bundle,
            r.worker_rank,
            r.gpus,
            r.env.get("CUDA_VISIBLE_DEVICES"),
            r.env["BPSPERF_CHOSEN_VARS"],
            r.command[2],
        )
        for r in plan.roles
    ]
    server, worker = "import byteps.server", "pytest_bpsperf.remote.workload"
    assert got == [
        ("scheduler", "srv-0", 2, None, 0, None, "DMLC_ENABLE_RDMA", server),
        ("server-0", "srv-0", 2, None, 0, None, "DMLC_ENABLE_RDMA,OMP_NUM_THREADS", server),
        ("worker-0.0", "g0", 0, 0, 1, "1,3", "KMP_BLOCKTIME,OMP_WAIT_POLICY", worker),
        ("worker-0.1", "g0", 0, 1, 1, "1,3", "KMP_BLOCKTIME,OMP_WAIT_POLICY", worker),
        ("worker-1.0", "g1", 1, 2, 1, "0,2", "KMP_BLOCKTIME,OMP_WAIT_POLICY", worker),
        ("worker-1.1", "g1", 1, 3, 1, "0,2", "KMP_BLOCKTIME,OMP_WAIT_POLICY", worker),
    ]
    assert [(b.node.node_id, dict(b.resources)) for b in plan.bundles] == [
        ("g0", {"GPU": 2.0, "CPU": 1.0}),
        ("g1", {"GPU": 2.0, "CPU": 1.0}),
        ("srv-0", {"CPU": 1.0}),
    ]
    assert (plan.num_servers, plan.worker_processes) == (1, 4)


def test_plan_parts():
    from pytest_bpsperf import backends
    from pytest_bpsperf.planning import planner as plan
    from pytest_bpsperf.planning.placement import NodeKindPlacement
    from pytest_bpsperf.runs.plan import Node, PlanError

    s = _plan_settings(**_LAYERED)
    assert plan._run_env(s, 3, "r", False) == {"DMLC_NUM_WORKER": "2", "DMLC_NUM_SERVER": "3", "BPSPERF_RUN_ID": "r"}
    assert plan._run_env(s, 3, "r", True)["PS_VERBOSE"] == "1"
    with pytest.raises(PlanError, match="verbose_ps must be False, True, 1 or 2"):
        plan._run_env(s, 3, "r", 3)
    node = Node("n0", "10.0.0.7", 2, 0)
    env = plan._RoleEnv(s, _layered_trick(), {"DMLC_NUM_SERVER": "1"})
    # later wins: the backend, role_env, the trick, then what the planner owns
    got = env.for_role("worker", node, {"OMP_WAIT_POLICY": "SPIN", "KMP_BLOCKTIME": "5", "DMLC_WORKER_ID": "4"})
    assert (got["OMP_WAIT_POLICY"], got["KMP_BLOCKTIME"], got["DMLC_WORKER_ID"]) == ("PASSIVE", "0", "4")
    assert (got["DMLC_ROLE"], got["DMLC_NODE_HOST"], got["DMLC_NUM_SERVER"]) == ("worker", "10.0.0.7", "1")
    assert env.for_role("scheduler", node, {})["BPSPERF_CHOSEN_VARS"] == "DMLC_ENABLE_RDMA"
    from pytest_bpsperf.config.tricks import Trick

    plain = plan._RoleEnv(_plan_settings(), Trick("default"), {})
    assert "BPSPERF_CHOSEN_VARS" not in plain.for_role("worker", node, {})
    mxnet = backends.get("mxnet")
    where = NodeKindPlacement().place([node], s, mxnet, with_workers=True)
    servers = plan._server_roles(s, mxnet, where, 2, env)
    assert [(r.name, r.bundle) for r in servers] == [("scheduler", 2), ("server-0", 2), ("server-1", 2)]
    workers, rank = plan._worker_roles(s, mxnet, where, env, None)
    assert ([(r.name, r.worker_rank, r.bundle) for r in workers], rank) == ([("worker-0", 0, 0), ("worker-1", 1, 1)], 2)


def torch_settings(hardware=None, **values):
    hardware = hardware or Hardware(gpus=0, cores=2)
    return resolve(
        [Source("cli", "command line", {"backend": "torch", **values})], hardware, backends.workload_defaults
    )


def test_a_torch_run_is_its_ranks_alone_the_first_listening_for_the_others():
    plan = make_plan(torch_settings(), trick("omp-passive"), [EMBEDDED], backend=backends.get("torch"), run_id="r")
    assert [r.name for r in plan.roles] == ["worker-0", "worker-1"]  # no scheduler, no servers
    assert (plan.num_servers, plan.server_nodes, plan.worker_processes) == (0, 0, 2)
    assert plan.rendezvous == ("worker-0", "MASTER_ADDR", "MASTER_PORT")
    assert [(r.env["RANK"], r.env["WORLD_SIZE"]) for r in plan.roles] == [("0", "2"), ("1", "2")]
    assert all(r.env["OMP_WAIT_POLICY"] == "PASSIVE" for r in plan.roles)  # the trick's worker variables
    assert all(r.command[:3] == (PYTHON, "-m", "pytest_bpsperf.remote.workload") for r in plan.roles)
    command = plan.roles[0].command
    assert command[command.index("--framework") + 1] == "torch"
    assert plan.topology()["servers"] == 0
    assert [b.resources for b in plan.bundles] == [{"CPU": 1.0}, {"CPU": 1.0}]


def test_a_torch_run_on_gpu_nodes_reserves_their_gpus_one_rank_each():
    s = torch_settings(Hardware(gpus=8, cores=32, gpu_nodes=2), workers=2)
    plan = make_plan(s, trick("default"), GPU_NODES + CPU_NODES, backend=backends.get("torch"), run_id="r")
    workers = plan.by_role("worker")
    assert len(workers) == 16 and not plan.by_role("server")
    assert {r.node.name for r in workers} == {"gpu-a", "gpu-b"}  # the CPU nodes host nothing: no servers
    assert [r.env["RANK"] for r in workers] == [str(k) for k in range(16)]
    assert [b.resources["GPU"] for b in plan.bundles] == [8.0, 8.0]
    assert plan.rendezvous == ("worker-0.0", "MASTER_ADDR", "MASTER_PORT")


def test_a_trick_that_adds_servers_is_refused_by_a_backend_without_them_naming_both():
    with pytest.raises(PlanError, match=r"trick 'extra-servers' adds 1 server\(s\) per server node, and backend torch"):
        make_plan(torch_settings(), trick("extra-servers"), [EMBEDDED], backend=backends.get("torch"), run_id="r")


def test_the_torch_scaling_references_one_process_alone_and_every_gpu_of_a_node():
    from pytest_bpsperf.planning.planner import reference_plan

    s = torch_settings(Hardware(gpus=8, cores=32, gpu_nodes=2))
    torch = backends.get("torch")
    (cpu,) = reference_plan(torch_settings(), trick("default"), EMBEDDED, backend=torch, run_id="r").roles
    assert cpu.command[cpu.command.index("--backend") + 1] == "local" and "--framework" in cpu.command
    assert cpu.command[-2:] == ("--device", "cpu")
    node = reference_plan(s, trick("default"), GPU_NODES[0], backend=torch, run_id="r", gpus=8)
    assert len(node.roles) == 8 and node.rendezvous == ("node.0", "MASTER_ADDR", "MASTER_PORT")
    assert {r.env["WORLD_SIZE"] for r in node.roles} == {"8"}
    (one,) = reference_plan(s, trick("default"), GPU_NODES[0], backend=torch, run_id="r", gpus=8, one_gpu=True).roles
    assert one.command[-2:] == ("--device", "gpu") and one.gpus == 1
