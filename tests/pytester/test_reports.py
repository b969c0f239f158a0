"""Reports in pytest (``plugin/reports.py``): one renderer for the plugin's reports and the command's.

The plugin's ``--bpsperf-markdown`` and ``bpsperf report`` are made from the results document.

The sessions are fed through the plugin's public hook ``pytest_bpsperf_run``
with finished records, in the default timing (overlapped: a step is timed
whole, never split into compute and sync) unless a test asks for breakdown.
"""

from __future__ import annotations

import json
import os
from html.parser import HTMLParser

import pytest

from helpers.fakes import fake_run_conftest
from helpers.repos import git, init
from pytest_bpsperf.cli import main
from pytest_bpsperf.report import blocks, session_pieces, verdicts_of
from pytest_bpsperf.report.matrix import MatrixTable
from pytest_bpsperf.store.results import read_document

#: The fed run (tests/helpers/fakes.py): FAKE_TIMING picks the timing, FAKE_TRICK_SPEED how much faster
#: omp-passive is, FAKE_HEAD the head arm's speed; runs differ a little (identical runs have no spread).
FAKE_RUN = fake_run_conftest(
    extra="""

import os

TIMING = os.environ.get("FAKE_TIMING", "overlapped")


def scenario(config, spec):
    speed = float(os.environ.get("FAKE_TRICK_SPEED", "2.0")) if "omp-passive" in spec.trick.parts else 1.0
    if spec.arm is not None and spec.arm.name == "head":
        speed *= float(os.environ.get("FAKE_HEAD", "1.0"))
    n = spec.repeat + (spec.pair or 0) + (1 if spec.arm is not None and spec.arm.name == "base" else 0)
    return speed / (1.0 + 0.01 * (n % 3 - 1))
"""
)

GATED_TEST = """
import pytest

pytestmark = pytest.mark.perf


@pytest.mark.bpsperf_tricks("default", "omp-passive")
def test_x(bpsperf_train):
    bpsperf_train().assert_within_baseline()
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A project with the fake run and a gated perf test of two tricks, isolated from the outer environment."""
    for key in list(os.environ):
        if key.startswith(("BPSPERF_", "GITHUB_", "FAKE_")):
            monkeypatch.delenv(key)
    for key in ("CI", "BUILD_NUMBER"):
        monkeypatch.delenv(key, raising=False)
    pytester.makeconftest(FAKE_RUN)
    pytester.makepyfile(test_x=GATED_TEST)
    pytester.makeini("[pytest]\nbpsperf_profile = testprof\nmarkers =\n    perf: perf\n")
    return pytester


