"""The GPU path's findings of issue 25, each as a rule: topology, CPUs Ray holds, windowed timing on GPUs,
the per-GPU reference's GPU, BytePS's runtime needs (shared memory, sockets, cpuset, interface, image),
which GPUs the documented stack runs on, and the base-vs-head preflight's backend.

The same rules run end to end on a simulated GPU cluster in ``tests/e2e/test_e2e_gpu_sim.py``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from helpers.paths import ROOT
from pytest_bpsperf import backends
from pytest_bpsperf.config.settings import Hardware, Source, resolve
from pytest_bpsperf.config.tricks import Trick
from pytest_bpsperf.planning.placement import HEAD_RESOURCE
from pytest_bpsperf.planning.planner import make_plan, reference_plan
from pytest_bpsperf.runs.plan import Node, PlanError

MIRROR = "/work/.mirror/bytedance+byteps/repo"
TAG = "v0.2.5.post15"


def byteps_source(path: str) -> str:
    """A file of BytePS 0.2.5.post15 from the mirror of its repository (the test skips without it, as in CI)."""
    if not os.path.isdir(MIRROR):
        pytest.skip(f"BytePS's source is not mirrored here ({MIRROR}): the citation cannot be read")
    proc = subprocess.run(["git", "-C", MIRROR, "show", f"{TAG}:{path}"], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"the mirror has no {TAG}:{path}: {proc.stderr.strip()}")
    return proc.stdout


CPU_ONLY = Hardware(gpus=0, cores=2)


def settings(hw=CPU_ONLY, **values):
    return resolve([Source("cli", "command line", {k: str(v) for k, v in values.items()})] if values else [], hw,
                   backends.workload_defaults)


HEAD = Node("head", "127.0.0.1", 2, 0, "head", {"CPU": 2, HEAD_RESOURCE: 1})
GPUS = [Node(f"g{i}", f"127.0.0.{2 + i}", 8, 2, f"g{i}", {"CPU": 8, "GPU": 2}) for i in range(2)]
CPUS = [Node(f"c{i}", f"127.0.0.{4 + i}", 4, 0, f"c{i}", {"CPU": 4}) for i in range(2)]
DEFAULT = Trick("default")


# -- topology: server nodes, and the head node -------------------------------------------------


@pytest.mark.parametrize("hw, values, expected", [
    (Hardware(gpus=8, cores=32, gpu_nodes=2, server_nodes=2), {}, 2),  # 2 GPU nodes, 2 CPU nodes: one each
    (Hardware(gpus=8, cores=32, gpu_nodes=4, server_nodes=2), {}, 2),  # no more than the cluster has
    (Hardware(gpus=8, cores=32, gpu_nodes=2, server_nodes=5), {}, 2),  # no more than the workers
    (Hardware(gpus=8, cores=32, gpu_nodes=2, server_nodes=0), {}, 1),  # none: planning asks for colocate
    (Hardware(gpus=8, cores=32, gpu_nodes=2, server_nodes=0), {"colocate": "on"}, 2),
    (Hardware(gpus=1, cores=8), {}, 1),  # a single machine
    (Hardware(gpus=8, cores=32, gpu_nodes=2, server_nodes=2), {"server_nodes": "1"}, 1),  # as set
])
def test_server_nodes_default_to_one_per_worker_node_as_byteps_asks(hw, values, expected):
    tutorial = byteps_source("docs/step-by-step-tutorial.md").splitlines()[73]
    assert "at least equal to the number of workers" in tutorial  # docs/step-by-step-tutorial.md:74
    s = resolve([Source("cli", "c", {"backend": "byteps", **values})], hw, backends.workload_defaults)
    assert s.server_nodes == expected
    assert s.origins["server_nodes"] == ("default" if "server_nodes" not in values else "command line option "
                                                                                         "--bpsperf-server-nodes")


def test_the_simulated_cluster_of_the_issue_gets_a_server_on_each_cpu_node():
    # a head with 2 CPUs, two fake-GPU nodes, two CPU nodes, the default server count (was: one)
    nodes = [HEAD] + GPUS + CPUS
    hw = Hardware(gpus=2, cores=8, gpu_nodes=2, server_nodes=len(CPUS) + 1)
    plan = make_plan(settings(hw, backend="byteps"), DEFAULT, nodes, backend=backends.get("byteps"), run_id="r")
    assert sorted(s.node.node_id for s in plan.by_role("server")) == ["c0", "c1"]
    assert plan.scheduler.node.node_id != "head" and plan.num_servers == 2 == plan.num_workers


def test_the_head_node_hosts_servers_only_where_no_other_node_can():
    # the head first, as RayCluster.nodes() lists it: it used to take the scheduler and server-0
    nodes = [HEAD] + GPUS + CPUS[:1]
    plan = make_plan(settings(backend="byteps"), DEFAULT, nodes, backend=backends.get("byteps"), run_id="r")
    assert [s.node.node_id for s in plan.by_role("server")] == ["c0"] and plan.scheduler.node.node_id == "c0"
    # two server nodes and one CPU node: the head is the second one, rather than no run at all
    plan = make_plan(settings(backend="byteps", server_nodes=2), DEFAULT, nodes, backend=backends.get("byteps"),
                     run_id="r")
    assert [s.node.node_id for s in plan.by_role("server")] == ["c0", "head"]
    # a CPU backend's workers leave the servers' nodes to them, the head included
    plan = make_plan(settings(workers=2), DEFAULT, [HEAD] + CPUS, backend=backends.get("mxnet"), run_id="r")
    assert [s.node.node_id for s in plan.by_role("server")] == ["c0"]
    assert {w.node.node_id for w in plan.by_role("worker")} <= {"c1", "head"}


# -- Ray holds the roles' CPUs ------------------------------------------------------------------


def test_every_role_holds_its_share_of_its_nodes_cpus():
    plan = make_plan(settings(backend="byteps", server_nodes=2), DEFAULT, [HEAD] + GPUS + CPUS,
                     backend=backends.get("byteps"), run_id="r")
    held = {r.name: r.cpus for r in plan.roles}
    # each GPU node's 8 CPUs among its 2 processes; the scheduler a sliver; each server the rest of its node
    assert held == {"scheduler": 0.01, "server-0": 3.99, "server-1": 4.0, "worker-0.0": 4.0, "worker-0.1": 4.0,
                    "worker-1.0": 4.0, "worker-1.1": 4.0}
    assert [dict(b.resources) for b in plan.bundles] == [{"GPU": 2.0, "CPU": 8.0}, {"GPU": 2.0, "CPU": 8.0},
                                                         {"CPU": 4.0}, {"CPU": 4.0}]


def test_a_run_on_some_of_a_nodes_gpus_holds_that_part_of_its_cpus():
    plan = make_plan(settings(backend="byteps", gpus_per_worker=1, workers=1), DEFAULT, [HEAD] + GPUS[:1] + CPUS,
                     backend=backends.get("byteps"), run_id="r")
    assert [w.cpus for w in plan.by_role("worker")] == [4.0]  # 1 of 2 GPUs: half the node's 8 CPUs


def test_cpus_per_worker_and_server_are_held_as_set_and_must_fit_the_node():
    plan = make_plan(settings(backend="byteps", cpus_per_worker=1.5, cpus_per_server=2), DEFAULT,
                     [HEAD] + GPUS + CPUS[:1], backend=backends.get("byteps"), run_id="r")
    assert {r.name: r.cpus for r in plan.roles if r.role != "scheduler"} == {
        "server-0": 2.0, "worker-0.0": 1.5, "worker-0.1": 1.5, "worker-1.0": 1.5, "worker-1.1": 1.5}
    with pytest.raises(PlanError) as excinfo:
        make_plan(settings(backend="byteps", cpus_per_worker=5), DEFAULT, [HEAD] + GPUS + CPUS[:1],
                  backend=backends.get("byteps"), run_id="r")
    msg = str(excinfo.value)
    assert "'cpus_per_worker' (5, from command line option --bpsperf-cpus-per-worker)" in msg
    assert "hold 10 CPUs" in msg and "g0 127.0.0.2" in msg and "at most its 8" in msg


def test_a_bpslaunch_role_holds_the_cpus_of_every_process_it_spawns():
    plan = make_plan(settings(backend="byteps", launch="bpslaunch"), DEFAULT, [HEAD] + GPUS + CPUS,
                     backend=backends.get("byteps"), run_id="r")
    assert [w.cpus for w in plan.by_role("worker")] == [8.0, 8.0]


def test_the_scaling_references_hold_cpus_too():
    node = reference_plan(settings(backend="byteps"), DEFAULT, GPUS[0], backend=backends.get("byteps"), run_id="r",
                          gpus=2)
    assert node.bundles[0].resources == {"GPU": 2.0, "CPU": 8.0}
    single = reference_plan(settings(), DEFAULT, CPUS[0], backend=backends.get("mxnet"), run_id="r")
    assert single.roles[0].cpus == 4.0


# -- windowed timing by default on GPUs --------------------------------------------------------


@pytest.mark.parametrize("hw, values, expected", [
    (Hardware(gpus=8, cores=32), {"backend": "byteps"}, 10),  # 100 steps: a sync every 10
    (Hardware(gpus=8, cores=32), {"backend": "byteps", "steps": "12"}, 4),  # at most a third of the steps
    (Hardware(gpus=8, cores=32), {"backend": "byteps", "timing": "breakdown"}, 1),  # it syncs in every step
    (Hardware(gpus=8, cores=32), {"backend": "byteps", "sync_every": "1"}, 1),  # as set
    (Hardware(gpus=8, cores=32), {"backend": "mxnet"}, 1),  # MXNet's workers train on the CPUs
    (Hardware(gpus=0, cores=2), {}, 1),  # CPUs
])
def test_sync_every_defaults_to_a_window_on_gpus(hw, values, expected):
    s = resolve([Source("cli", "c", values)], hw, backends.workload_defaults)
    assert s.sync_every == expected
    command = backends.get(s.backend if s.backend != "auto" else "mxnet").worker_command(s)
    assert ("--sync-every" in command) == (expected != 1)


# -- the per-GPU reference runs on the GPU Ray reserved ----------------------------------------


def test_the_per_gpu_reference_trains_on_the_gpu_ray_reserved():
    before = reference_plan(settings(backend="byteps"), DEFAULT, GPUS[0], backend=backends.get("byteps"),
                            run_id="r", gpus=2, one_gpu=True)
    assert before.roles[0].env["CUDA_VISIBLE_DEVICES"] == "0"  # before Ray assigned one
    (role,) = reference_plan(settings(backend="byteps"), DEFAULT, GPUS[0], backend=backends.get("byteps"),
                             run_id="r", gpus=2, one_gpu=True, gpu_ids={0: [1]}).roles
    assert role.env["CUDA_VISIBLE_DEVICES"] == "1" == role.env["NVIDIA_VISIBLE_DEVICES"]
    assert role.command[-2:] == ("--device", "gpu")  # whose mx.gpu(0) is then GPU 1


# -- runtime: shared memory, sockets, cpuset, interface, the image ------------------------------


def test_the_preflight_refuses_a_node_without_room_in_shared_memory(tmp_path):
    from pytest_bpsperf.remote.byteps_preflight import shm_problems

    problems, notes = shm_problems(str(tmp_path), need=2**62)
    assert len(problems) == 1 and notes == []
    assert "MiB free" in problems[0] and "--shm-size=32768m" in problems[0]
    assert shm_problems(str(tmp_path), need=1) == ([], [])
    problems, _ = shm_problems(str(tmp_path / "absent"))
    assert "does not exist" in problems[0]


def test_the_preflight_refuses_a_node_where_another_byteps_job_holds_its_buffers(tmp_path):
    from pytest_bpsperf.remote.byteps_preflight import shm_problems

    buffer = tmp_path / "BytePS_ShM_0"
    buffer.write_bytes(b"\0" * 4096)
    # left by a killed job: a note, not a refusal (BytePS reuses it by name)
    problems, notes = shm_problems(str(tmp_path), need=1)
    assert problems == [] and "mapped by no process" in notes[0]
    holder = subprocess.Popen([sys.executable, "-c", "import mmap, sys, time; f = open(sys.argv[1], 'r+b'); "
                               "m = mmap.mmap(f.fileno(), 0); print('mapped', flush=True); time.sleep(60)",
                               str(buffer)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "mapped"
        problems, _ = shm_problems(str(tmp_path), need=1)
    finally:
        holder.kill()
        holder.wait()
    assert len(problems) == 1 and f"pid {holder.pid}" in problems[0]
    assert "another BytePS job runs on this node" in problems[0] and "operations.cc:351" in problems[0]


def test_byteps_names_its_shared_memory_with_a_fixed_prefix():
    # why the preflight refuses instead of giving each run a prefix: BytePS 0.2.5 has no variable for it
    lines = byteps_source("byteps/common/operations.cc").splitlines()
    assert 'openSharedMemory(std::string("BytePS_ShM_"),' in lines[350]  # operations.cc:351
    assert "getenv" not in byteps_source("byteps/common/shared_memory.cc")


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
        role.start(["{python}", "-c", "import os; print(os.environ['BYTEPS_SOCKET_PATH'])"],
                   {"BYTEPS_SOCKET_PATH": socket_paths(run_id)["worker-0.0"], "BPSPERF_RUN_ID": run_id})
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


def test_bpslaunch_pins_within_the_containers_cpuset(tmp_path):
    from pytest_bpsperf.remote.bpslaunch import pinning

    for node, first in ((0, 0), (1, 8)):
        (tmp_path / f"node{node}").mkdir()
        for cpu in range(first, first + 8):
            (tmp_path / f"node{node}" / f"cpu{cpu}").mkdir()
    environ = {"NVIDIA_VISIBLE_DEVICES": "0,1"}
    # all the node's CPUs allowed: bpslaunch's own split
    updates, message = pinning(environ, numa_dir=str(tmp_path), numactl=True, allowed=set(range(16)))
    assert updates == {} and "bpslaunch's split of 2 NUMA node(s)" in message
    # a cpuset of 6 CPUs (Kubernetes' CPU manager): bpslaunch would hand numactl others; pin within it
    updates, message = pinning(environ, numa_dir=str(tmp_path), numactl=True, allowed={2, 3, 4, 10, 11, 12})
    assert updates == {"BYTEPS_VISIBLE_CPU_CORES": "2-4:10-12"}
    assert "may use 6 of the node's 16 CPUs (2-4,10-12)" in message
    # fewer CPUs than ranks: unpinned, said why
    updates, message = pinning(environ, numa_dir=str(tmp_path), numactl=True, allowed={5})
    assert updates == {"BYTEPS_NUMA_ON": "0"} and "fewer than its 2 local ranks" in message


def test_bpslaunch_splits_every_cpu_of_the_numa_nodes_whatever_the_cpuset():
    # what the check is for: its allocation reads /sys/devices/system/node, never the affinity
    launch = byteps_source("launcher/launch.py")
    assert 'NUMA_PATH = "/sys/devices/system/node"' in launch and "sched_getaffinity" not in launch


def test_an_interfaces_address_is_read_on_the_node():
    from pytest_bpsperf.remote.roles import RoleProcess, interface_address

    assert interface_address("lo") == "127.0.0.1"
    with pytest.raises(ValueError, match=r"DMLC_INTERFACE=no-such0: no such network interface on node .*lo"):
        interface_address("no-such0")
    assert RoleProcess("r", "/tmp").address_of("no-such0")["error"].startswith("DMLC_INTERFACE=no-such0")


DOCKERFILE = ROOT / "examples" / "docker" / "Dockerfile.gpu"
WORKFLOWS = sorted((ROOT / "examples" / "github-actions").glob("*.yml"))


def test_the_documented_docker_run_gives_byteps_its_shared_memory():
    run = next(line for line in DOCKERFILE.read_text().splitlines() if "docker run" in line)
    assert "--shm-size=32768m" in run and "--ipc" not in run
    for workflow in WORKFLOWS:
        for options in re.findall(r"options: (.*)", workflow.read_text()):
            assert "--shm-size" in options and "--ipc" not in options, (workflow.name, options)
    tutorial = byteps_source("docs/step-by-step-tutorial.md").splitlines()[55]
    assert "--shm-size=32768m" in tutorial  # BytePS's own figure (docs/step-by-step-tutorial.md:56)


def test_the_image_builds_byteps_for_a_portable_cpu_not_the_builders():
    text = DOCKERFILE.read_text()
    default = re.search(r"^ARG BYTEPS_MARCH=(\S+)$", text, re.M).group(1)
    assert default != "native"
    sed = re.search(r"""sed -i "s/'-march=native'/'-march=\$\{BYTEPS_MARCH\}'/" \S+/setup.py""", text)
    assert sed, "the Dockerfile must patch BytePS's -march=native"
    assert "--no-binary byteps \"byteps==" not in text  # no build of the unpatched sdist
    setup = byteps_source("setup.py")
    assert "'-march=native'" in setup.splitlines()[176]  # setup.py:177, where the sed applies
    patched = setup.replace("'-march=native'", f"'-march={default}'")
    assert "-march=native" not in patched and f"-march={default}" in patched


# -- the stack's age: which GPUs it runs on -----------------------------------------------------


@pytest.mark.parametrize("gpu, capability, ok", [
    ("Tesla P100", 6.0, True), ("Tesla V100", 7.0, True), ("Tesla T4", 7.5, True), ("A100", 8.0, True),
    ("NVIDIA A10", 8.6, True), ("NVIDIA L4", 8.9, False), ("NVIDIA H200", 9.0, False),
    ("NVIDIA B200", 10.0, False), ("Tesla K80", 3.7, False),
])
def test_the_documented_stack_runs_from_maxwell_to_ampere(gpu, capability, ok):
    from pytest_bpsperf.remote.gpu_stack import stack_problem

    problem = stack_problem([(0, gpu, capability)], ((11, 2), "mxnet-cu112"))
    assert (problem is None) == ok, problem
    if capability == 9.0:
        assert problem.startswith("GPU 0 (NVIDIA H200) is compute capability 9.0 (Hopper)")
        assert "Hopper needs CUDA >= 11.8" in problem and "mxnet-cu112 (CUDA 11.2)" in problem
    if capability == 10.0:
        assert "needs CUDA >= 12.8" in problem


def test_the_stack_check_reads_the_builds_cuda_and_the_gpus():
    from pytest_bpsperf.remote.gpu_stack import mxnet_cuda, node_gpus, stack_problem

    assert mxnet_cuda(["mxnet-cu112"]) == ((11, 2), "mxnet-cu112")
    assert mxnet_cuda(["mxnet"]) is None and mxnet_cuda(["mxnet-cu102", "x"]) == ((10, 2), "mxnet-cu102")
    gpus = node_gpus(lambda argv: "0, NVIDIA H200, 9.0\n1, NVIDIA H200, 9.0\n")
    assert gpus == [(0, "NVIDIA H200", 9.0), (1, "NVIDIA H200", 9.0)]
    assert node_gpus(lambda argv: (_ for _ in ()).throw(OSError("no nvidia-smi"))) == []
    assert stack_problem([], ((11, 2), "mxnet-cu112")) is None  # nothing to tell: no refusal
    assert stack_problem(gpus, None) is None  # a CPU build (or one from source): nothing to tell


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


# -- base vs head: the base interpreter's needs on GPUs ----------------------------------------


def test_the_base_arms_preflight_takes_auto_as_the_session_resolved_it():
    from pytest_bpsperf.plugin.pair_gate import arm_needs

    s = settings(Hardware(gpus=8, cores=32))
    assert s.backend == "auto"
    assert "byteps.mxnet" in arm_needs(s, "byteps", 8) and "byteps.server" in arm_needs(s, "byteps", 8)
    assert "byteps.mxnet" in arm_needs(s, None, 8)  # GPUs, not resolved yet: what auto picks there
    assert arm_needs(s, "mxnet", 8) == ["gluoncv", "mxnet"]  # auto fell back (its probe failed)
    assert arm_needs(settings(), None, 0) == ["gluoncv", "mxnet"]


def test_the_interpreter_preflight_runs_as_a_module_with_the_byteps_server_need(tmp_path):
    # how every node of a cluster runs it: `main()` at the end of the module, after server_library
    proc = subprocess.run([sys.executable, "-m", "pytest_bpsperf.remote.preflight", "--needs", "byteps.server"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout.splitlines()[-1])
    assert all("NameError" not in p for p in found["problems"])
