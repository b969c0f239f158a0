"""The byteps backend without its processes: role environments, plans, trace timelines, the preflight.

- ``worker_env``/``server_env`` against bpslaunch's rules;
- the comm.json timeline on small synthetic traces in BytePS's format.

The same rules checked against bpslaunch itself, BytePS's real scheduler and
servers, and GPU training are in ``tests/e2e/test_e2e_byteps.py``.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap

import pytest

from pytest_bpsperf import backends
from pytest_bpsperf.backends.byteps_env import (
    TRAINER_MIN_START_STEP,
    BytePSEnvError,
    TraceWindow,
    server_env,
    server_library,
    worker_env,
)
from pytest_bpsperf.backends.byteps_timeline import (
    TraceError,
    load_comm_json,
    read_window,
    step_timeline,
    timeline_from_files,
)
from pytest_bpsperf.config.settings import Hardware, Source, resolve

# -- worker_env / server_env: bpslaunch's rules ---------------------------------


def test_worker_env_for_one_local_rank():
    env = worker_env(worker_id=1, local_rank=2, local_size=4, num_workers=3)
    assert env == {
        "DMLC_WORKER_ID": "1",
        "BYTEPS_LOCAL_RANK": "2",
        "BYTEPS_LOCAL_SIZE": "4",
        "NVIDIA_VISIBLE_DEVICES": "0,1,2,3",
        "CUDA_VISIBLE_DEVICES": "0,1,2,3",
        "BYTEPS_NUMA_ON": "0",
        # the node's local ranks' sockets: a directory of this run and worker node (see socket_path)
        "BYTEPS_SOCKET_PATH": "{scratch}/byteps-w1",
    }


def test_local_size_is_the_number_of_visible_gpus():
    # bpslaunch: local_size = len(NVIDIA_VISIBLE_DEVICES.split(","))
    for size in (1, 2, 8):
        env = worker_env(worker_id=0, local_rank=size - 1, local_size=size, num_workers=2)
        assert len(env["NVIDIA_VISIBLE_DEVICES"].split(",")) == int(env["BYTEPS_LOCAL_SIZE"]) == size


def test_explicit_gpus_are_the_nodes_gpus():
    env = worker_env(worker_id=0, local_rank=1, local_size=2, num_workers=2, gpus=[4, 6])
    assert env["NVIDIA_VISIBLE_DEVICES"] == env["CUDA_VISIBLE_DEVICES"] == "4,6"
    assert env["BYTEPS_LOCAL_RANK"] == "1"


@pytest.mark.parametrize("workers, forced", [(1, True), (2, False), (4, False)])
def test_one_worker_job_is_forced_distributed(workers, forced):
    env = worker_env(worker_id=0, local_rank=0, local_size=1, num_workers=workers)
    assert (env.get("BYTEPS_FORCE_DISTRIBUTED") == "1") is forced


def test_numa_binding_is_off_unless_asked():
    assert worker_env(worker_id=0, local_rank=0, local_size=1, num_workers=1)["BYTEPS_NUMA_ON"] == "0"
    assert worker_env(worker_id=0, local_rank=0, local_size=1, num_workers=1, numa=True)["BYTEPS_NUMA_ON"] == "1"


def test_trace_window_variables():
    window = TraceWindow(start_step=5, end_step=9, dir="/data/trace/w0")
    env = worker_env(worker_id=0, local_rank=1, local_size=2, num_workers=2, trace=window)
    assert {k: v for k, v in env.items() if k.startswith("BYTEPS_TRACE_")} == {
        "BYTEPS_TRACE_ON": "1",
        "BYTEPS_TRACE_START_STEP": "5",
        "BYTEPS_TRACE_END_STEP": "9",
        "BYTEPS_TRACE_DIR": "/data/trace/w0",
    }
    assert window.steps == 5
    assert window.rank_dir(1) == os.path.join("/data/trace/w0", "1")
    assert "BYTEPS_TRACE_ON" not in worker_env(worker_id=0, local_rank=0, local_size=1, num_workers=1)


@pytest.mark.parametrize(
    "start, end, message",
    [
        (0, 5, "start_step must be >= 1"),  # BytePS aborts the worker (BPS_CHECK)
        (-1, 5, "start_step must be >= 1"),
        (5, 5, "end_step must be greater"),
        (6, 5, "end_step must be greater"),
        (1.5, 5, "must be an integer"),
        (True, 5, "must be an integer"),
    ],
)
def test_trace_window_is_validated(start, end, message):
    with pytest.raises(BytePSEnvError, match=message):
        TraceWindow(start_step=start, end_step=end, dir="trace")


@pytest.mark.parametrize("path", ["", "  "])
def test_trace_window_needs_a_directory(path):
    with pytest.raises(BytePSEnvError, match="dir"):
        TraceWindow(start_step=3, end_step=5, dir=path)


def test_trace_window_for_distributed_trainer():
    TraceWindow(TRAINER_MIN_START_STEP, 6, "t").check_for_trainer(training_steps=6)
    with pytest.raises(BytePSEnvError, match="start at step 3 or later"):
        TraceWindow(2, 6, "t").check_for_trainer(training_steps=20)
    with pytest.raises(BytePSEnvError, match="trains only 5 steps"):
        TraceWindow(3, 6, "t").check_for_trainer(training_steps=5)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(worker_id=2, local_rank=0, local_size=1, num_workers=2), "worker_id 2 is out of range"),
        (dict(worker_id=-1, local_rank=0, local_size=1, num_workers=2), "worker_id must be"),
        (dict(worker_id=0, local_rank=2, local_size=2, num_workers=1), "local_rank 2 is out of range"),
        (dict(worker_id=0, local_rank=0, local_size=0, num_workers=1), "local_size must be"),
        (dict(worker_id=0, local_rank=0, local_size=1, num_workers=0), "num_workers must be"),
        (dict(worker_id=0, local_rank=0, local_size=2, num_workers=1, gpus=[0]), "one GPU per local rank"),
        (dict(worker_id=0, local_rank=0, local_size=2, num_workers=1, gpus=[1, 1]), "distinct"),
        (dict(worker_id=0, local_rank=0, local_size=1, num_workers=1, gpus=[-1]), "GPU id"),
        (dict(worker_id=0, local_rank=0, local_size=1, num_workers=1, trace=(1, 2, "t")), "TraceWindow"),
    ],
)
def test_worker_env_rejects_what_bytep_would_not_run(kwargs, message):
    with pytest.raises(BytePSEnvError, match=message):
        worker_env(**kwargs)


def test_server_env():
    assert server_env(num_workers=1) == {"BYTEPS_SERVER_ENGINE_THREAD": "4", "BYTEPS_FORCE_DISTRIBUTED": "1"}
    assert server_env(num_workers=3, engine_threads=8)["BYTEPS_SERVER_ENGINE_THREAD"] == "8"
    with pytest.raises(BytePSEnvError, match="engine_threads"):
        server_env(num_workers=1, engine_threads=0)  # the C++ server aborts (CHECK_GE 1)
    with pytest.raises(BytePSEnvError, match="num_workers"):
        server_env(num_workers=0)


def test_server_library_is_found_without_importing_the_server(tmp_path, monkeypatch):
    pkg = tmp_path / "byteps"
    (pkg / "server").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    # importing byteps.server would start a ps-lite node; the lookup must not run it
    (pkg / "server" / "__init__.py").write_text("raise SystemExit('byteps.server was imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "byteps", raising=False)
    assert server_library() is None
    lib = pkg / "server" / "c_lib.cpython-39-x86_64-linux-gnu.so"
    lib.write_bytes(b"")
    assert server_library() == str(lib)
    assert "byteps.server" not in sys.modules


def _plan(with_workers=True, **values):
    from pytest_bpsperf.config.tricks import BUILTIN_TRICKS
    from pytest_bpsperf.planning.planner import make_plan
    from pytest_bpsperf.runs.plan import Node

    settings = resolve([Source("cli", "test", values)], Hardware(gpus=0, cores=2))
    nodes = [Node("cpu", "10.0.1.1", 16, 0, "cpu"), Node("gpu", "10.0.0.1", 32, 2, "gpu")]
    return make_plan(settings, BUILTIN_TRICKS["omp-passive"], nodes, backend=backends.get("byteps"), run_id="r",
                     with_workers=with_workers, verbose_ps=2)


def test_plan_gives_byteps_roles_their_environment():
    plan = _plan(workers="1")
    workers = plan.by_role("worker")
    assert [w.name for w in workers] == ["worker-0.0", "worker-0.1"]
    for rank, w in enumerate(workers):
        expected = worker_env(worker_id=0, local_rank=rank, local_size=2, num_workers=1)
        assert {k: w.env[k] for k in expected} == expected
        assert w.env["DMLC_NODE_HOST"] == "10.0.0.1"
    for s in plan.by_role("server"):
        assert {k: s.env[k] for k in server_env(num_workers=1)} == server_env(num_workers=1)
    assert {r.env["PS_VERBOSE"] for r in plan.roles} == {"2"}


def test_server_side_plan_without_gpus():
    from pytest_bpsperf.config.tricks import BUILTIN_TRICKS
    from pytest_bpsperf.planning.planner import make_plan
    from pytest_bpsperf.runs.plan import Node, PlanError

    settings = resolve([Source("cli", "test", {"workers": "2"})], Hardware(gpus=0, cores=2))
    cpu_only = [Node("n0", "127.0.0.1", 2, 0)]
    with pytest.raises(PlanError, match="GPU worker node"):
        make_plan(settings, BUILTIN_TRICKS["default"], cpu_only, backend=backends.get("byteps"), run_id="r")
    plan = make_plan(settings, BUILTIN_TRICKS["default"], cpu_only, backend=backends.get("byteps"), run_id="r",
                     with_workers=False)
    assert [r.name for r in plan.roles] == ["scheduler", "server-0"]
    assert plan.worker_processes == 0
    # the servers still wait for the configured workers
    assert {r.env["DMLC_NUM_WORKER"] for r in plan.roles} == {"2"}
    with pytest.raises(PlanError, match="PS_VERBOSE"):
        make_plan(settings, BUILTIN_TRICKS["default"], cpu_only, backend=backends.get("byteps"), run_id="r",
                  with_workers=False, verbose_ps=3)


# -- timeline: comm.json in BytePS's format ---------------------------------------


def _event(tensor: str, ts: int, dur: int, stage: str = "", key: str = "total") -> dict:
    pid = "Comm." + tensor
    return {"ph": "X", "args": {"name": pid}, "pid": pid, "name": pid + ("." + stage if stage else ""),
            "ts": ts, "dur": dur, "tid": key if stage else "total", "cat": "Comm"}


def _comm_json(events: list) -> str:
    """Text laid out as BytePS's OutputTraces writes it."""
    body = ",\n".join(textwrap.indent(json.dumps(e, indent=4), " " * 8) for e in events)
    return '{\n    "traceEvents": [\n' + body + '\n\n    ],\n    "displayTimeUnit": "ms"\n}\n'


