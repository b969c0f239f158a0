"""``runs/output.py``: what a run's roles produced: worker records, and the foreign load beside them."""

from __future__ import annotations

import pytest

from pytest_bpsperf.runs.output import NodeLoad, RunOutput, worker_records_from


def test_a_runs_foreign_load_is_its_busiest_nodes():
    out = RunOutput(
        workers=(),
        roles=(),
        bringup_s=0,
        teardown_s=0,
        wall_s=1,
        log_dir="",
        backend="mxnet",
        load=(NodeLoad("a", 2.0, 3.0, 2.9, 2), NodeLoad("b", 2.0, 4.0, 1.0, 2)),
    )
    assert out.foreign_cores == pytest.approx(1.5)
    assert NodeLoad("c", 2.0, 1.0, 1.5, 2).foreign_cores == 0.0  # never below zero
    assert (
        RunOutput(workers=(), roles=(), bringup_s=0, teardown_s=0, wall_s=1, log_dir="", backend="mxnet").foreign_cores
        is None
    )


def test_worker_records_from_shapes_records():
    w = worker_records_from("worker-3", [{"total_s": 1.0}, {"total_s": 0.5}], batch_size=16, node="n7")
    assert (w.name, w.node) == ("worker-3", "n7")
    assert w.start["batch_size"] == 16
    assert [s["step"] for s in w.steps] == [0, 1]
    assert all(s["images"] == 16 for s in w.steps)
    assert w.finished
