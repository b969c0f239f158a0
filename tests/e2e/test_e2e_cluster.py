"""End-to-end on an existing multi-node Ray cluster (simulated on this machine).

``ray.cluster_utils.Cluster`` starts a head node and a second node on
127.0.0.1; the second declares two GPUs (a Ray resource: nothing uses CUDA,
the mxnet backend trains on CPU). The plugin connects with
``--bpsperf-ray-address``, ships itself to the cluster, places the workers on
the GPU node and the scheduler and servers on the CPU node, and leaves the
cluster running when it is done.
"""

from __future__ import annotations

import json

import pytest

from helpers.procs import role_processes

ray = pytest.importorskip("ray")
pytest.importorskip("mxnet")


@pytest.fixture
def two_node_cluster(monkeypatch):
    from ray.cluster_utils import Cluster

    # A throw-away cluster on loopback: no token to hand to the plugin's driver.
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")

    # tests/conftest.py set RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0: both nodes on loopback
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "include_dashboard": False})
    gpu_node = cluster.add_node(num_cpus=2, num_gpus=2)
    cluster.wait_for_nodes()
    try:
        yield cluster, gpu_node
    finally:
        cluster.shutdown()


def test_existing_cluster_places_roles_by_node_kind(two_node_cluster, pytester, tmp_path):
    cluster, _gpu_node = two_node_cluster
    pytester.makeini(
        "[pytest]\nbpsperf_steps = 5\nbpsperf_batch_size = 4\nbpsperf_image_size = 32\n"
        "bpsperf_omp_threads = 1\nbpsperf_scaling = off\nbpsperf_backend = mxnet\n"
    )
    pytester.makepyfile(
        test_perf="""
import pytest

pytestmark = pytest.mark.perf


def test_train(bpsperf_train):
    assert bpsperf_train().img_per_sec > 0
"""
    )
    out = tmp_path / "result.json"
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-m",
        "perf",
        f"--bpsperf-ray-address={cluster.address}",
        f"--bpsperf-json={out}",
    )
    result.assert_outcomes(passed=1)
    doc = json.loads(out.read_text())
    info = doc["session_info"]
    assert info["ray"]["embedded"] is False and info["ray"]["address"] == cluster.address
    nodes = {n["name"]: n for n in info["nodes"]}
    assert len(nodes) == 2
    assert {n["ip"] for n in info["nodes"]} == {"127.0.0.1"}
    gpu_names = {name for name, n in nodes.items() if n["gpus"] == 2}
    assert len(gpu_names) == 1  # the node added with num_gpus=2
    roles = {r["name"]: r for r in doc["tests"][0]["roles"]}
    assert {roles["worker-0"]["node"], roles["worker-1"]["node"]} == gpu_names
    assert roles["scheduler"]["node"] not in gpu_names and roles["server-0"]["node"] not in gpu_names
    assert all(r["exit_code"] == 0 and r["env"]["DMLC_PS_ROOT_URI"] == "127.0.0.1" for r in roles.values())
    assert role_processes(info["run_id"]) == []
    # the plugin disconnected without stopping a cluster it does not own
    ray.init(address=cluster.address)
    try:
        assert len([n for n in ray.nodes() if n["Alive"]]) == 2
    finally:
        ray.shutdown()
