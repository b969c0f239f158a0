"""Pure refactorings keep their results: long functions split into parts, the pytest layer's objects behind methods.

The expected values were produced by the functions before they were split
(``session_difference`` at ea4e940, one body for all three cases), on the same
inputs; the split functions must reproduce them.
"""

from __future__ import annotations

import pytest

from pytest_bpsperf.stats import method
from pytest_bpsperf.stats.method import BetweenPrior as P
from pytest_bpsperf.stats.method import session_difference

# --- session_difference: one function per case ------------------------------------------------

#: (name, baseline sessions, current runs, keywords,
#:  (diff, margin, dof, sd, p_value, between_sd, margin_limit),
#:  (estimated, between_assumed, sessions, between_source), description)
SESSION_CASES = [
    ('within, estimated', [[100.0, 102.0, 98.0]], [95.0, 97.0, 96.0], dict(),
     (-0.04072480545705748, 0.03615196699660565, 4.0, 0.01594734795473526, 0.0352656124376932, 0.0,
      0.01804579144192723),
     (True, False, 1, 'none'),
     'pooled SD of log img/s 0.0159 from both groups (4 dof), t=2.776'),
    ('within, several sessions pooled', [[100.0, 101.0], [99.0, 103.0]], [100.5, 99.5], dict(confidence=0.99),
     (-0.007377199466556128, 0.06003402873116822, 4.0, 0.015056450232666316, 0.6017808871362578, 0.0,
      0.019391422858363774),
     (True, False, 1, 'none'),
     'pooled SD of log img/s 0.0151 from both groups (4 dof), t=4.604'),
    ('within, assumed', [[100.0]], [90.0], dict(default_rel_noise=0.1),
     (-0.10536051565782678, 0.26418148538053843, float("inf"), 0.09531017980432487, 0.43440837120358844, 0.0,
      0.18680451977651352),
     (False, False, 1, 'none'),
     'too few runs to estimate noise (0 dof): assumed default relative noise 10% per run (SD of log 0.0953), '
     'z=1.960'),
    ('within, equal', [[50.0, 50.0]], [50.0, 50.0], dict(),
     (0.0, 0.0, 2.0, 0.0, 1.0, 0.0, 0.0),
     (True, False, 1, 'none'),
     'pooled SD of log img/s 0.0000 from both groups (2 dof), t=4.303'),
    ('one session, assumed', [[100.0, 101.0, 99.5]], [97.0, 96.5, 98.0], dict(session_spread=0.05, confidence=0.99),
     (-0.03040896049166797, 0.17848018503639582, 57967.41616268844, 0.007734340170220443, 0.6607522071165406,
      0.04879016416943201, 0.17810328123724112),
     (True, True, 1, 'assumed'),
     'SD of log img/s within a session 0.0077 (pooled, 4 dof); between sessions: assumed SD of log 0.0488 '
     '(session_spread 5%; the baseline has 1 recorded session and nothing else was measured); t=2.576 '
     '(57967.4 dof) (Welch-Satterthwaite)'),
    ('one session, assumed, no runs noise', [[100.0]], [104.0], dict(session_spread=0.02),
     (0.039220713153280684, 0.6209417608581747, float("inf"), 0.22314355131420976, 0.9014754231014366,
      0.019802627296179712, 0.440784233384487),
     (False, True, 1, 'assumed'),
     'too few runs to estimate noise (0 dof): assumed default relative noise 25% per run (SD of log 0.2231); '
     'between sessions: assumed SD of log 0.0198 (session_spread 2%; the baseline has 1 recorded session and '
     'nothing else was measured); z=1.960 (Welch-Satterthwaite)'),
    ('one session, prior', [[100.0, 101.0, 99.5]], [97.0, 96.5],
     dict(session_spread=0.05, prior=P(0.0004, 6.0, 7, 2, '2 other jobs')),
     (-0.03468912224047127, 0.06938971955497417, 6.524782835306912, 0.006566616680838862, 0.27196418665815225,
      0.02, 0.06925051132248057),
     (True, False, 1, 'pooled'),
     'SD of log img/s within a session 0.0066 (pooled, 3 dof); between sessions: SD of log 0.0200 pooled from '
     '2 other jobs (6 dof; the baseline has 1 recorded session); t=2.400 (6.5 dof) (Welch-Satterthwaite)'),
    ('several sessions', [[100.0, 101.0, 99.0], [103.0, 104.0, 102.5], [98.0, 99.5, 98.5]], [95.0, 96.0, 95.5],
     dict(session_spread=0.05, confidence=0.99),
     (-0.0519467686957098, 0.2622475355300936, 2.0, 0.007776265939564052, 0.18821805813754228,
      0.022438538688277554, 0.2622475355300936),
     (True, False, 3, 'estimated'),
     "SD of log img/s within a session 0.0078 (pooled, 8 dof); between sessions: SD of log 0.0224 estimated "
     "from 3 recorded sessions (session means as units); t=9.925 (2.0 dof) (the session means' dof)"),
    ('several sessions, prior', [[100.0, 101.0], [103.0, 104.0]], [101.0, 102.5, 101.5],
     dict(session_spread=0.05, prior=P(0.0001, 12.0, 9, 3, 'the history')),
     (-0.0031719429162357926, 0.032370615112122234, 13.0, 0.0072248548088416084, 0.8356308510351074,
      0.011116549878879847, 0.032370615112122234),
     (True, False, 2, 'pooled'),
     "SD of log img/s within a session 0.0072 (pooled, 4 dof); between sessions: SD of log 0.0111 estimated "
     "from 2 recorded sessions (session means as units), pooled with the history (12 dof); t=2.160 (13.0 dof) "
     "(the session means' dof)"),
    ('several sessions, one current run', [[100.0, 101.0], [103.0, 104.0], [99.0, 98.0]], [97.0],
     dict(session_spread=0.1),
     (-0.038538674664203576, 0.12555663729509933, 2.0, 0.007017029914159271, 0.3174788932569619,
      0.024404377499290208, 0.12372831316862926),
     (True, False, 3, 'estimated'),
     "SD of log img/s within a session 0.0070 (pooled, 3 dof); between sessions: SD of log 0.0244 estimated "
     "from 3 recorded sessions (session means as units); t=4.303 (2.0 dof) (the session means' dof)"),
]


