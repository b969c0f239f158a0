"""``launch/launcher.py``: a run's roles on the driver side: notes, live progress, the harvest and its output."""

from __future__ import annotations

from pytest_bpsperf import backends
from pytest_bpsperf.launch import launcher


def test_the_run_notes_which_roles_would_outlive_their_actor_and_where():
    from pytest_bpsperf.launch.launcher import pdeathsig_notes

    infos = {
        "scheduler": {"pdeathsig": True},
        "server-0": {"pdeathsig": False},
        "worker-0": {"pdeathsig": False},
        "worker-1": {"pdeathsig": False},
        "gone": {},
    }
    where = {
        "server-0": {"hostname": "n1", "ip": "10.0.0.1"},
        "worker-0": {"hostname": "n1", "ip": "10.0.0.1"},
        "worker-1": {"hostname": "", "ip": "10.0.0.2"},
    }
    assert pdeathsig_notes(infos, where) == (
        "setpriv not found on n1: server-0, worker-0 do not die with their actor (no PR_SET_PDEATHSIG; "
        "install util-linux there)",
        "setpriv not found on 10.0.0.2: worker-1 does not die with its actor (no PR_SET_PDEATHSIG; "
        "install util-linux there)",
    )
    assert pdeathsig_notes({"worker-0": {"pdeathsig": True}}, {}) == ()


class FakeGroup:
    """Roles that exit after a number of polls; the clock advances 1 s per poll."""

    def __init__(self, polls):
        self.roles = [type("R", (), {"name": "worker-0", "role": "worker"})()]
        self.polls, self.now = polls, 0.0
        self.status = {}  # the stall watchdog reads it: no progress known, nothing stalls

    def poll(self):
        self.now += 1.0
        self.polls -= 1
        return {"worker-0": 0 if self.polls <= 0 else None}


def test_watch_reports_progress_about_every_ten_seconds(monkeypatch):
    monkeypatch.setattr(launcher.time, "sleep", lambda _s: None)
    group, calls = FakeGroup(35), []
    assert launcher._watch(group, 1e9, 1e9, 30.0, lambda: calls.append(group.now), clock=lambda: group.now) is None
    assert calls == [10.0, 20.0, 30.0]


def _plan_settings(**values):
    from pytest_bpsperf.config.settings import Hardware, Source, resolve

    return resolve([Source("cli", "command line", values)] if values else [], Hardware(gpus=0, cores=2))


def _layered_trick():
    from pytest_bpsperf.config.tricks import Trick

    return Trick(
        "mixed",
        env={"worker": {"OMP_WAIT_POLICY": "PASSIVE", "KMP_BLOCKTIME": "0"}, "server": {"OMP_NUM_THREADS": "3"}},
    )


def _embedded_plan():
    from pytest_bpsperf.planning.planner import make_plan
    from pytest_bpsperf.runs.plan import Node

    return make_plan(
        _plan_settings(),
        _layered_trick(),
        [Node("n0", "127.0.0.1", 2, 0)],
        backend=backends.get("mxnet"),
        run_id="run-1",
    )


class _Group:
    """A role group whose roles exit with ``codes`` at the first poll; workers ``finished`` training or not."""

    def __init__(self, codes, finished):
        self.roles = [type("R", (), {"name": n, "role": n.split("-")[0]})() for n in codes]
        self.codes = codes
        self.status = {n: {"finished": finished} for n in codes if n.startswith("worker")}
        self.notes, self.blamed = [], []

    def poll(self):
        return dict(self.codes)

    def note_exit(self, note):
        self.notes.append(note)

    def blame(self, roles):
        self.blamed.append(tuple(roles))


def test_role_group_writes_its_harvest_and_gives_the_output(tmp_path):
    from pytest_bpsperf.launch.launcher import Harvest, RoleGroup

    group = RoleGroup(_embedded_plan(), str(tmp_path))
    assert group.harvest == Harvest()
    group.note_exit("server-0 exited 1 after training finished (shutdown)")
    group.note_exit("server-0 exited 1 after training finished (shutdown)")  # kept once
    group.blame(["worker-1"])
    with group:  # no actor started: leaving the block has nothing to stop
        pass
    assert group.harvest.culprits == ("worker-1",)
    output = group.output(wall_s=2.5)
    assert output.notes == ("server-0 exited 1 after training finished (shutdown)",)
    assert (output.workers, output.wall_s, output.log_dir, output.backend) == ((), 2.5, str(tmp_path), "mxnet")
    assert [o.name for o in output.roles] == ["scheduler", "server-0", "worker-0", "worker-1"]
    assert output.topology == group.plan.topology()
    group.records.append("not the group's")  # a copy: readers cannot change the harvest
    assert group.harvest.records == []


def test_watch_notes_an_exit_error_after_training_and_blames_one_before():
    from pytest_bpsperf.launch import launcher

    after = _Group({"server-0": 1, "worker-0": 0}, finished=True)
    assert launcher._watch(after, 1e9, 1e9, 30.0) is None
    assert (after.notes, after.blamed) == (["server-0 exited 1 after training finished (shutdown)"], [])
    before = _Group({"server-0": 1, "worker-0": 0}, finished=False)
    assert launcher._watch(before, 1e9, 1e9, 30.0) == "role(s) exited with an error: server-0 (exit 1)"
    assert (before.notes, before.blamed) == ([], [("server-0",)])


def test_live_progress_says_the_roles_are_up_then_ticks(tmp_path):
    from pytest_bpsperf.launch import launcher

    group = launcher.RoleGroup(_embedded_plan(), str(tmp_path))
    assert launcher._live_progress(group, None, "t", 20) is None
    heard = []
    tick = launcher._live_progress(group, heard.append, "t[default]", 20)
    assert heard == ["t[default]: 4 roles up in 0.0s, training 20 steps"]
    group.latest_steps = lambda: {"worker-0": {"event": "step", "step": 4, "images": 8, "total_s": 0.5}}
    tick()
    group.latest_steps = lambda: 1 / 0
    tick()  # progress never breaks a run
    assert heard[1:] == ["t[default]: step 5/20, 16.0 img/s", "t[default]: no progress (ZeroDivisionError)"]
