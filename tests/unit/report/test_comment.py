"""``report/comment.py``: the pull-request comment: summary first, collapsed, cut below the limit; marker, link."""

from __future__ import annotations

import pytest

from pytest_bpsperf.report.comment import (
    GITHUB_COMMENT_LIMIT,
    check_link,
    check_marker,
    comment_body,
    summary_line,
    verdict_counts,
)

PAIRED = {"base_vs_head": {"jobs": [{"status": s} for s in ("ok", "regression", "ok", "inconclusive", "ok")]}}
#: a results file before schema 3: each run carries its job's verdict
STORED = {
    "tests": [
        {"nodeid": "t.py::a[default]", "test": "t.py::a", "trick": "default", "verdict": {"status": "ok", "key": "k1"}},
        # a repeat of the same job
        {"nodeid": "t.py::a[default]", "test": "t.py::a", "trick": "default", "verdict": {"status": "ok", "key": "k1"}},
        {
            "nodeid": "t.py::a[omp-passive]",
            "test": "t.py::a",
            "trick": "omp-passive",
            "verdict": {"status": "improvement", "key": "k2"},
        },
        {
            "nodeid": "t.py::b[default]",
            "test": "t.py::b",
            "trick": "default",
            "verdict": {"status": "no-baseline", "key": "k3"},
        },
        {"nodeid": "t.py::c[default]", "test": "t.py::c", "trick": "default"},  # pending: no verdict yet
    ]
}
#: schema 3: the session's verdicts in one list
LISTED = {"tests": [], "verdicts": [{"status": s} for s in ("ok", "inconclusive", "regression", "ok")]}


def test_the_summary_names_the_most_urgent_status_first():
    assert summary_line(verdict_counts(PAIRED)) == "1 regression, 1 inconclusive, 3 ok"
    assert summary_line(verdict_counts(STORED)) == "1 no-baseline, 1 improvement, 1 ok"
    assert summary_line(verdict_counts(LISTED)) == "1 regression, 1 inconclusive, 2 ok"
    assert summary_line(verdict_counts({"tests": []})) == "no verdict"


def test_the_body_leads_with_the_marker_and_the_summary_and_collapses_the_report():
    report = "## bpsperf results\n\n**1 regression**\n\n![ratios of t.py::a](img/pairs-a.png)\n| a | b |\n"
    body = comment_body(PAIRED, report, marker="cpu", link="https://x/runs/1#artifacts")
    lines = body.splitlines()
    assert lines[0] == "<!-- bpsperf:cpu -->"
    assert lines[1] == (
        "**bpsperf on `cpu`: 1 regression, 1 inconclusive, 3 ok** ([reports and pictures](https://x/runs/1#artifacts))"
    )
    assert body.index("<details>") < body.index("## bpsperf results") < body.rindex("</details>")
    # a comment cannot show the runner's files: the picture is named instead
    assert "- ratios of t.py::a: `img/pairs-a.png`" in body and "![" not in body


def test_a_long_report_is_cut_below_githubs_limit_at_a_line_with_a_link_to_the_artifacts():
    rows = "\n".join(f"| `t.py::test_{i}` | {i}.0 | ok |" for i in range(6000))
    report = f"## bpsperf results\n\n<details><summary>pairs</summary>\n\n{rows}\n\n</details>\n"
    assert len(report) > GITHUB_COMMENT_LIMIT
    body = comment_body(PAIRED, report, marker="gpu", link="https://x/runs/2#artifacts")
    assert len(body) <= GITHUB_COMMENT_LIMIT
    assert "cut here" in body and "[artifacts](https://x/runs/2#artifacts)" in body
    kept = [line for line in body.splitlines() if line.startswith("| `t.py::test_")]
    assert kept and all(line.endswith("| ok |") for line in kept)  # whole lines only
    assert body.count("<details>") == body.count("</details>")  # the inner block is closed too
    assert body.rstrip().endswith("</details>")


def test_a_short_report_is_not_cut():
    body = comment_body(PAIRED, "x\n" * 10, marker="cpu", limit=1000)
    assert "cut here" not in body and body.count("x") == 10


@pytest.mark.parametrize("marker", ["cpu", "gpu-a100", "x.1_2"])
def test_markers_that_name_a_comment(marker):
    assert check_marker(marker) == marker


@pytest.mark.parametrize("marker", ["", "a -->", "a b", "-x", "a`b"])
def test_markers_that_would_break_it(marker):
    with pytest.raises(ValueError, match="--marker"):
        check_marker(marker)


@pytest.mark.parametrize("link", ["javascript:alert(1)", "https://x/a)b", "https://x/a b", "x"])
def test_links_that_would_break_it(link):
    with pytest.raises(ValueError, match="--link"):
        check_link(link)
