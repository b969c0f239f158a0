"""Reports of base-vs-head verdicts: terminal line, Markdown, annotations, JSON, the pairs picture."""

from __future__ import annotations

import json
import math

import pytest

from helpers.verdicts import paired_verdict
from pytest_bpsperf import report
from pytest_bpsperf.report.plots import pairs_picture


def test_terminal_line_says_head_base_interval_pairs_and_looks():
    v = paired_verdict()
    assert v.status == "regression"
    line = report.verdict_line(v)
    assert line.startswith("REGRESSION   t.py::test_x[default]: head 70.0 img/s vs base 100.0 img/s (medians of 4 "
                           "pairs, base origin/main = aaaaaaaaaaaa): -30.0% (99% interval over all looks ")
    assert ", 80% " in line  # the tolerance interval beside the noise interval
    assert line.endswith("tolerance -15% (a drop of 15% fails, of 7.5% or less passes): a drop beyond noise (99% "
                         "interval below no change) and beyond half the tolerance (80% interval below -7.5%); "
                         "verdict after 4 pairs, 2 looks")


def test_markdown_leads_with_the_table_and_collapses_each_jobs_pairs():
    v = paired_verdict(dropped=1)
    md = report.markdown_document([], ["profile: p"], [v])
    assert md.startswith("## bpsperf results\n\n**1 regression**\n\n### Base vs head")
    assert "| `t.py::test_x[default]` | ❌ regression | 100.0 | 70.0 | -30.0% |" in md
    assert "<details><summary>pairs of <code>t.py::test_x[default]</code></summary>" in md
    assert "| 5 | base-head | - | 70.0 | dropped: base run failed: worker-0 died |" in md
    assert "- **base**: origin/main `aaaaaaaaaaaa`" in md and "`bbbbbbbbbbbb + uncommitted changes`" in md


@pytest.mark.parametrize("ratios, status, level", [
    ((0.7, 0.71, 0.69), "regression", "error"),
    ((1.0, 0.99, 1.01), "ok", None),
    ((0.5, 1.5, 0.9), "inconclusive", "warning"),
])
def test_every_status_has_its_words_and_inconclusive_is_never_a_pass(ratios, status, level):
    v = paired_verdict(ratios)
    assert v.status == status
    notes = report.github_annotations([v])
    assert (notes[0].startswith(f"::{level} ") if level else notes == [])
    md = report.markdown_document([], [], [v])
    if status == "inconclusive":
        assert "❔ inconclusive" in md and "✅" not in md


def test_no_interval_before_the_first_look():
    v = paired_verdict((0.9, 0.95))
    assert v.status == "inconclusive" and not v.comparison.decided
    assert v.comparison.ci_low is None and v.comparison.margin_pct is None
    assert "no interval before 3 pairs" in v.figures()
    assert json.loads(json.dumps(v.as_dict()))["ci_low"] is None


def test_pairs_picture_draws_what_was_measured(tmp_path):
    v = paired_verdict()
    job = {**v.as_dict(), "nodeid": v.nodeid}
    picture = pairs_picture(job, tmp_path)
    assert picture.kind == "pairs" and (tmp_path / picture.path.split("/")[-1]).stat().st_size > 1000
    assert picture.data["ratio"] == [0.7, 0.71, 0.69, 0.7] and picture.data["status"] == "regression"
    assert math.isclose(picture.data["ci_high"], v.comparison.ci_high)