def _tensor_steps(tensor: str, keys: list, t0: int, period: int, steps: int, push: int, pull: int) -> list:
    """``steps`` push_pulls of one tensor, each partition pushing then pulling."""
    events = []
    for k in range(steps):
        start = t0 + k * period
        events.append(_event(tensor, start, 10 + push + pull + 10))
        for i, key in enumerate(keys):
            events.append(_event(tensor, start + 5 + i, push, "PUSH", key))
            events.append(_event(tensor, start + 5 + i + push, pull, "PULL", key))
            events.append(_event(tensor, start + 1, 3, "COPYD2H", key))
    return events


def test_timeline_of_one_rank():
    # gradient_0 in one partition, gradient_1 in three; steps 1 ms apart
    events = _tensor_steps("gradient_0", ["0"], 1_000_000, 1000, 3, 100, 200)
    events += _tensor_steps("gradient_1", ["65536", "65537", "65538"], 1_000_050, 1000, 3, 100, 300)
    steps = step_timeline(load_comm_json(_comm_json(events)), first_step=4)
    assert [s.step for s in steps] == [4, 5, 6]
    for s in steps:
        assert s.tensors == 2
        # busy: every partition counts; wall: overlapping transfers count once
        assert s.push_busy_s == pytest.approx((100 + 3 * 100) * 1e-6)
        assert s.pull_busy_s == pytest.approx((200 + 3 * 300) * 1e-6)
        # gradient_0 pushes 1000005..1000105; gradient_1's partitions 1000055..1000157
        assert s.push_s == pytest.approx((1_000_157 - 1_000_005) * 1e-6)
        assert s.pull_s == pytest.approx((1_000_457 - 1_000_105) * 1e-6)
        assert s.comm_s == pytest.approx((1_000_050 + 420 - 1_000_000) * 1e-6)


