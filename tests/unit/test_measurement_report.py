"""Measurement (steady state, img/s) and reports (matrix, text, Markdown, JSON files)."""

from __future__ import annotations

import json
import os
import statistics

import pytest

from pytest_bpsperf import report
from pytest_bpsperf.config.settings import Hardware, Source, resolve
from pytest_bpsperf.config.tricks import TrickRegistry
from pytest_bpsperf.judge.job import RunFailure, RunResult
from pytest_bpsperf.judge.measurement import MeasurementError, measure, measure_worker
from pytest_bpsperf.report.text import _ranges
from pytest_bpsperf.runs.output import CommWindow, RoleOutcome, RunOutput, WorkerRecords, worker_records_from
from pytest_bpsperf.runs.spec import RunSpec
from pytest_bpsperf.store import files

TEST = "tests/test_x.py::test_x"


def steps(warmup, steady, n_steady=8, jitter=0.0, compute_frac=0.6, warm_compute=None):
    """Step dicts: warm-up step times, then ``n_steady`` steps around ``steady`` seconds."""
    out = []
    for t in warmup:
        c = warm_compute if warm_compute is not None else t * compute_frac
        out.append({"total_s": t, "compute_s": c, "sync_s": t - c})
    for i in range(n_steady):
        t = steady * (1 + (jitter if i % 2 else -jitter))
        out.append({"total_s": t, "compute_s": t * compute_frac, "sync_s": t * (1 - compute_frac)})
    return out


def job_output(workers, *, bringup=3.0, teardown=1.0, wall=20.0, topology=None, comm=(), single=None):
    roles = tuple(
        RoleOutcome(w.name, "worker", w.node, 0, f"/logs/{w.name}.log") for w in workers
    ) + (RoleOutcome("scheduler", "scheduler", "node-0", 0, "/logs/scheduler.log"),)
    return RunOutput(
        workers=tuple(workers),
        roles=roles,
        bringup_s=bringup,
        teardown_s=teardown,
        wall_s=wall,
        log_dir="/logs",
        topology=topology or {"workers": len(workers), "worker_processes": len(workers), "servers": 1},
        backend="mxnet",
        comm=comm,
        single_img_per_sec=single,
    )


# --- measurement -------------------------------------------------------------------------


def test_warmup_steps_are_excluded_and_aggregate_is_sum_of_workers():
    w0 = worker_records_from("worker-0", steps([3.0, 1.5], 0.5), batch_size=8)
    w1 = worker_records_from("worker-1", steps([4.0], 0.25), batch_size=8, node="node-1")
    m = measure(job_output([w0, w1]))
    assert m.warmup_steps == {"worker-0": [0, 1], "worker-1": [0]}
    assert m.per_worker_img_per_sec == {"worker-0": pytest.approx(16.0), "worker-1": pytest.approx(32.0)}
    assert m.img_per_sec == pytest.approx(48.0)
    # Not total images over total time (which would be dominated by the slow worker's pace)
    # and not including warm-up.
    pooled = 8 * (8 + 8) / (0.5 * 8 + 0.25 * 8)
    assert m.img_per_sec != pytest.approx(pooled)


def test_per_worker_img_per_sec_uses_steady_steps_only():
    w = worker_records_from("worker-0", steps([10.0, 5.0], 0.5, n_steady=6, jitter=0.05), batch_size=4)
    wm = measure_worker(w)
    assert wm.steady.warmup_steps == (0, 1)
    steady_seconds = sum(s["total_s"] for s in steps([10.0, 5.0], 0.5, n_steady=6, jitter=0.05)[2:])
    assert wm.img_per_sec == pytest.approx(4 * 6 / steady_seconds)
    assert len(wm.step_img_per_sec) == 6
    assert wm.batch_size == 4


def test_compute_and_sync_means_over_steady_steps_and_workers():
    w0 = worker_records_from("worker-0", steps([3.0], 0.5, compute_frac=0.6, warm_compute=2.9), batch_size=8)
    w1 = worker_records_from("worker-1", steps([3.0], 1.0, compute_frac=0.2, warm_compute=2.9), batch_size=8)
    m = measure(job_output([w0, w1]))
    assert m.compute_s == pytest.approx((0.5 * 0.6 + 1.0 * 0.2) / 2)
    assert m.sync_s == pytest.approx((0.5 * 0.4 + 1.0 * 0.8) / 2)
    assert m.step_s == pytest.approx(0.75)
    assert m.sync_fraction == pytest.approx(m.sync_s / 0.75)