def _case_function(name: str):
    if name.startswith("within"):
        return lambda runs, kw: method._within_one_session(runs, kw.get("confidence", 0.95))
    if name.startswith("one session"):
        return lambda runs, kw: method._one_recorded_session(runs, kw.get("confidence", 0.95),
                                                             kw["session_spread"], kw.get("prior"))
    return lambda runs, kw: method._several_recorded_sessions(runs, kw.get("confidence", 0.95), kw.get("prior"))


def _check(result, numbers, flags, description, prior) -> None:
    got = (result.diff, result.margin, result.dof, result.sd, result.p_value, result.between_sd, result.margin_limit)
    assert got == pytest.approx(numbers, rel=1e-12, abs=1e-15)
    assert (result.estimated, result.between_assumed, result.sessions, result.between_source) == flags
    assert result.description == description
    assert result.prior == prior


@pytest.mark.parametrize("name, sessions, current, kw, numbers, flags, description", SESSION_CASES,
                         ids=[c[0] for c in SESSION_CASES])
def test_session_difference_gives_what_it_gave_before_the_split(name, sessions, current, kw, numbers, flags,
                                                                description):
    result = session_difference(sessions, current, **{"confidence": 0.95, **kw})
    _check(result, numbers, flags, description, kw.get("prior") if "session_spread" in kw else None)
    assert result.confidence == kw.get("confidence", 0.95)


@pytest.mark.parametrize("name, sessions, current, kw, numbers, flags, description", SESSION_CASES,
                         ids=[c[0] for c in SESSION_CASES])
def test_each_case_function_gives_what_the_one_function_gave(name, sessions, current, kw, numbers, flags,
                                                             description):
    import math

    logs = [[math.log(x) for x in s] for s in sessions]
    if "session_spread" not in kw:
        logs = [[x for s in logs for x in s]]  # within one session the recorded sessions are one group
    runs = method._pool_within(logs, [math.log(x) for x in current], kw.get("default_rel_noise", 0.25))
    result = _case_function(name)(runs, kw)
    _check(result, numbers, flags, description, kw.get("prior") if "session_spread" in kw else None)
    assert result == session_difference(sessions, current, **{"confidence": 0.95, **kw})