def test_partition_events_follow_their_push_pull_not_their_count():
    # a partition whose events are missing for one step must not shift the others
    events = _tensor_steps("g", ["1", "2"], 0, 1000, 3, 10, 20)
    events = [e for e in events if not (e["tid"] == "2" and 1000 <= e["ts"] < 2000)]
    steps = step_timeline(load_comm_json(_comm_json(events)))
    assert [s.push_busy_s for s in steps] == pytest.approx([20e-6, 10e-6, 20e-6])


def test_tensor_names_with_dots_and_unordered_events():
    events = _tensor_steps("resnet.stage1.conv0_weight", ["7"], 500, 1000, 2, 40, 60)
    events.reverse()
    parsed = load_comm_json(_comm_json(events))
    assert {e.tensor for e in parsed} == {"resnet.stage1.conv0_weight"}
    assert {e.stage for e in parsed} == {"", "PUSH", "PULL", "COPYD2H"}
    steps = step_timeline(parsed)
    assert [(s.push_s, s.pull_s) for s in steps] == [pytest.approx((40e-6, 60e-6))] * 2


def test_tensor_without_total_events_uses_its_own_order():
    events = [e for e in _tensor_steps("g", ["1"], 0, 1000, 2, 10, 20) if e["tid"] != "total"]
    steps = step_timeline(load_comm_json(_comm_json(events)))
    assert [(s.step, s.push_busy_s, s.comm_s) for s in steps] == [(0, pytest.approx(10e-6), 0.0),
                                                                  (1, pytest.approx(10e-6), 0.0)]


