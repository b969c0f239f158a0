"""Placement of a run's roles (``planning/placement.py``): which node hosts what, and what Ray holds there.

The GPU path's findings of issue 25 as rules, on the simulated cluster of :mod:`helpers.clusters`: a
server on each CPU node, the head node only where no other can host one, the CPUs every role holds (the
scaling references' too), the GPU Ray reserved for the per-GPU reference. The same rules run end to end
on a simulated GPU cluster in ``tests/e2e/test_e2e_gpu_sim.py``.
"""

from __future__ import annotations

import pytest

from helpers.clusters import CPUS, DEFAULT, GPUS, HEAD, settings
from pytest_bpsperf import backends
from pytest_bpsperf.config.settings import Hardware
from pytest_bpsperf.planning.planner import make_plan, reference_plan
from pytest_bpsperf.runs.plan import PlanError


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
    plan = make_plan(
        settings(backend="byteps", server_nodes=2), DEFAULT, nodes, backend=backends.get("byteps"), run_id="r"
    )
    assert [s.node.node_id for s in plan.by_role("server")] == ["c0", "head"]
    # a CPU backend's workers leave the servers' nodes to them, the head included
    plan = make_plan(settings(workers=2), DEFAULT, [HEAD] + CPUS, backend=backends.get("mxnet"), run_id="r")
    assert [s.node.node_id for s in plan.by_role("server")] == ["c0"]
    assert {w.node.node_id for w in plan.by_role("worker")} <= {"c1", "head"}


def test_every_role_holds_its_share_of_its_nodes_cpus():
    plan = make_plan(
        settings(backend="byteps", server_nodes=2),
        DEFAULT,
        [HEAD] + GPUS + CPUS,
        backend=backends.get("byteps"),
        run_id="r",
    )
    held = {r.name: r.cpus for r in plan.roles}
    # each GPU node's 8 CPUs among its 2 processes; the scheduler a sliver; each server the rest of its node
    assert held == {
        "scheduler": 0.01,
        "server-0": 3.99,
        "server-1": 4.0,
        "worker-0.0": 4.0,
        "worker-0.1": 4.0,
        "worker-1.0": 4.0,
        "worker-1.1": 4.0,
    }
    assert [dict(b.resources) for b in plan.bundles] == [
        {"GPU": 2.0, "CPU": 8.0},
        {"GPU": 2.0, "CPU": 8.0},
        {"CPU": 4.0},
        {"CPU": 4.0},
    ]


def test_a_run_on_some_of_a_nodes_gpus_holds_that_part_of_its_cpus():
    plan = make_plan(
        settings(backend="byteps", gpus_per_worker=1, workers=1),
        DEFAULT,
        [HEAD] + GPUS[:1] + CPUS,
        backend=backends.get("byteps"),
        run_id="r",
    )
    assert [w.cpus for w in plan.by_role("worker")] == [4.0]  # 1 of 2 GPUs: half the node's 8 CPUs


def test_cpus_per_worker_and_server_are_held_as_set_and_must_fit_the_node():
    plan = make_plan(
        settings(backend="byteps", cpus_per_worker=1.5, cpus_per_server=2),
        DEFAULT,
        [HEAD] + GPUS + CPUS[:1],
        backend=backends.get("byteps"),
        run_id="r",
    )
    assert {r.name: r.cpus for r in plan.roles if r.role != "scheduler"} == {
        "server-0": 2.0,
        "worker-0.0": 1.5,
        "worker-0.1": 1.5,
        "worker-1.0": 1.5,
        "worker-1.1": 1.5,
    }
    with pytest.raises(PlanError) as excinfo:
        make_plan(
            settings(backend="byteps", cpus_per_worker=5),
            DEFAULT,
            [HEAD] + GPUS + CPUS[:1],
            backend=backends.get("byteps"),
            run_id="r",
        )
    msg = str(excinfo.value)
    assert "'cpus_per_worker' (5, from command line option --bpsperf-cpus-per-worker)" in msg
    assert "hold 10 CPUs" in msg and "g0 127.0.0.2" in msg and "at most its 8" in msg


def test_a_bpslaunch_role_holds_the_cpus_of_every_process_it_spawns():
    plan = make_plan(
        settings(backend="byteps", launch="bpslaunch"),
        DEFAULT,
        [HEAD] + GPUS + CPUS,
        backend=backends.get("byteps"),
        run_id="r",
    )
    assert [w.cpus for w in plan.by_role("worker")] == [8.0, 8.0]


def test_the_scaling_references_hold_cpus_too():
    node = reference_plan(
        settings(backend="byteps"), DEFAULT, GPUS[0], backend=backends.get("byteps"), run_id="r", gpus=2
    )
    assert node.bundles[0].resources == {"GPU": 2.0, "CPU": 8.0}
    single = reference_plan(settings(), DEFAULT, CPUS[0], backend=backends.get("mxnet"), run_id="r")
    assert single.roles[0].cpus == 4.0


def test_the_per_gpu_reference_trains_on_the_gpu_ray_reserved():
    before = reference_plan(
        settings(backend="byteps"), DEFAULT, GPUS[0], backend=backends.get("byteps"), run_id="r", gpus=2, one_gpu=True
    )
    assert before.roles[0].env["CUDA_VISIBLE_DEVICES"] == "0"  # before Ray assigned one
    (role,) = reference_plan(
        settings(backend="byteps"),
        DEFAULT,
        GPUS[0],
        backend=backends.get("byteps"),
        run_id="r",
        gpus=2,
        one_gpu=True,
        gpu_ids={0: [1]},
    ).roles
    assert role.env["CUDA_VISIBLE_DEVICES"] == "1" == role.env["NVIDIA_VISIBLE_DEVICES"]
    assert role.command[-2:] == ("--device", "gpu")  # whose mx.gpu(0) is then GPU 1