def test_session_difference_checks_its_inputs_before_any_case():
    with pytest.raises(ValueError, match="confidence is 1.0"):
        session_difference([[1.0]], [1.0], confidence=1.0)
    with pytest.raises(ValueError, match="session_spread is -0.1"):
        session_difference([[1.0]], [1.0], session_spread=-0.1, confidence=0.95)
    with pytest.raises(ValueError, match="base has no sessions"):
        session_difference([], [1.0], names=("base", "head"), confidence=0.95)
    with pytest.raises(ValueError, match="head"):
        session_difference([[1.0]], [-1.0], names=("base", "head"), confidence=0.95)


# --- detect_steady_state: the short series, the first settled run and the drift apart ----------

_DESCRIBED = ("step 0 plus leading steps slower than {}x the median of the last half ({} s; threshold max(25%, 3 "
              "robust sigmas)) until {} consecutive settled steps: ")
#: (name, step seconds, min_steady, warm-up steps, reliable, method), as detect_steady_state said before the split
STEADY_CASES = [
    ("one step", [2.0], 3, 0, False, "only 1 step: it is kept although it includes warm-up"),
    ("too short", [2.0, 0.1, 0.1], 3, 1, False, "only 3 steps: dropped step 0, kept 2 < min_steady=3; run more steps"),
    ("warm-up then flat", [5.0, 1.0, 0.11, 0.1, 0.1, 0.102, 0.099, 0.1, 0.101, 0.1], 3, 2, True,
     _DESCRIBED.format("1.25", "0.1", 3) + "2 warm-up, 8 steady"),
    ("uneven warm-up", [5.0, 0.1, 0.4, 0.1, 0.1, 0.1, 0.1, 0.1], 3, 3, True,
     _DESCRIBED.format("1.25", "0.1", 3) + "3 warm-up, 5 steady"),
    ("never settled", [1.0, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 1.0], 10, 1, False,
     _DESCRIBED.format("1.25", "0.1", 10) + "never settled, kept the last 10 of 11 steps"),
    ("drifting", [1.0] + [0.1 * (1 + 0.03 * i) for i in range(16)], 3, 1, False,
     _DESCRIBED.format("1.25", "0.1345", 3) + "1 warm-up, 16 steady; still drifting (18% between the halves of "
     "the steady region)"),
]


@pytest.mark.parametrize("name, times, min_steady, warmup, reliable, described", STEADY_CASES,
                         ids=[c[0] for c in STEADY_CASES])
def test_detect_steady_state_gives_what_it_gave_before_the_split(name, times, min_steady, warmup, reliable,
                                                                 described):
    from pytest_bpsperf.stats.steady import detect_steady_state

    state = detect_steady_state(times, min_steady=min_steady)
    assert state.warmup_steps == tuple(range(warmup))
    assert state.steady_steps == tuple(range(warmup, len(times)))
    assert (state.reliable, state.method) == (reliable, described)


def test_steady_state_parts():
    from pytest_bpsperf.stats import steady

    assert steady._too_short(1, 3).steady_steps == (0,)
    assert steady._too_short(3, 3).warmup_steps == (0,)
    assert steady._first_settled([True, False, True, False, False, False], 3) == 3
    assert steady._first_settled([True, False, False, False], 3) == 1
    assert steady._first_settled([True, False, True, False, False], 3) is None
    assert steady._first_settled([True, False, False], 3) is None  # step 0 never counts
    assert steady._drift_note([0.1, 0.2, 0.3], 0.1) == ""  # halves of 1 step: not judged
    assert steady._drift_note([0.1] * 8, 0.1) == ""
    assert steady._drift_note([0.1, 0.1, 0.1, 0.1, 0.2, 0.2, 0.2, 0.2], 0.1).startswith("; still drifting (100%")


# --- make_plan: the run's common environment, each role's layers, servers and workers apart -----


def _plan_settings(**values):
    from pytest_bpsperf.config.settings import Hardware, Source, resolve

    return resolve([Source("cli", "command line", values)] if values else [], Hardware(gpus=0, cores=2))


_LAYERED = dict(role_env="server,scheduler:DMLC_ENABLE_RDMA=1 worker:OMP_WAIT_POLICY=ACTIVE")


