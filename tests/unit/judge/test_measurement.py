"""``judge/measurement.py``: from what the roles wrote to a measurement (steady state, img/s, compute/sync).

The runs' records are made up (:mod:`helpers.results`). Timing modes: overlapped steps have no split
and every report says so; the breakdown is labelled as the serialized diagnostic.
"""

from __future__ import annotations

import json

import pytest

from helpers.results import REGISTRY, TEST, job_output, make_result, steps
from pytest_bpsperf import report
from pytest_bpsperf.config.settings import Hardware, Source, resolve
from pytest_bpsperf.judge.job import RunResult
from pytest_bpsperf.judge.measurement import MeasurementError, measure, measure_worker
from pytest_bpsperf.runs.output import WorkerRecords, worker_records_from
from pytest_bpsperf.runs.spec import RunSpec

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


@pytest.mark.parametrize("n", [0, 1])
def test_too_few_steps_is_a_measurement_error(n):
    w = worker_records_from("worker-0", [{"total_s": 1.0}] * n, batch_size=8)
    with pytest.raises(MeasurementError, match=rf"worker-0 recorded {n} step"):
        measure(job_output([w]))


def test_no_workers_is_a_measurement_error():
    with pytest.raises(MeasurementError, match="no worker records"):
        measure(job_output([]))


def test_missing_batch_size_is_a_measurement_error():
    w = WorkerRecords(
        "worker-0", "n0", ({"event": "step", "step": 0, "total_s": 1.0}, {"event": "step", "step": 1, "total_s": 1.0})
    )
    with pytest.raises(MeasurementError, match="batch size"):
        measure_worker(w)


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
    spec = RunSpec(
        nodeid=f"{TEST}[{trick}]", test=TEST, trick=REGISTRY.get(trick), repeat=0, settings=s, log_dir="/logs"
    )
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
