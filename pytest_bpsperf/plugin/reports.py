"""Reports in pytest: the ``bpsperf`` terminal section and the report files asked for."""

from __future__ import annotations

import os
import platform
from typing import TYPE_CHECKING, Any, Callable

import pytest

from .. import report
from ..judge.job import Ledger
from ..remote.provenance import current_commit, software_versions, utc_now_iso, working_tree_dirty
from ..report import blocks, exports, pages, plots
from ..store.baselines import BaselineError
from ..store.history import HistoryError, HistoryStore, current_branch, make_record, trends

if TYPE_CHECKING:  # pragma: no cover
    from .baseline_gate import BaselineGate
    from .runner import RunnerPlugin


class ReportPlugin:
    """Writes the session's results: terminal summary, JSON, Markdown, pytest-benchmark, GitHub."""

    def __init__(self, config: pytest.Config, runner: "RunnerPlugin", gate: "BaselineGate", ledger: Ledger) -> None:
        self.config = config
        self.runner = runner
        self.gate = gate
        self.ledger = ledger
        self.written: "list[str]" = []
        self.write_failed: "list[str]" = []  # "PATH: cause" of each report that could not be written
        #: node id -> the line pytest located each collected test at (the annotations point there)
        self.test_lines: "dict[str, int]" = {}

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.test_lines = {item.nodeid: item.location[1] + 1 for item in session.items if item.location[1] is not None}

    def header_lines(self) -> "list[str]":
        """The profile and its facts, where Ray ran, the backend."""
        lines = []
        profile = self.gate.known_profile
        if profile is not None:
            facts = ", ".join(f"{k}={v}" for k, v in sorted(profile.facts.items()) if k != "cluster")
            lines.append(f"profile: {profile.id} ({facts})")
        return lines + self.runner.header_lines() + self.gate.header_lines()

    def pytest_terminal_summary(self, terminalreporter, exitstatus: int, config: pytest.Config) -> None:
        ledger = self.ledger
        if not ledger.runs and not ledger.failures and not self.write_failed and not ledger.notes:
            return
        write = terminalreporter.write_line
        terminalreporter.section("bpsperf")
        for line in self.header_lines():
            write(line)
        for result in ledger.runs:
            write(report.result_line(result))
        for failure in ledger.failures:
            write(f"{failure.nodeid}: FAILED to measure: {failure.reason.splitlines()[0]}")
        for table in report.matrix_tables(report.head_runs(ledger.runs)):
            write("")
            for line in report.format_matrix_text(table):
                write(line)
        if ledger.verdicts:
            write("")
            for line in report.verdict_text(ledger.verdicts):
                write(line)
            # the whole sentence of each verdict (figures, interval, what decided it) with -v
            if config.get_verbosity() > 0:
                write("")
                for verdict in ledger.verdicts:
                    write(report.verdict_line(verdict))
        for line in ledger.notes:
            write(f"bpsperf: {line}")
        for path in self.written:
            write(f"bpsperf: wrote {path}")
        for problem in self.write_failed:
            write(f"bpsperf: NOT written: {problem}", red=True)
        if os.environ.get("GITHUB_ACTIONS") == "true":
            for line in report.github_annotations(ledger.verdicts, self.test_lines):
                write(line)

    def write_reports(self) -> None:
        """Write the files asked for on the command line: JSON, Markdown, pictures, history, exports.

        Each file on its own: one that cannot be written (a full disk, a path under a
        plain file) is named with its cause in the summary, and the others still appear.
        """
        ledger = self.ledger
        header = self.header_lines()
        root = str(self.config.rootpath)
        profile = self.gate.known_profile
        document = report.json_document(
            ledger.runs,
            ledger.failures,
            header,
            self.runner.session_info(),
            profile=profile,
            commit=current_commit(root),
            dirty=working_tree_dirty(root),
            host=platform.node(),
            branch=current_branch(root),
            date=utc_now_iso(),
            versions=software_versions(),
            base_vs_head=self.gate.results_section(),
            verdicts=ledger.verdicts,
        )
        json_path = self.config.getoption("bpsperf_json")
        if json_path:
            self._write(json_path, lambda: report.write_json(json_path, document))
        found = self._save_history(document)
        md_path = self.config.getoption("bpsperf_markdown")
        pictures = self._draw(document, found, md_path)
        # The Markdown is rendered from the results document, as `bpsperf report` renders the file.
        if md_path:
            page = pages.session_page(
                document, trends=found, pictures=pictures, relative_to=os.path.dirname(os.path.abspath(md_path))
            )
            self._write(md_path, lambda: report.write_text(md_path, blocks.markdown(page)))
        bench_path = self.config.getoption("bpsperf_benchmark_json")
        if bench_path:
            self._write(
                bench_path, lambda: report.write_json(bench_path, report.benchmark_document(ledger.runs, profile))
            )
        for option, make in (
            ("bpsperf_bmf", exports.bmf_export),
            ("bpsperf_github_benchmark", exports.github_benchmark_export),
        ):
            path = self.config.getoption(option)
            if path:

                def export(path: str = path, make: "Callable[..., Any]" = make) -> None:
                    report.write_json(path, make(document))

                self._write(path, export)
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if os.environ.get("GITHUB_ACTIONS") == "true" and summary and ledger.runs:
            # The job summary cannot show files of the runner: it names the PNGs of the artifact.
            text = blocks.markdown(pages.session_page(document, trends=found) + pages.picture_names(pictures))
            self._write(f"{summary} (GITHUB_STEP_SUMMARY)", lambda: _append(summary, text))

    def _save_history(self, document: dict) -> list:
        """--bpsperf-history: save this session's record; the trends of the jobs that ran."""
        directory = self.config.getoption("bpsperf_history")
        profile = self.gate.known_profile
        if not directory or not self.ledger.runs or profile is None:
            return []
        if document.get("simulation"):  # a stand-in's figures are no point of any hardware's history
            self.ledger.note(f"history not saved: a simulation ({document['simulation']})")
            return []
        store = HistoryStore(directory)
        pairs = document.get("base_vs_head")
        if pairs is not None:
            # The history is one line of commits: of a base-vs-head session it keeps the base arm
            # (a commit of the line, measured again by every pull request on it), never the head.
            base = pairs.get("arms", {}).get("base", {})
            if not base.get("commit") or base.get("dirty"):
                self.ledger.note("history not saved: the base arm is not a commit")
                return []
            document = {
                **document,
                "tests": [{**r, "arm": None, "pair": None} for r in document["tests"] if r.get("arm") == "base"],
                "commit": base["commit"],
                "branch": None,
                "versions": {**(document.get("versions") or {}), **(base.get("versions") or {})},
            }
        try:
            record = make_record(
                document,
                profile=profile.as_dict(),
                commit=document["commit"],
                branch=document["branch"],
                date=document["date"],
                versions=document["versions"],
            )
            self.written.append(str(store.save(record)))
            keys = {r.key for r in self.ledger.runs}
            return [t for t in trends(store.load(profile.id), profile_id=profile.id) if t.key in keys]
        except (HistoryError, ValueError) as exc:
            self.ledger.note(f"history NOT saved or read: {exc}")
            return []

    def _draw(self, document: dict, found: list, md_path: "str | None") -> list:
        """The pictures, in --bpsperf-plots or next to the Markdown report."""
        directory = self.config.getoption("bpsperf_plots")
        if not directory and md_path:
            directory = os.path.join(os.path.dirname(os.path.abspath(md_path)), pages.PICTURES_DIR)
        if not directory or not self.ledger.runs:
            return []
        baselines, profile = {}, self.gate.known_profile
        if profile is not None:
            try:
                baselines = dict(self.gate.store().load(profile.id).entries)
            except BaselineError:
                pass  # the verdicts already said so; the band is left out
        tolerances = {r.key: r.spec.settings.tolerance for r in self.ledger.runs}
        try:
            pictures = plots.session_pictures(
                document, directory, trends=found, baselines=baselines, tolerances=tolerances
            )
        except (ImportError, OSError, ValueError) as exc:
            self.ledger.note(f"pictures NOT drawn: {exc}")
            return []
        self.written.append(f"{len(pictures)} picture(s) in {directory}")
        return pictures

    def _write(self, path: str, write: "Callable[[], None]") -> None:
        """One report file: written, or its path and the cause kept for the summary (never a raise)."""
        try:
            write()
        except OSError as exc:
            self.write_failed.append(f"{path}: {exc.strerror or exc}")
        else:
            self.written.append(path)


def _append(path: str, text: str) -> None:
    """Append ``text`` to ``path`` in one write (the job summary: earlier steps wrote there too)."""
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)
