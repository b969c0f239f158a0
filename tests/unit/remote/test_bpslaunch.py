"""``remote/bpslaunch.py``: the launcher a BytePS worker node runs, and how (and why) its ranks are pinned."""

from __future__ import annotations

import sys

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


@pytest.fixture
def execv(monkeypatch):
    """The calls ``main`` makes to ``os.execv`` (it returns 1 after them); pinning decided without the machine."""
    from pytest_bpsperf.remote import bpslaunch

    calls = []
    monkeypatch.setattr(bpslaunch.os, "execv", lambda *args: calls.append(args))
    monkeypatch.setattr(bpslaunch, "pinning", lambda environ: ({}, "unpinned (test)"))
    monkeypatch.delenv(bpslaunch.PINNING_ENV, raising=False)
    return calls


def test_the_launcher_named_first_runs_instead_of_the_installed_one(tmp_path, monkeypatch, execv, capsys):
    from pytest_bpsperf.remote import bpslaunch

    # BytePS's launch.py as its sdist ships it: not executable, so no PATH lookup would find it
    (tmp_path / "launch.py").write_text(byteps_source("launcher/launch.py"))
    monkeypatch.setattr(bpslaunch, "find_bpslaunch", lambda: "/elsewhere/bin/bpslaunch")
    assert bpslaunch.main(["--launcher", str(tmp_path / "launch.py"), "python", "train.py", "a b"]) == 1
    assert execv == [(sys.executable, [sys.executable, str(tmp_path / "launch.py"), "python train.py 'a b'"])]
    assert f"bpsperf: launcher {tmp_path / 'launch.py'}" in capsys.readouterr().out


def test_a_missing_launcher_is_refused_with_where_it_was_looked_for(tmp_path, monkeypatch, execv, capsys):
    from pytest_bpsperf.remote import bpslaunch

    assert bpslaunch.main(["--launcher", str(tmp_path / "nothing.py"), "python", "train.py"]) == 2
    assert f"--launcher '{tmp_path / 'nothing.py'}': no such file" in capsys.readouterr().err
    monkeypatch.setattr(bpslaunch, "find_bpslaunch", lambda: None)
    assert bpslaunch.main(["python", "train.py"]) == 2
    err = capsys.readouterr().err
    assert "bpslaunch is not installed on this node" in err and f"none beside {sys.executable}, none on PATH" in err
    assert execv == []
