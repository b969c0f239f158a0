"""``report/markdown.py``: the session report in Markdown: base-vs-head verdicts, the trick matrix, an empty session."""

from __future__ import annotations

import pytest

from helpers.results import TEST, make_result
from helpers.verdicts import paired_verdict
from pytest_bpsperf import report
from pytest_bpsperf.report import blocks, json_document, session_pieces


def test_markdown_leads_with_the_table_and_collapses_each_jobs_pairs():
    v = paired_verdict(dropped=1)
    md = report.markdown_document([], ["profile: p"], [v])
    assert md.startswith("## bpsperf results\n\n**1 regression**\n\n### Base vs head")
    assert "| `t.py::test_x[default]` | ❌ regression | 100.0 | 70.0 | -30.0% |" in md
    assert "<details><summary>pairs of <code>t.py::test_x[default]</code></summary>" in md
    assert "| 5 | base-head | - | 70.0 | dropped: base run failed: worker-0 died |" in md
    assert "- **base**: origin/main `aaaaaaaaaaaa`" in md and "`bbbbbbbbbbbb + uncommitted changes`" in md


@pytest.mark.parametrize(
    "ratios, status, level",
    [
        ((0.7, 0.71, 0.69), "regression", "error"),
        ((1.0, 0.99, 1.01), "ok", None),
        ((0.5, 1.5, 0.9), "inconclusive", "warning"),
    ],
)
def test_every_status_has_its_words_and_inconclusive_is_never_a_pass(ratios, status, level):
    v = paired_verdict(ratios)
    assert v.status == status
    notes = report.github_annotations([v])
    assert notes[0].startswith(f"::{level} ") if level else notes == []
    md = report.markdown_document([], [], [v])
    if status == "inconclusive":
        assert "❔ inconclusive" in md and "✅" not in md


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


def test_an_empty_document_renders_an_empty_runs_table():
    text = blocks.markdown(session_pieces(json_document([], [], [])))
    assert text == (
        "## bpsperf results\n\n| test | img/s | compute/step | sync/step | bring-up | teardown | "
        "foreign load, cores |\n|---|---:|---:|---:|---:|---:|---:|\n\n"
    )
