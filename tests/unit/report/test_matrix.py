"""``report/matrix.py``: the trick matrix, per test and workload one row per trick against the reference trick."""

from __future__ import annotations

import statistics

import pytest

from helpers.results import TEST, make_result
from pytest_bpsperf import report


def _row(table, trick):
    return next(r for r in table.rows if r.trick == trick)


def test_matrix_change_vs_baseline_and_significance_single_runs():
    results = [
        make_result("default"),
        make_result("omp-passive", speed=2.0),
        make_result("extra-servers", speed=1.0, skew=0.001),
    ]
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