def _layered_trick():
    from pytest_bpsperf.config.tricks import Trick

    return Trick("mixed", env={"worker": {"OMP_WAIT_POLICY": "PASSIVE", "KMP_BLOCKTIME": "0"},
                               "server": {"OMP_NUM_THREADS": "3"}})


def _common(role, chosen):
    return [("BPSPERF_CHOSEN_VARS", chosen), ("DMLC_NUM_WORKER", "2"), ("DMLC_NUM_SERVER", "1"),
            ("BPSPERF_RUN_ID", "run-1"), ("PS_VERBOSE", "2"), ("DMLC_ROLE", role), ("DMLC_NODE_HOST", "127.0.0.1")]


#: the embedded mxnet plan as make_plan made it before the split: (name, bundle, worker_rank, env in order)
EMBEDDED_PLAN = [
    ("scheduler", 2, None, [("OMP_NUM_THREADS", "2"), ("DMLC_ENABLE_RDMA", "1")]
     + _common("scheduler", "DMLC_ENABLE_RDMA")),
    ("server-0", 2, None, [("OMP_NUM_THREADS", "3"), ("DMLC_ENABLE_RDMA", "1")]
     + _common("server", "DMLC_ENABLE_RDMA,OMP_NUM_THREADS")),
    ("worker-0", 0, 0, [("OMP_NUM_THREADS", "2"), ("OMP_WAIT_POLICY", "PASSIVE"), ("KMP_BLOCKTIME", "0")]
     + _common("worker", "KMP_BLOCKTIME,OMP_WAIT_POLICY")),
    ("worker-1", 1, 1, [("OMP_NUM_THREADS", "2"), ("OMP_WAIT_POLICY", "PASSIVE"), ("KMP_BLOCKTIME", "0")]
     + _common("worker", "KMP_BLOCKTIME,OMP_WAIT_POLICY")),
]


def test_make_plan_gives_the_environments_it_gave_before_the_split():
    from pytest_bpsperf import backends
    from pytest_bpsperf.planning.planner import make_plan
    from pytest_bpsperf.runs.plan import Node

    plan = make_plan(_plan_settings(**_LAYERED), _layered_trick(), [Node("n0", "127.0.0.1", 2, 0)],
                     backend=backends.get("mxnet"), run_id="run-1", verbose_ps=2)
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
    plan = make_plan(_plan_settings(**_LAYERED), _layered_trick(), [head] + gpus + marked,
                     backend=backends.get("byteps"), run_id="r", gpu_ids={0: [3, 1], 1: [0, 2]})
    got = [(r.name, r.node.node_id, r.bundle, r.worker_rank, r.gpus, r.env.get("CUDA_VISIBLE_DEVICES"),
            r.env["BPSPERF_CHOSEN_VARS"], r.command[2]) for r in plan.roles]
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
        ("g0", {"GPU": 2.0, "CPU": 1.0}), ("g1", {"GPU": 2.0, "CPU": 1.0}), ("srv-0", {"CPU": 1.0})]
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


# --- run_roles: bring-up, live progress and the output apart; RoleGroup's harvest behind methods --


def _embedded_plan():
    from pytest_bpsperf import backends
    from pytest_bpsperf.planning.planner import make_plan
    from pytest_bpsperf.runs.plan import Node

    return make_plan(_plan_settings(), _layered_trick(), [Node("n0", "127.0.0.1", 2, 0)],
                     backend=backends.get("mxnet"), run_id="run-1")


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


# --- the pytest layer's objects: each writes only its own state, the others ask it through methods --------

_GLUE_NAMES = {"gate", "runner", "reports", "settings_plugin", "guard", "ledger", "session"}
#: writes that stay, each with its reason
_ALLOWED = {
    # plugin/__init__.py wires the objects it made: the runner's declared callback, and pytest's own exit status
    ("__init__.py", "runner.before_ray"),
    ("__init__.py", "session.exitstatus"),
}
_MUTATORS = {"append", "extend", "update", "add", "pop", "clear", "setdefault", "remove", "insert", "discard"}


def _chain(node):
    """``a.b.c`` as ["a", "b", "c"] (None unless it is names and attributes only)."""
    import ast

    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id] + parts[::-1]


