"""The HTML reports in a real browser: headless Chromium opens the session page and the trends page.

``bpsperf report`` writes both (``report/pages.py``) from files the plugin wrote
in a pytester session with fed runs (breakdown timing: all three session
pictures), a history of four sessions and baselines recorded from it. Each page
is opened from its ``file://`` URL, as one opens a report from disk or from CI
artifacts, in a browser without network (``helpers/browser.py``, whose checks
``tests/unit/project/test_browser.py`` shows can fail). Every picture
must load (``naturalWidth > 0``) and show at its own size (the browser's
figure margins once shrank the 900-pixel trend pictures, blurring their text),
every table must have its header and rows with numbers right-aligned, nothing
may run out of the page sideways, and the console must hold no error or
warning. One screenshot of each page is kept under pytest's
``tmp_path`` for a person to look at.
"""

from __future__ import annotations

import json

import pytest

from helpers.browser import check_page, look
from helpers.cli import bpsperf


@pytest.fixture
def reports(breakdown_results, tmp_path, capsys):
    """(session page, trends page): ``bpsperf report`` of a results file with its history, and of the history."""
    hist, bl = tmp_path / "hist", tmp_path / "bl"
    for i, factor in enumerate((1.0, 1.02, 0.99, 0.8)):  # a step down at the fourth commit
        doc = json.loads(breakdown_results.read_text())
        for t in doc["tests"]:
            t["img_per_sec"] *= factor
        doc["commit"], doc["date"] = f"{i + 1:x}" * 40, f"2026-05-0{i + 1}T00:00:00Z"
        path = tmp_path / f"session{i}.json"
        path.write_text(json.dumps(doc))
        assert bpsperf(capsys, "history", "add", path, "--history", hist)[0] == 0
    for _ in range(2):
        assert bpsperf(capsys, "baselines", "record", breakdown_results, "--baselines-dir", bl)[0] == 0
    session, trends = tmp_path / "session", tmp_path / "trends"
    assert (
        bpsperf(
            capsys, "report", "--results", breakdown_results, "--history", hist, "--baselines-dir", bl, "--out", session
        )[0]
        == 0
    )
    assert (
        bpsperf(capsys, "report", "--history", hist, "--baselines-dir", bl, "--profile", "testprof", "--out", trends)[0]
        == 0
    )
    return session / "report.html", trends / "report.html"


def test_the_session_page_shows_its_pictures_and_tables_in_a_browser(chromium, reports, tmp_path):
    facts = look(chromium, reports[0], tmp_path / "session.png")
    # pictures: steps, trick matrix, compute/sync split, and a trend per job (two tricks); tables: the runs,
    # the trick matrix, the history
    check_page(facts, pictures=5, tables=3)
    assert facts["title"] == "bpsperf report" and facts["headings"][:2] == ["bpsperf results", "Session"]
    assert {"History", "Pictures"} <= set(facts["headings"])
    runs, matrix, history = facts["tables"]
    assert (runs["rows"], matrix["rows"], history["rows"]) == (6, 2, 2)  # 2 tricks x 3 repeats; 2 tricks; 2 jobs
    assert matrix["header"][:3] == ["trick", "runs", "img/s"] and history["header"][:3] == ["profile", "test", "trick"]
    # numbers right-aligned, as the Markdown's columns: runs' img/s, history's commits
    assert [a == "right" for a in runs["align"][:2] + history["align"][2:4]] == [False, True, False, True]


def test_the_trends_page_shows_its_pictures_and_table_in_a_browser(chromium, reports, tmp_path):
    facts = look(chromium, reports[1], tmp_path / "trends.png")
    check_page(facts, pictures=2, tables=1)  # a trend per job; the trend table
    assert facts["headings"][0] == "bpsperf history" and facts["tables"][0]["rows"] == 2
