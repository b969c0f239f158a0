"""``remote/cpuload.py``: CPU time on a node from ``/proc``: all of it, and that of a role's process tree."""

from __future__ import annotations

import os
import subprocess
import sys

from pytest_bpsperf.remote import cpuload


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
    fake_proc(
        tmp_path,
        {
            10: ("S", (100, 20, 5, 1), [11, 12]),
            11: ("R", (30, 3, 0, 0), [13]),
            12: ("S", (1, 1, 0, 0), []),
            13: ("R", (7, 0, 0, 0), []),
            99: ("R", (500, 500, 0, 0), []),
        },
    )
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
