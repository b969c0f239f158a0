"""``launch/load.py``: a run's foreign load: CPU outside its roles on its nodes, over the window it trained.

A node's CPU from /proc, less its roles' process trees (``remote/cpuload.py``), is in
``tests/unit/remote/test_cpuload.py``.
"""

from __future__ import annotations

import pytest

from pytest_bpsperf.launch.load import LoadWatch


def status(t, busy, roles, *, steps=3, finished=False, alive=True):
    """What a poll brings: per role its progress and its actor's CPU snapshot (all on node n1)."""
    return {
        name: {
            "steps": steps,
            "finished": finished and name.startswith("worker"),
            "cpu": {"time": t, "busy_s": busy, "steal_s": 0.0, "role_s": r, "alive": alive, "cpus": 2},
        }
        for name, r in roles.items()
    }


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


def test_snapshots_of_one_poll_taken_apart_still_give_the_load():
    # the node runs 2 cores busy: the worker 1.0, the server 0.5, others 0.5; on a loaded node the
    # actors answer one poll at different moments, and each role counts over its own actor's interval
    def poll(t_worker, t_server, *, steps=3, finished=False):
        return {
            "worker-0": {
                "steps": steps,
                "finished": finished,
                "cpu": {
                    "time": t_worker,
                    "busy_s": 2.0 * t_worker,
                    "steal_s": 0.0,
                    "role_s": 1.0 * t_worker,
                    "alive": True,
                    "cpus": 2,
                },
            },
            "server-0": {
                "cpu": {
                    "time": t_server,
                    "busy_s": 2.0 * t_server,
                    "steal_s": 0.0,
                    "role_s": 0.5 * t_server,
                    "alive": True,
                    "cpus": 2,
                }
            },
        }

    watch = LoadWatch({"worker-0": "n1", "server-0": "n1"})
    watch.observe(poll(1.0, 1.3), ["worker-0"])
    watch.observe(poll(3.0, 3.05, finished=True), ["worker-0"])
    (load,) = watch.loads()
    assert load.foreign_cores == pytest.approx(0.5) and load.window_s == pytest.approx(1.875)
