"""Foreign load: a node's CPU from /proc less its roles' process trees, over the window a run trained."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pytest_bpsperf.launch.load import LoadWatch
from pytest_bpsperf.remote import cpuload
from pytest_bpsperf.runs.output import NodeLoad, RunOutput


def fake_proc(root, procs, stat="cpu  100 5 50 1000 20 3 2 7 0 0\n"):
    """A /proc with a ``stat`` and, per pid, a ``stat`` line (its utime, stime, cutime, cstime) and children."""
    (root / "stat").write_text(stat)
    for pid, (state, ticks, children) in procs.items():
        d = root / str(pid)
        (d / "task" / str(pid)).mkdir(parents=True)
        u, s, cu, cs = ticks
        fields = [state, "1", str(pid), str(pid), "0", "-1", "0"] + ["0"] * 4 + [str(u), str(s), str(cu), str(cs)]
        (d / "stat").write_text(f"{pid} (py thon (x)) " + " ".join(fields + ["20", "0", "1"]) + "\n")
        (d / "task" / str(pid) / "children").write_text(" ".join(map(str, children)))
    return root


def test_node_busy_counts_every_cpu_state_but_idle_and_keeps_steal_apart(tmp_path):
    fake_proc(tmp_path, {})
    # user 100 + nice 5 + system 50 + irq 3 + softirq 2; idle 1000 and iowait 20 are idle; steal 7
    assert cpuload.node_busy_ticks(str(tmp_path / "stat")) == (160, 7)


def test_a_roles_cpu_is_its_process_tree_with_what_it_reaped(tmp_path):
    fake_proc(tmp_path, {10: ("S", (100, 20, 5, 1), [11, 12]), 11: ("R", (30, 3, 0, 0), [13]),
                         12: ("S", (1, 1, 0, 0), []), 13: ("R", (7, 0, 0, 0), []), 99: ("R", (500, 500, 0, 0), [])})
    assert cpuload.tree_ticks(10, str(tmp_path)) == (126 + 33 + 2 + 7, True)  # not pid 99: not its tree
    (tmp_path / "z").mkdir()
    fake_proc(tmp_path / "z", {10: ("Z", (100, 20, 5, 1), [])})
    assert cpuload.tree_ticks(10, str(tmp_path / "z")) == (126, False)  # a zombie does not run
    assert cpuload.tree_ticks(4242, str(tmp_path)) == (0, False)


def test_a_real_busy_child_is_counted_in_its_parents_tree():
    child = subprocess.Popen([sys.executable, "-c", "import time\nt = time.time()\nwhile time.time() - t < 1.5: pass"])
    try:
        parent = os.getpid()
        before, alive = cpuload.tree_ticks(parent)
        child.wait(10)
        after, _ = cpuload.tree_ticks(parent)  # reaped by this process: in its cutime now
        assert alive and (after - before) / os.sysconf("SC_CLK_TCK") > 0.5
    finally:
        child.kill()


def status(t, busy, roles, *, steps=3, finished=False, alive=True):
    """What a poll brings: per role its progress and its actor's CPU snapshot (all on node n1)."""
    return {name: {"steps": steps, "finished": finished and name.startswith("worker"),
                   "cpu": {"time": t, "busy_s": busy, "steal_s": 0.0, "role_s": r, "alive": alive, "cpus": 2}}
            for name, r in roles.items()}


def test_the_window_runs_from_the_first_step_to_the_last_poll_while_every_role_ran():
    watch = LoadWatch({"worker-0": "n1", "server-0": "n1"})
    workers = ["worker-0"]
    watch.observe(status(0.0, 10.0, {"worker-0": 1.0, "server-0": 1.0}, steps=0), workers)  # not training yet
    watch.observe(status(1.0, 12.0, {"worker-0": 2.0, "server-0": 1.5}), workers)  # start
    watch.observe(status(5.0, 22.0, {"worker-0": 6.0, "server-0": 3.5}), workers)
    watch.observe(status(6.0, 30.0, {"worker-0": 0.0, "server-0": 4.0}, finished=True, alive=False), workers)
    watch.observe(status(7.0, 99.0, {"worker-0": 0.0, "server-0": 9.0}, finished=True), workers)  # done: ignored
    (load,) = watch.loads()
    # 4 s window: the node used 10 CPU-seconds, the roles 4 + 2: 4 seconds of others, one core's worth
    assert (load.node, load.window_s, load.busy_s, load.roles_s) == ("n1", 4.0, 10.0, 6.0)
    assert load.foreign_cores == pytest.approx(1.0) and load.cpus == 2


def test_no_window_without_two_polls_of_training():
    watch = LoadWatch({"worker-0": "n1"})
    watch.observe(status(1.0, 12.0, {"worker-0": 2.0}, finished=True), ["worker-0"])
    assert watch.loads() == ()


def test_a_runs_foreign_load_is_its_busiest_nodes():
    out = RunOutput(workers=(), roles=(), bringup_s=0, teardown_s=0, wall_s=1, log_dir="", backend="mxnet",
                    load=(NodeLoad("a", 2.0, 3.0, 2.9, 2), NodeLoad("b", 2.0, 4.0, 1.0, 2)))
    assert out.foreign_cores == pytest.approx(1.5)
    assert NodeLoad("c", 2.0, 1.0, 1.5, 2).foreign_cores == 0.0  # never below zero
    assert RunOutput(workers=(), roles=(), bringup_s=0, teardown_s=0, wall_s=1, log_dir="",
                     backend="mxnet").foreign_cores is None


def test_snapshots_of_one_poll_taken_apart_still_give_the_load():
    # the node runs 2 cores busy: the worker 1.0, the server 0.5, others 0.5; on a loaded node the
    # actors answer one poll at different moments, and each role counts over its own actor's interval
    def poll(t_worker, t_server, *, steps=3, finished=False):
        return {"worker-0": {"steps": steps, "finished": finished,
                             "cpu": {"time": t_worker, "busy_s": 2.0 * t_worker, "steal_s": 0.0,
                                     "role_s": 1.0 * t_worker, "alive": True, "cpus": 2}},
                "server-0": {"cpu": {"time": t_server, "busy_s": 2.0 * t_server, "steal_s": 0.0,
                                     "role_s": 0.5 * t_server, "alive": True, "cpus": 2}}}

    watch = LoadWatch({"worker-0": "n1", "server-0": "n1"})
    watch.observe(poll(1.0, 1.3), ["worker-0"])
    watch.observe(poll(3.0, 3.05, finished=True), ["worker-0"])
    (load,) = watch.loads()
    assert load.foreign_cores == pytest.approx(0.5) and load.window_s == pytest.approx(1.875)