def test_harness_timings_and_json_view():
    w = worker_records_from("worker-0", steps([2.0], 0.5), batch_size=8)
    m = measure(job_output([w], bringup=4.0, teardown=2.0, wall=30.0))
    assert (m.bringup_s, m.teardown_s, m.wall_s, m.training_s) == (4.0, 2.0, 30.0, 24.0)
    d = m.as_dict()
    assert d["img_per_sec"] == pytest.approx(16.0)
    assert d["per_worker_img_per_sec"] == {"worker-0": pytest.approx(16.0)}
    assert d["warmup_steps"] == {"worker-0": [0]}
    assert d["steady_state_reliable"] is True
    json.dumps(d)


def test_worker_records_from_shapes_records():
    w = worker_records_from("worker-3", [{"total_s": 1.0}, {"total_s": 0.5}], batch_size=16, node="n7")
    assert (w.name, w.node) == ("worker-3", "n7")
    assert w.start["batch_size"] == 16
    assert [s["step"] for s in w.steps] == [0, 1]
    assert all(s["images"] == 16 for s in w.steps)
    assert w.finished


@pytest.mark.parametrize("n", [0, 1])
def test_too_few_steps_is_a_measurement_error(n):
    w = worker_records_from("worker-0", [{"total_s": 1.0}] * n, batch_size=8)
    with pytest.raises(MeasurementError, match=rf"worker-0 recorded {n} step"):
        measure(job_output([w]))


def test_no_workers_is_a_measurement_error():
    with pytest.raises(MeasurementError, match="no worker records"):
        measure(job_output([]))


def test_missing_batch_size_is_a_measurement_error():
    w = WorkerRecords("worker-0", "n0", ({"event": "step", "step": 0, "total_s": 1.0},
                                          {"event": "step", "step": 1, "total_s": 1.0}))
    with pytest.raises(MeasurementError, match="batch size"):
        measure_worker(w)


# --- results and the trick matrix -----------------------------------------------------------

REGISTRY = TrickRegistry()


def make_result(trick="default", *, speed=1.0, repeat=0, test=TEST, jitter=0.04, workers=2, batch=8,
                settings_values=None, comm=(), single=None, skew=0.0):
    s = resolve([Source("cli", "command line", settings_values or {})], Hardware(gpus=0, cores=2))
    records = [
        worker_records_from(f"worker-{i}", steps([2.0], 0.5 / speed * (1 + skew), n_steady=10, jitter=jitter),
                            batch_size=batch)
        for i in range(workers)
    ]
    output = job_output(records, comm=comm, single=single)
    suffix = trick if not repeat and not settings_values else f"{trick}-r{repeat + 1}"
    req = RunSpec(nodeid=f"{test}[{suffix}]", test=test, trick=REGISTRY.get(trick), repeat=repeat,
                     settings=s, log_dir="/logs")
    return RunResult(spec=req, output=output, measurement=measure(output))


def test_run_result_views():
    r = make_result("omp-passive")
    assert r.trick == "omp-passive"
    assert r.img_per_sec == pytest.approx(2 * 16.0, rel=0.01)
    assert set(r.per_worker_img_per_sec) == {"worker-0", "worker-1"}
    d = r.as_dict()
    assert d["nodeid"] == f"{TEST}[omp-passive]"
    assert d["trick"] == "omp-passive"
    assert d["trick_env"]["server"] == {"OMP_WAIT_POLICY": "PASSIVE"}
    assert d["settings"]["steps"] == 20
    assert d["img_per_sec"] == pytest.approx(r.img_per_sec)
    assert "verdict" not in d
    json.dumps(d)


def _row(table, trick):
    return next(r for r in table.rows if r.trick == trick)


