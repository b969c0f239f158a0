"""``backends/byteps_timeline.py``: per-step PUSH and PULL time from BytePS's ``comm.json`` traces."""

from __future__ import annotations

import json
import textwrap

import pytest

from pytest_bpsperf.backends.byteps_timeline import (
    TraceError,
    load_comm_json,
    read_window,
    step_timeline,
    timeline_from_files,
)


def _event(tensor: str, ts: int, dur: int, stage: str = "", key: str = "total") -> dict:
    pid = "Comm." + tensor
    return {
        "ph": "X",
        "args": {"name": pid},
        "pid": pid,
        "name": pid + ("." + stage if stage else ""),
        "ts": ts,
        "dur": dur,
        "tid": key if stage else "total",
        "cat": "Comm",
    }


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
    assert [(s.step, s.push_busy_s, s.comm_s) for s in steps] == [
        (0, pytest.approx(10e-6), 0.0),
        (1, pytest.approx(10e-6), 0.0),
    ]


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


def test_tensor_times_say_which_tensor_pushes_and_pulls_for_how_long():
    from pytest_bpsperf.backends.byteps_timeline import tensor_times

    # one rank: gradient_0 in one partition, gradient_1 in three, 3 steps; another rank pulls gradient_1 slower
    small = _tensor_steps("gradient_0", ["0"], 1_000_000, 1000, 3, 100, 200)
    big = _tensor_steps("gradient_1", ["65536", "65537", "65538"], 1_000_050, 1000, 3, 100, 300)
    slower = _tensor_steps("gradient_1", ["65536", "65537", "65538"], 1_000_050, 1000, 3, 100, 500)
    files = {
        "trace/0/comm.json": _comm_json(small + big),
        "trace/1/comm.json": _comm_json(slower),
        "trace/notes.txt": "ignored",
    }
    times = tensor_times(files)
    assert sorted(times) == ["gradient_0", "gradient_1"]
    assert times["gradient_0"] == pytest.approx({"push_s": 100e-6, "pull_s": 200e-6})
    # per step: the sum over its partitions, the mean over the ranks that traced it
    assert times["gradient_1"] == pytest.approx({"push_s": 300e-6, "pull_s": (900e-6 + 1500e-6) / 2})
    # without whole-tensor events a tensor's steps are its partitions' push count, not all of them together
    alone = [e for e in big if e["tid"] != "total"]
    assert tensor_times({"t/0/comm.json": _comm_json(alone)})["gradient_1"] == pytest.approx(
        {"push_s": 300e-6, "pull_s": 900e-6}
    )