def test_read_window_over_local_ranks_and_summary(tmp_path):
    for rank, pull in ((0, 200), (1, 400)):
        d = tmp_path / str(rank)
        d.mkdir()
        events = _tensor_steps("gradient_0", ["0", "1"], 10_000, 1000, 4, 100, pull)
        (d / "comm.json").write_text(_comm_json(events))
    (tmp_path / "notes").mkdir()  # not a rank directory: ignored
    timeline = read_window(str(tmp_path), start_step=3)
    assert [r.local_rank for r in timeline.ranks] == [0, 1]
    assert [s.step for s in timeline.ranks[0].steps] == [2, 3, 4, 5]  # 0-based training steps
    summary = timeline.summary()
    assert (summary.ranks, summary.steps, summary.samples) == (2, 4, 8)
    assert summary.mean_push_s == pytest.approx(101e-6)
    assert summary.mean_pull_s == pytest.approx((201 + 401) / 2 * 1e-6)
    assert summary.mean_pull_busy_s == pytest.approx((400 + 800) / 2 * 1e-6)
    doc = json.loads(json.dumps(timeline.as_dict()))
    assert doc["summary"]["samples"] == 8 and len(doc["ranks"][1]["steps"]) == 4


def test_timeline_from_files_read_on_another_node():
    # what RoleProcess.read_files returns: paths relative to the role's log dir
    text = _comm_json(_tensor_steps("g", ["0"], 0, 1000, 2, 10, 20))
    timeline = timeline_from_files({"trace/worker-0/0/comm.json": text, "trace/worker-0/0/other.txt": "x"})
    assert [r.local_rank for r in timeline.ranks] == [0]
    assert timeline.summary().steps == 2