def test_matrix_change_vs_baseline_and_significance_single_runs():
    results = [make_result("default"), make_result("omp-passive", speed=2.0),
               make_result("extra-servers", speed=1.0, skew=0.001)]
    (table,) = report.matrix_tables(results)
    assert table.test == TEST
    assert [r.trick for r in table.rows] == ["default", "omp-passive", "extra-servers"]
    base, fast, same = _row(table, "default"), _row(table, "omp-passive"), _row(table, "extra-servers")
    assert base.change_pct is None and base.significance is None
    assert fast.change_pct == pytest.approx(100.0, abs=0.5)
    assert fast.significance.significant
    assert fast.significance.p_value < 0.05
    assert same.change_pct == pytest.approx(-0.1, abs=0.2)
    assert not same.significance.significant
    assert fast.runs == 1
    # one run: spread (stdev/mean) is over the steady steps (jitter +-4% -> about 4%)
    assert base.spread_pct == pytest.approx(4.2, abs=0.3)
    assert "per-step samples" in table.method


def test_matrix_with_repeats_uses_runs():
    results = []
    for rep, wobble in enumerate([0.0, 0.02, -0.02]):
        results.append(make_result("default", repeat=rep, skew=wobble))
        results.append(make_result("omp-passive", speed=2.0, repeat=rep, skew=-wobble))
    (table,) = report.matrix_tables(results)
    base, fast = _row(table, "default"), _row(table, "omp-passive")
    assert base.runs == fast.runs == 3
    assert fast.change_pct == pytest.approx(100.0, abs=0.5)
    assert fast.significance.significant
    assert fast.significance.n_a == fast.significance.n_b == 3
    samples = [r.img_per_sec for r in results if r.trick == "default"]
    assert base.median == pytest.approx(sorted(samples)[1])
    assert base.spread_pct == pytest.approx(100 * statistics.stdev(samples) / statistics.fmean(samples))
    assert "(runs)" in table.method


def test_matrix_without_baseline_has_no_change():
    (table,) = report.matrix_tables([make_result("omp-passive"), make_result("extra-servers")])
    assert all(r.change_pct is None and r.significance is None for r in table.rows)


def test_matrix_groups_by_test_and_workload():
    results = [
        make_result("default"),
        make_result("omp-passive", speed=2.0),
        make_result("default", test="tests/test_y.py::test_y"),
        make_result("default", settings_values={"batch_size": "16"}),
    ]
    tables = report.matrix_tables(results)
    assert len(tables) == 3
    assert [len(t.rows) for t in tables] == [2, 1, 1]
    assert {t.test for t in tables} == {TEST, "tests/test_y.py::test_y"}


def test_matrix_scaling_from_single_process_throughput():
    # 2 workers at 16 img/s each; one process alone did 20 img/s -> 32 / (2 * 20) = 80%
    (table,) = report.matrix_tables([make_result("default", jitter=0.0, single=20.0)])
    assert table.rows[0].scaling == pytest.approx(0.8)
    assert "80.0%" in "\n".join(report.format_matrix_text(table))


def test_matrix_row_sync_share():
    (table,) = report.matrix_tables([make_result("default")])
    row = table.rows[0]
    assert row.sync_pct == pytest.approx(40.0)
    assert row.as_dict()["sync_pct"] == pytest.approx(40.0)


def test_format_matrix_text_contains_tricks_and_figures():
    results = [make_result("default"), make_result("omp-passive+extra-servers", speed=2.0)]
    (table,) = report.matrix_tables(results)
    text = "\n".join(report.format_matrix_text(table))
    assert text.startswith(f"trick matrix: {TEST} (mxnet, resnet50_v2, batch 8")
    assert "default" in text and "omp-passive+extra-servers" in text
    base, fast = table.rows
    assert f"{base.median:.1f}" in text and f"{fast.median:.1f}" in text
    assert "+100.0%" in text or "+99." in text
    assert "yes (p=" in text
    assert "vs default" in text and "beyond noise" in text


def test_format_matrix_markdown_is_a_table():
    results = [make_result("default"), make_result("omp-passive", speed=2.0)]
    (table,) = report.matrix_tables(results)
    lines = report.format_matrix_markdown(table)
    md = "\n".join(lines)
    assert f"#### `{TEST}`" in md
    assert "| trick | runs | img/s |" in md
    assert "|---|---:|" in md
    row = next(line for line in lines if line.startswith("| `omp-passive` |"))
    assert f"{table.rows[1].median:.1f}" in row
    assert "+100.0%" in row or "+99." in row
    assert "| `default` |" in md


