"""``remote/bpslaunch.py``: how a BytePS worker node's ranks are pinned, and why (BytePS's own NUMA split)."""

from __future__ import annotations

import pytest

from helpers.byteps_source import byteps_source


@pytest.mark.parametrize(
    "environ, numactl, nodes, expected, numa_on",
    [
        ({}, True, ["node0", "node1"], "pinned by numactl to bpslaunch's split of 2 NUMA node(s)", None),
        ({}, False, ["node0"], "unpinned: numactl is not installed", "0"),
        ({}, True, [], "unpinned: no NUMA information on this node", "0"),  # bpslaunch's split raises TypeError
        (
            {"BYTEPS_VISIBLE_CPU_CORES": "0-3:4-7"},
            True,
            [],
            "pinned by numactl to BYTEPS_VISIBLE_CPU_CORES=0-3:4-7",
            None,
        ),
        ({"BYTEPS_NUMA_ON": "0"}, True, ["node0"], "unpinned (BYTEPS_NUMA_ON=0)", None),
    ],
)
def test_bpslaunch_runs_unpinned_where_it_cannot_pin_and_says_so(tmp_path, environ, numactl, nodes, expected, numa_on):
    from pytest_bpsperf.remote.bpslaunch import pinning

    for n in nodes:
        (tmp_path / n).mkdir()
    updates, message = pinning(environ, numa_dir=str(tmp_path), numactl=numactl)
    assert message.startswith(expected)
    assert updates.get("BYTEPS_NUMA_ON") == numa_on


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