def _foreign_writes(path):
    """Writes into another object's attributes: ``self.x.y = ...``, ``gate.y = ...``, ``self.x.y.append(...)``."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        targets = []
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for t in getattr(node, "targets", None) or [node.target]:
                targets.append(t.value if isinstance(t, ast.Subscript) else t)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS:
            targets.append(node.func.value)
        for t in targets:
            chain = _chain(t)
            if chain is None or len(chain) < 2:
                continue
            foreign = len(chain) >= 3 if chain[0] == "self" else chain[0] in _GLUE_NAMES
            if foreign and (path.name, ".".join(chain)) not in _ALLOWED:
                found.append((node.lineno, f"{path.name}:{node.lineno} {'.'.join(chain)}"))
    return [text for _, text in sorted(found)]


def test_no_object_of_the_pytest_layer_writes_another_ones_attributes():
    import pathlib

    import pytest_bpsperf

    root = pathlib.Path(pytest_bpsperf.__file__).parent
    files = sorted((root / "plugin").glob("*.py"))
    assert [w for f in files for w in _foreign_writes(f)] == []


def test_the_check_finds_what_the_pytest_layer_used_to_write(tmp_path):
    old = tmp_path / "__init__.py"
    old.write_text("def f(gate, runner, self):\n    gate.lines.append('x')\n    gate.update_failed = True\n"
                   "    self.settings_plugin.hardware = 1\n    self.gate.lines.append('y')\n"
                   "    self.ledger.failures.append(2)\n    self.written.append(3)\n    runner.before_ray = f\n")
    assert _foreign_writes(old) == ["__init__.py:2 gate.lines", "__init__.py:3 gate.update_failed",
                                    "__init__.py:4 self.settings_plugin.hardware", "__init__.py:5 self.gate.lines",
                                    "__init__.py:6 self.ledger.failures"]


def test_the_ledger_writes_its_own_lists():
    from pytest_bpsperf.judge.job import Ledger, RunFailure

    ledger = Ledger()
    ledger.note("recorded a session")
    ledger.fail(RunFailure("t.py::test", "role worker-0 died"))
    made = []
    first = ledger.job("k", lambda: made.append(1) or "job of k")
    assert (first, ledger.job("k", lambda: made.append(2) or "another"), made) == ("job of k", "job of k", [1])
    ledger.keep("a run")
    assert (ledger.notes, ledger.failures, ledger.jobs, ledger.runs) == (
        ["recorded a session"], [RunFailure("t.py::test", "role worker-0 died")], {"k": "job of k"}, ["a run"])


def test_profile_facts_before_ray_are_this_machines(tmp_path):
    from pytest_bpsperf.launch.session import PerfSession
    from pytest_bpsperf.plugin.runner import RunnerPlugin
    from pytest_bpsperf.remote.hardware import collect_facts

    here = collect_facts(cluster=None)
    session = PerfSession(ray_address="", base_log_dir=str(tmp_path))
    assert not session.cluster.started and session.profile_facts() == here  # never starts Ray
    no_session = type("R", (), {"_session": None})()
    assert RunnerPlugin.profile_facts(no_session) == here
    with_session = type("R", (), {"_session": session})()
    assert RunnerPlugin.profile_facts(with_session) == here


def test_write_baselines_keeps_an_io_error_for_the_summary():
    from pytest_bpsperf.judge.job import Ledger
    from pytest_bpsperf.plugin.baseline_gate import BaselineGate

    class Gate:
        ledger, update_failed, asked = Ledger(), False, []

        def update_baselines(self, interrupted):
            self.asked.append(interrupted)
            raise OSError(28, "No space left on device")

    gate = Gate()
    BaselineGate.write_baselines(gate, interrupted=True)
    assert (gate.asked, gate.update_failed) == ([True], True)
    assert gate.ledger.notes == ["baselines NOT written: [Errno 28] No space left on device"]


def test_settings_follow_the_hardware_given(pytester):
    from pytest_bpsperf.config.settings import Hardware
    from pytest_bpsperf.plugin.options import SettingsPlugin

    config = pytester.parseconfigure("-p", "no:cacheprovider")
    plugin = SettingsPlugin(config)
    cluster = Hardware(gpus=8, cores=32, gpu_nodes=2)
    plugin.use_hardware(cluster)
    assert plugin.hardware is cluster