def test_markdown_and_json_documents():
    results = [make_result("default"), make_result("omp-passive", speed=2.0)]
    md = report.markdown_document(results, ["profile cpu-2c"])
    assert md.startswith("## bpsperf results")
    assert "- profile cpu-2c" in md
    assert f"| `{TEST}[omp-passive]` |" in md
    assert "| `omp-passive` |" in md
    doc = report.json_document(results, [RunFailure("tests/t.py::test_z", "role worker-1 died")], ["h"])
    assert doc["schema_version"] == report.JSON_SCHEMA_VERSION
    assert [t["trick"] for t in doc["tests"]] == ["default", "omp-passive"]
    assert doc["failures"] == [{"nodeid": "tests/t.py::test_z", "reason": "role worker-1 died"}]
    rows = doc["matrix"][0]["rows"]
    assert rows[1]["change_vs_default_pct"] == pytest.approx(100.0, abs=0.5)
    json.dumps(doc)


def test_result_line():
    line = report.result_line(make_result("default", jitter=0.0))
    assert line.startswith(f"{TEST}[default]: 32.0 img/s (worker-0 16.0, worker-1 16.0)")
    assert "warm-up steps 0;" in line
    assert "bring-up 3.0s, teardown 1.0s" in line


@pytest.mark.parametrize("values, expected", [([], "none"), ([0], "0"), ([0, 1, 2], "0-2"), ([0, 1, 4, 6, 7], "0-1,4,6-7")])
def test_ranges(values, expected):
    assert _ranges(values) == expected


# --- atomic writes ---------------------------------------------------------------------


def _leftovers(directory):
    return [p for p in os.listdir(directory) if p.endswith(".tmp") or p.startswith(".bpsperf-")]


def test_write_json_is_sorted_pretty_and_leaves_no_temp_file(tmp_path):
    path = tmp_path / "sub" / "out.json"
    report.write_json(path, {"b": 1, "a": {"d": 2, "c": [1, 2]}})
    text = path.read_text()
    assert json.loads(text) == {"a": {"c": [1, 2], "d": 2}, "b": 1}
    assert text.index('"a"') < text.index('"b"')
    assert text.endswith("\n")
    assert "\n  " in text  # indented
    assert _leftovers(path.parent) == []


def test_write_text_replaces_existing_file(tmp_path):
    path = tmp_path / "report.md"
    path.write_text("old\n")
    report.write_text(str(path), "new\n")
    assert path.read_text() == "new\n"
    assert _leftovers(tmp_path) == []


def test_write_text_failure_keeps_old_file_and_no_temp(tmp_path):
    path = tmp_path / "report.md"
    path.write_text("old\n")
    with pytest.raises(UnicodeEncodeError):
        report.write_text(path, "half written \ud800")
    assert path.read_text() == "old\n"
    assert _leftovers(tmp_path) == []


