"""``report/text.py``: terminal lines (one per run, one per verdict) and GitHub annotations."""

from __future__ import annotations

import pytest

from helpers.results import TEST, make_result
from helpers.verdicts import paired_verdict, verdict
from pytest_bpsperf import report
from pytest_bpsperf.report.text import _ranges, github_annotations
from pytest_bpsperf.runs.output import CommWindow


def test_annotations_escape_properties_as_the_toolkit_does_and_carry_the_tests_line():
    nodeid = "perf/test_x.py::TestA::test_y[a,b:c]"
    (line,) = github_annotations([verdict(nodeid, trick="a,b:c")], {nodeid: 5})
    command, message = line.split("::", 2)[1:]
    assert command.startswith("error file=perf/test_x.py,line=5,title=")
    title = command.split("title=", 1)[1]
    assert title == "bpsperf regression%3A a%2Cb%3Ac"  # ':' and ',' would end the property
    assert "%0A" not in title and "\n" not in message


def test_the_line_is_left_out_where_pytest_did_not_locate_the_test():
    (line,) = github_annotations([verdict("missing.py::test_x")], {"other.py::test_y": 3})
    assert line.startswith("::error file=missing.py,title=")
    (line,) = github_annotations([verdict("missing.py::test_x")])
    assert line.startswith("::error file=missing.py,title=")


def test_result_line():
    line = report.result_line(make_result("default", jitter=0.0))
    assert line.startswith(f"{TEST}[default]: 32.0 img/s (worker-0 16.0, worker-1 16.0)")
    assert "warm-up steps 0;" in line
    assert "bring-up 3.0s, teardown 1.0s" in line


@pytest.mark.parametrize(
    "values, expected", [([], "none"), ([0], "0"), ([0, 1, 2], "0-2"), ([0, 1, 4, 6, 7], "0-1,4,6-7")]
)
def test_ranges(values, expected):
    assert _ranges(values) == expected


def test_result_line_and_json_carry_the_byteps_timeline():
    comm = (
        CommWindow("trace/worker-0", steps=11, push_s=0.0123, pull_s=0.0456),
        CommWindow("trace/worker-1", error="no <local_rank>/comm.json among the trace files"),
    )
    r = make_result("omp-passive", comm=comm)
    line = report.result_line(r)
    assert "trace/worker-0: PUSH 0.0123s PULL 0.0456s per step (11 traced steps)" in line
    assert "trace/worker-1: no timeline (no <local_rank>/comm.json" in line
    assert r.as_dict()["timeline"] == {
        "trace/worker-0": {"name": "trace/worker-0", "mean_push_s": 0.0123, "mean_pull_s": 0.0456, "steps": 11},
        "trace/worker-1": {"name": "trace/worker-1", "error": "no <local_rank>/comm.json among the trace files"},
    }


def test_terminal_line_says_head_base_interval_pairs_and_looks():
    v = paired_verdict()
    assert v.status == "regression"
    line = report.verdict_line(v)
    assert line.startswith(
        "REGRESSION   t.py::test_x[default]: head 70.0 img/s vs base 100.0 img/s (medians of 4 "
        "pairs, base origin/main = aaaaaaaaaaaa): -30.0% (99% interval over all looks "
    )
    assert ", 80% " in line  # the tolerance interval beside the noise interval
    assert line.endswith(
        "tolerance -15% (a drop of 15% fails, of 7.5% or less passes): a drop beyond noise (99% "
        "interval below no change) and beyond half the tolerance (80% interval below -7.5%); "
        "verdict after 4 pairs, 2 looks"
    )
