"""Where a step's time goes: the diagnostic records, a run's and a side's breakdown, what grew.

The diagnostic steps themselves (a worker process training them after its timed
steps) are in ``tests/e2e/test_e2e_workload_local.py``; verdicts and reports
that carry the breakdown, in ``tests/pytester/test_breakdown_reports.py``.
"""

from __future__ import annotations

import pytest

from pytest_bpsperf.judge.breakdown import (
    BreakdownChange,
    StepBreakdown,
    breakdown_change,
    breakdown_view,
    change_phrase,
    combine,
    run_breakdown,
    worker_breakdown,
)
from pytest_bpsperf.runs.output import CommWindow, WorkerRecords


def diag(k, compute, sync, input_s=0.0):
    return {
        "event": "diagnostic",
        "step": k,
        "input_s": input_s,
        "compute_s": compute,
        "sync_s": sync,
        "unsplit_s": None,
        "total_s": input_s + compute + sync,
    }


def test_a_worker_takes_the_median_of_its_diagnostic_steps_and_ignores_the_timed_ones():
    records = [
        {"event": "start"},
        {"event": "step", "step": 0, "total_s": 9.0},
        diag(0, 0.30, 0.10),
        diag(1, 0.20, 0.50),
        diag(2, 0.25, 0.12),
        {"event": "end"},
    ]
    b = worker_breakdown(records)
    assert (b.compute_s, b.sync_s, b.steps, b.workers) == (0.25, 0.12, 3, 1)
    assert worker_breakdown([{"event": "step", "total_s": 1.0}]) is None


def test_a_run_is_the_worker_the_others_waited_for_with_the_traced_tensors():
    # dist_sync: w0 finished its compute early and waited for w1's in its push/pull wait
    workers = [WorkerRecords("w0", "n0", (diag(0, 0.2, 0.3),)), WorkerRecords("w1", "n1", (diag(0, 0.4, 0.1),))]
    comm = [
        CommWindow(
            "t0",
            steps=3,
            push_s=0.01,
            pull_s=0.02,
            detail={"tensors": {"fc_weight": {"push_s": 0.004, "pull_s": 0.006}}},
        ),
        CommWindow("t1", error="no trace"),
    ]
    b = run_breakdown(workers, comm)
    # the straggler's compute is compute; push/pull wait is the communication alone
    assert (b.compute_s, b.sync_s, b.total_s, b.workers) == (0.4, 0.1, 0.5, 2)
    assert b.tensors == {"fc_weight": {"push_s": 0.004, "pull_s": 0.006}}
    assert StepBreakdown.from_dict(b.as_dict()) == b  # the JSON view travels
    assert run_breakdown([WorkerRecords("w", "n", ({"event": "step"},))]) is None


def test_a_side_is_the_median_over_its_runs():
    runs = [
        StepBreakdown(0.3, compute_s=0.2, sync_s=0.1),
        StepBreakdown(0.5, compute_s=0.3, sync_s=0.2).as_dict(),
        None,
        StepBreakdown(0.9, compute_s=0.8, sync_s=0.1),
    ]
    side = combine(runs)
    assert (side.total_s, side.compute_s, side.sync_s) == (0.5, 0.3, 0.1)
    assert combine([None, {}]) is None


def test_the_phrase_names_the_part_that_grew_most_in_seconds_not_in_percent():
    base = StepBreakdown(0.30, compute_s=0.20, sync_s=0.10, input_s=0.0001)
    head = StepBreakdown(0.34, compute_s=0.202, sync_s=0.138, input_s=0.0002)  # input +100%, but 0.1 ms
    change = BreakdownChange(base, head)
    assert change.grown() == ("sync_s", pytest.approx(0.038))
    text = change.phrase(-14.0)
    assert text.startswith("head 14.0% slower: compute +1%, push/pull wait +38%, input wait +100%")
    assert "(push/pull wait grew most: +0.038 of +0.040 s per step)" in text
    # a part that is nothing on both sides (synthetic data's input) is not named
    quiet = BreakdownChange(
        StepBreakdown(0.3, compute_s=0.2, sync_s=0.1, input_s=0.0),
        StepBreakdown(0.4, compute_s=0.3, sync_s=0.1, input_s=0.0),
    )
    assert (
        quiet.phrase(-25.0) == "head 25.0% slower: compute +50%, push/pull wait +0% (compute grew most: "
        "+0.100 of +0.100 s per step)"
    )


def test_a_slower_push_pull_names_the_tensors_whose_transfers_grew():
    base = StepBreakdown(0.3, compute_s=0.2, sync_s=0.1, tensors={"conv_weight": {"push_s": 0.01, "pull_s": 0.01}})
    head = StepBreakdown(
        0.5,
        compute_s=0.2,
        sync_s=0.3,
        tensors={"conv_weight": {"push_s": 0.01, "pull_s": 0.01}, "big_weight": {"push_s": 0.08, "pull_s": 0.09}},
    )
    text = BreakdownChange(base, head).phrase(-40.0)
    assert text.endswith("(push/pull wait grew most: +0.200 of +0.200 s per step; most in big_weight +170.0 ms)")


def test_without_both_sides_there_is_no_change_to_name():
    one = StepBreakdown(0.3, compute_s=0.2, sync_s=0.1).as_dict()
    assert breakdown_change(one, None) is None and change_phrase({"head": one}, -20.0) == ""
    assert breakdown_view({"head": one}) == {"head": one}
    view = breakdown_view({"base": one, "head": one})
    assert view["grew_most"] is None and view["change_pct"] == {"compute_s": 0.0, "sync_s": 0.0}
    assert breakdown_view({}) is None