def test_write_json_failure_on_rename_keeps_old_file(tmp_path, monkeypatch):
    path = tmp_path / "out.json"
    path.write_text('{"old": true}\n')

    def broken_replace(src, dst):
        raise OSError("disk gone")

    monkeypatch.setattr(files.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk gone"):
        report.write_json(path, {"new": True})
    monkeypatch.undo()
    assert json.loads(path.read_text()) == {"old": True}
    assert _leftovers(tmp_path) == []


def test_result_line_and_json_carry_the_byteps_timeline():
    comm = (CommWindow("trace/worker-0", steps=11, push_s=0.0123, pull_s=0.0456),
            CommWindow("trace/worker-1", error="no <local_rank>/comm.json among the trace files"))
    r = make_result("omp-passive", comm=comm)
    line = report.result_line(r)
    assert "trace/worker-0: PUSH 0.0123s PULL 0.0456s per step (11 traced steps)" in line
    assert "trace/worker-1: no timeline (no <local_rank>/comm.json" in line
    assert r.as_dict()["timeline"] == {
        "trace/worker-0": {"name": "trace/worker-0", "mean_push_s": 0.0123, "mean_pull_s": 0.0456, "steps": 11},
        "trace/worker-1": {"name": "trace/worker-1", "error": "no <local_rank>/comm.json among the trace files"},
    }


def test_byteps_backend_collects_timelines_from_comm_json():
    """What the launcher fetches from the workers' trace dirs becomes a PUSH/PULL summary per node."""
    from pytest_bpsperf import backends
    from pytest_bpsperf.planning.planner import make_plan
    from pytest_bpsperf.runs.plan import Node

    gpu = Node("g", "10.9.9.9", 8, 1, "gpu")
    s = resolve([Source("cli", "command line", {"trace": "3:4", "steps": "10", "workers": "1"})],
                Hardware(gpus=1, cores=8))
    plan = make_plan(s, REGISTRY.get("default"), [gpu], backend=backends.get("byteps"), run_id="r")
    byteps = backends.get("byteps")
    (worker,) = plan.by_role("worker")
    assert byteps.artifact_dirs(worker) == ("trace/worker-0/0",)  # the root local rank's directory alone
    # two traced steps of one tensor, each with a PUSH and a PULL of one partition (us)
    events = []
    for t0 in (0, 1_000_000):
        events += [
            {"name": "Comm.w", "ph": "X", "tid": "total", "ts": t0, "dur": 300_000, "pid": 0},
            {"name": "Comm.w.PUSH", "ph": "X", "tid": "1", "ts": t0, "dur": 100_000, "pid": 0},
            {"name": "Comm.w.PULL", "ph": "X", "tid": "1", "ts": t0 + 100_000, "dur": 200_000, "pid": 0},
        ]
    files = {worker.name: {"trace/worker-0/0/comm.json": json.dumps({"traceEvents": events})}}
    (window,) = byteps.collect(plan, files)
    assert window.name == "trace/worker-0"
    assert window.push_s == pytest.approx(0.1)
    assert window.pull_s == pytest.approx(0.2)
    (empty,) = byteps.collect(plan, {worker.name: {}})
    assert empty.error is not None


def test_byteps_timeline_reads_the_root_local_rank_only():
    """BytePS's root local rank (the last) does PUSH/PULL; the other ranks' traces have none."""
    from pytest_bpsperf import backends
    from pytest_bpsperf.planning.planner import make_plan
    from pytest_bpsperf.runs.plan import Node

    gpu = Node("g", "10.9.9.9", 8, 4, "gpu")
    s = resolve([Source("cli", "command line", {"trace": "3:4", "steps": "10", "workers": "1"})],
                Hardware(gpus=4, cores=8))
    plan = make_plan(s, REGISTRY.get("default"), [gpu, Node("c", "10.9.9.8", 8, 0, "cpu")], backend=backends.get("byteps"),
                     run_id="r")
    byteps = backends.get("byteps")
    root_events, other_events = [], []
    for t0 in (0, 1_000_000):
        root_events += [
            {"name": "Comm.w", "ph": "X", "tid": "total", "ts": t0, "dur": 300_000, "pid": 0},
            {"name": "Comm.w.PUSH", "ph": "X", "tid": "1", "ts": t0, "dur": 100_000, "pid": 0},
            {"name": "Comm.w.PULL", "ph": "X", "tid": "1", "ts": t0 + 100_000, "dur": 200_000, "pid": 0},
        ]
        # a non-root rank only reduces and broadcasts locally: no PUSH, no PULL
        other_events += [
            {"name": "Comm.w", "ph": "X", "tid": "total", "ts": t0, "dur": 300_000, "pid": 0},
            {"name": "Comm.w.REDUCE", "ph": "X", "tid": "1", "ts": t0, "dur": 50_000, "pid": 0},
        ]
    texts = {f"trace/worker-0/{rank}/comm.json": json.dumps({"traceEvents": root_events if rank == 3 else other_events})
             for rank in range(4)}
    files = {w.name: texts for w in plan.by_role("worker")}
    (window,) = byteps.collect(plan, files)
    assert window.push_s == pytest.approx(0.1)  # averaging 4 ranks would give 0.025
    assert window.pull_s == pytest.approx(0.2)
    assert window.detail["ranks"] == 1
    # only the root rank's role fetches, and only its own directory
    assert [byteps.artifact_dirs(w) for w in plan.by_role("worker")] == [(), (), (), ("trace/worker-0/3",)]


def test_byteps_trace_with_bpslaunch_reads_the_root_rank_of_the_launchers_node():
    """With launch=bpslaunch one role runs every rank of a node (no BYTEPS_LOCAL_SIZE in its environment)."""
    from pytest_bpsperf import backends
    from pytest_bpsperf.planning.planner import make_plan
    from pytest_bpsperf.runs.plan import Node

    gpu = Node("g", "10.9.9.9", 8, 4, "gpu")
    s = resolve([Source("cli", "command line", {"trace": "3:4", "steps": "10", "workers": "1", "backend": "byteps",
                                                "launch": "bpslaunch"})], Hardware(gpus=4, cores=8))
    plan = make_plan(s, REGISTRY.get("default"), [gpu, Node("c", "10.9.9.8", 8, 0, "cpu")], backend=backends.get("byteps"),
                     run_id="r")
    byteps = backends.get("byteps")
    (launcher,) = plan.by_role("worker")
    assert "BYTEPS_LOCAL_SIZE" not in launcher.env
    assert byteps.artifact_dirs(launcher) == ("trace/worker-0/3",)
    events = [{"name": "Comm.w", "ph": "X", "tid": "total", "ts": t0, "dur": 300_000, "pid": 0} for t0 in (0, 10**6)]
    events += [{"name": "Comm.w.PUSH", "ph": "X", "tid": "1", "ts": t0, "dur": 100_000, "pid": 0} for t0 in (0, 10**6)]
    (window,) = byteps.collect(plan, {launcher.name: {"trace/worker-0/3/comm.json": json.dumps({"traceEvents": events})}})
    assert window.error is None and window.push_s == pytest.approx(0.1)


def test_traced_runs_are_a_workload_of_their_own():
    plain = resolve([Source("cli", "c", {"backend": "byteps"})], Hardware(gpus=1, cores=8))
    traced = resolve([Source("cli", "c", {"backend": "byteps", "trace": "10:20"})], Hardware(gpus=1, cores=8))
    assert "trace" not in plain.workload("byteps")
    assert traced.workload("byteps")["trace"] == "10:20"


# --- timing modes ----------------------------------------------------------------------


def _overlapped_result(trick="default", speed=1.0):
    s = resolve([Source("cli", "command line", {})], Hardware(gpus=0, cores=2))
    assert s.timing == "overlapped"
    records = []
    for i in range(2):
        w = worker_records_from(f"worker-{i}", [{"total_s": x["total_s"]} for x in steps([2.0], 0.5 / speed)], 8)
        start = dict(w.records[0], timing="overlapped")
        records.append(WorkerRecords(w.name, w.node, (start,) + w.records[1:]))
    output = job_output(records)
    spec = RunSpec(nodeid=f"{TEST}[{trick}]", test=TEST, trick=REGISTRY.get(trick), repeat=0, settings=s,
                   log_dir="/logs")
    return RunResult(spec=spec, output=output, measurement=measure(output))


def test_overlapped_steps_have_no_split_and_say_so():
    r = _overlapped_result()
    m = r.measurement
    assert m.timing == "overlapped"
    assert m.compute_s is None and m.sync_s is None and m.sync_fraction is None
    assert m.img_per_sec == pytest.approx(2 * 16.0)
    d = r.as_dict()
    assert d["timing"] == "overlapped" and d["settings"]["timing"] == "overlapped"
    assert d["compute_s_per_step"] is None
    line = report.result_line(r)
    assert "step 0.500s (timing overlapped);" in line and "compute" not in line
    (table,) = report.matrix_tables([r, _overlapped_result("omp-passive", 2.0)])
    text = "\n".join(report.format_matrix_text(table))
    assert "timing overlapped (one sync per step, as users train)" in text
    from pytest_bpsperf.report.matrix import row_cells

    cells = row_cells(table.rows[0])
    assert cells[6:9] == ("-", "-", "-")
    assert "- (overlapped)" in report.markdown_document([r], [])
    json.dumps(report.json_document([r], [], []))


def test_breakdown_is_labelled_as_the_serialized_diagnostic():
    r = make_result("default", jitter=0.0)
    assert r.measurement.timing == "breakdown"  # split step records
    assert "compute 0.300s + sync 0.200s (timing breakdown: serialized steps)" in report.result_line(r)
    (table,) = report.matrix_tables([r])
    assert "timing breakdown (diagnostic: each step serialized" in table.description


def test_runs_of_the_two_timing_modes_are_never_one_job_or_matrix():
    from pytest_bpsperf.runs.spec import run_key

    over, brk = _overlapped_result(), make_result("default", settings_values={"timing": "breakdown"})
    assert run_key(over.spec, "mxnet") != run_key(brk.spec, "mxnet")
    assert "timing=overlapped" in run_key(over.spec, "mxnet") and "timing=breakdown" in run_key(brk.spec, "mxnet")
    assert len(report.matrix_tables([over, brk])) == 2