def session(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest(
        "-p", "no:cacheprovider", "--bpsperf-json=out/results.json", "--bpsperf-markdown=out/report.md", *args
    )


def cli_report(project: pytest.Pytester, capsys: pytest.CaptureFixture, fmt: str, *args: str) -> str:
    """``bpsperf report`` of the session's results file; the report's text."""
    code = main(
        [
            "report",
            "--results",
            str(project.path / "out" / "results.json"),
            "--out",
            str(project.path / "rep"),
            "--baselines-dir",
            str(project.path / "baselines"),
            "--format",
            fmt,
            *args,
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    return (project.path / "rep" / ("report.html" if fmt == "html" else "report.md")).read_text()


# --- the same Markdown from the plugin and from the file ---------------------------------------


@pytest.mark.parametrize("timing", ["overlapped", "breakdown"])
def test_cli_markdown_of_the_results_is_the_plugins_markdown(project, capsys, monkeypatch, timing):
    monkeypatch.setenv("FAKE_TIMING", timing)
    recorded = project.runpytest("-p", "no:cacheprovider", "--bpsperf-update-baselines", "--bpsperf-repeats=3")
    assert recorded.ret == 0, recorded.stdout.str()
    monkeypatch.setenv("FAKE_TRICK_SPEED", "3.0")  # omp-passive gets faster than its baseline
    result = session(project, "--bpsperf-repeats=3", "--bpsperf-session-spread=1%")
    assert result.ret == 0, result.stdout.str()
    plugin = (project.path / "out" / "report.md").read_text()
    assert "**1 ok, 1 improvement**" in plugin and "consider recording new baselines" in plugin
    assert plugin.count("![") == (3 if timing == "breakdown" else 2)  # nothing split to draw when overlapped
    for markdown in ("markdown", "md"):
        assert cli_report(project, capsys, markdown) == plugin


def test_with_history_the_report_adds_the_trends_of_its_own_jobs(project, capsys, monkeypatch):
    # two sessions that differ (a record is named by its content and second), a second apart: sessions of
    # one second would have no order in the trend
    for speed, date in (("2.0", "2026-12-01T10:00:00Z"), ("2.1", "2026-12-01T10:00:01Z")):
        monkeypatch.setenv("FAKE_TRICK_SPEED", speed)
        monkeypatch.setattr("pytest_bpsperf.plugin.reports.utc_now_iso", lambda date=date: date)
        result = session(project, "--bpsperf-history=hist")
        assert result.ret == 0 and "history NOT saved" not in result.stdout.str(), result.stdout.str()
    plugin = (project.path / "out" / "report.md").read_text()
    assert "### History" in plugin and "| testprof | `test_x` | omp-passive | 2 | 64.5 | 67.8 | +5.0% |" in plugin
    assert cli_report(project, capsys, "markdown", "--history", str(project.path / "hist")) == plugin


def test_base_vs_head_report_from_the_file_is_the_plugins(project, capsys, monkeypatch):
    init(project.path)
    git(project.path, "commit", "-q", "--allow-empty", "-m", "root")
    git(project.path, "add", "-A")
    git(project.path, "commit", "-q", "-m", "perf test")
    monkeypatch.setenv("FAKE_HEAD", "0.7")
    result = session(project, "--bpsperf-base=HEAD~1", "--bpsperf-seed=5", "--bpsperf-steps=8")
    result.assert_outcomes(failed=2)
    plugin = (project.path / "out" / "report.md").read_text()
    assert plugin.startswith("## bpsperf results\n\n**2 regression**\n\n### Base vs head\n")
    assert "<details><summary>pairs of <code>test_x.py::test_x[default]</code></summary>" in plugin
    assert cli_report(project, capsys, "markdown") == plugin
    page = cli_report(project, capsys, "html")
    assert "<h2>Base vs head</h2>" in page and "<details><summary>pairs of <code>test_x.py::test_x[default]" in page


# --- the document holds what the report shows ----------------------------------------------------


def test_the_results_document_holds_the_verdicts_in_the_order_the_jobs_started(project):
    result = session(project)
    assert result.ret == 0, result.stdout.str()
    doc = read_document(project.path / "out" / "results.json", "results")
    assert doc["schema_version"] == 3
    assert [(v["nodeid"], v["status"]) for v in doc["verdicts"]] == [
        ("test_x.py::test_x[default]", "no-baseline"),
        ("test_x.py::test_x[omp-passive]", "no-baseline"),
    ]
    assert all(v["key"] == t["key"] for v, t in zip(doc["verdicts"], doc["tests"]))


@pytest.mark.parametrize("base", [False, True])
def test_files_before_schema_3_render_their_verdicts_alike(project, monkeypatch, base):
    if base:
        init(project.path)
        git(project.path, "add", "-A")
        git(project.path, "commit", "-q", "-m", "perf test")
        result = session(project, "--bpsperf-base=HEAD", "--bpsperf-steps=8")
    else:
        project.runpytest("-p", "no:cacheprovider", "--bpsperf-update-baselines", "--bpsperf-repeats=2")
        result = session(project, "--bpsperf-repeats=2")
    assert result.ret in (0, 1), result.stdout.str()
    doc = read_document(project.path / "out" / "results.json", "results")
    older = {k: v for k, v in doc.items() if k != "verdicts"}
    older["schema_version"] = 2
    assert len(doc["verdicts"]) == 2
    if base:
        assert all(v["kind"] == "pairs" for v in doc["verdicts"])
    else:
        assert [v["nodeid"] for v in doc["verdicts"]] == [  # named by the run that decided: the job's last
            "test_x.py::test_x[default-r2]",
            "test_x.py::test_x[omp-passive-r2]",
        ]
    assert verdicts_of(older) == verdicts_of(doc)
    text = blocks.markdown(session_pieces(older))
    assert text == blocks.markdown(session_pieces(doc)) and "### Verdicts" in text or "### Base vs head" in text
    assert (project.path / "out" / "report.md").read_text().startswith(text)  # then its pictures


def test_matrix_tables_come_back_from_the_document(project):
    session(project, "--bpsperf-repeats=2")
    doc = json.loads((project.path / "out" / "results.json").read_text())
    assert [MatrixTable.from_dict(t).as_dict() for t in doc["matrix"]] == doc["matrix"]


# --- overlapped timing, everywhere ------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["markdown", "html"])
def test_overlapped_runs_render_a_dash_for_compute_and_sync(project, capsys, fmt):
    result = session(project, "--bpsperf-repeats=2")
    assert result.ret == 0, result.stdout.str()
    doc = read_document(project.path / "out" / "results.json", "results")
    assert all(t["compute_s_per_step"] is None and t["sync_s_per_step"] is None for t in doc["tests"])
    text = cli_report(project, capsys, fmt)
    split = " | - (overlapped) | - (overlapped) |" if fmt == "markdown" else '<td class="num">- (overlapped)</td>' * 2
    assert text.count(split) == 4 and "0.000s" not in text
    if fmt == "markdown":
        rows = _md_rows(text)
    else:
        parser = _Cells()
        parser.feed(text)
        rows = parser.rows
    matrix = [r for r in rows if r[0] in ("default", "omp-passive")]
    assert len(matrix) == 2 and all(r[6:9] == ["-", "-", "-"] for r in matrix)  # compute, sync, sync share


# --- the HTML page is the same pieces ------------------------------------------------------------


class _Cells(HTMLParser):
    """The text of every table row of a page, cell by cell."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: "list[list[str]]" = []
        self._cell: "list[str] | None" = None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _md_rows(text: str) -> "list[list[str]]":
    rows = []
    for line in text.splitlines():
        if line.startswith("| "):
            rows.append([c.replace("`", "") for c in line[2:-2].split(" | ")])
    return rows


def test_the_html_page_has_every_table_row_of_the_markdown(project, capsys, monkeypatch):
    monkeypatch.setenv("FAKE_TIMING", "breakdown")
    project.runpytest("-p", "no:cacheprovider", "--bpsperf-update-baselines", "--bpsperf-repeats=2")
    session(project, "--bpsperf-repeats=2")
    markdown = cli_report(project, capsys, "markdown")
    parser = _Cells()
    parser.feed(cli_report(project, capsys, "html"))
    assert parser.rows == _md_rows(markdown) and len(parser.rows) > 8
    for heading in ("bpsperf results", "Verdicts", "Session", "Pictures"):
        assert f">{heading}</h" in cli_report(project, capsys, "html")