def test_incomplete_trace_file_is_a_clear_error(tmp_path):
    (tmp_path / "0").mkdir()
    text = _comm_json(_tensor_steps("g", ["0"], 0, 1000, 2, 10, 20))
    (tmp_path / "0" / "comm.json").write_text(text[: len(text) // 2])
    with pytest.raises(TraceError, match=r"0/comm.json: not valid JSON .*communication traces output done"):
        read_window(str(tmp_path))


def test_missing_traces_are_clear_errors(tmp_path):
    with pytest.raises(TraceError, match="does not exist"):
        read_window(str(tmp_path / "nope"))
    with pytest.raises(TraceError, match="BYTEPS_TRACE_END_STEP"):
        read_window(str(tmp_path))
    with pytest.raises(TraceError, match="not a Chrome trace"):
        load_comm_json('{"displayTimeUnit": "ms"}', "x.json")
    empty = timeline_from_files({"0/comm.json": _comm_json([])})
    with pytest.raises(TraceError, match="no traced steps"):
        empty.summary()


# -- the preflight: its plan and what it finds -------------------------------------


def test_the_byteps_preflight_is_one_push_pull_through_a_real_scheduler_and_server():
    from pytest_bpsperf.backends.byteps import PushPullProbe
    from pytest_bpsperf.config.tricks import BUILTIN_TRICKS
    from pytest_bpsperf.planning.planner import make_plan
    from pytest_bpsperf.runs.plan import Node

    s = resolve([Source("cli", "c", {"backend": "byteps", "workers": "1"})], Hardware(gpus=8, cores=8))
    nodes = [Node("g", "10.0.0.2", 8, 8, "gpu"), Node("c", "10.0.0.3", 8, 0, "cpu")]
    plan = make_plan(s.with_values(gpus_per_worker=1), BUILTIN_TRICKS["default"], nodes, backend=PushPullProbe(),
                     run_id="pre")
    assert [r.role for r in plan.roles] == ["scheduler", "server", "worker"]
    (worker,) = plan.by_role("worker")
    assert worker.gpus == 1 and worker.env["BYTEPS_FORCE_DISTRIBUTED"] == "1"  # through the server, not NCCL only
    assert worker.command[1:3] == ("-m", "pytest_bpsperf.remote.byteps_preflight") and worker.command[-1] == "{records}"
    assert plan.backend == "byteps"  # the launcher collects as for BytePS (nothing: no trace)


def test_the_preflight_finds_the_workers_data_missing_on_their_node(tmp_path):
    from pytest_bpsperf.remote.preflight import facts

    rec = tmp_path / "train.rec"
    rec.write_bytes(b"")
    found = facts([], None, None, data=str(rec))
    assert any("train.idx" in p and "setting 'data'" in p for p in found["problems"])
    (tmp_path / "train.idx").write_bytes(b"")
    assert facts([], None, None, data=str(rec))["problems"] == []


def test_tensor_times_say_which_tensor_pushes_and_pulls_for_how_long():
    from pytest_bpsperf.backends.byteps_timeline import tensor_times

    # one rank: gradient_0 in one partition, gradient_1 in three, 3 steps; another rank pulls gradient_1 slower
    small = _tensor_steps("gradient_0", ["0"], 1_000_000, 1000, 3, 100, 200)
    big = _tensor_steps("gradient_1", ["65536", "65537", "65538"], 1_000_050, 1000, 3, 100, 300)
    slower = _tensor_steps("gradient_1", ["65536", "65537", "65538"], 1_000_050, 1000, 3, 100, 500)
    files = {"trace/0/comm.json": _comm_json(small + big), "trace/1/comm.json": _comm_json(slower),
             "trace/notes.txt": "ignored"}
    times = tensor_times(files)
    assert sorted(times) == ["gradient_0", "gradient_1"]
    assert times["gradient_0"] == pytest.approx({"push_s": 100e-6, "pull_s": 200e-6})
    # per step: the sum over its partitions, the mean over the ranks that traced it
    assert times["gradient_1"] == pytest.approx({"push_s": 300e-6, "pull_s": (900e-6 + 1500e-6) / 2})
    # without whole-tensor events a tensor's steps are its partitions' push count, not all of them together
    alone = [e for e in big if e["tid"] != "total"]
    assert tensor_times({"t/0/comm.json": _comm_json(alone)})["gradient_1"] == pytest.approx(
        {"push_s": 300e-6, "pull_s": 900e-6})
