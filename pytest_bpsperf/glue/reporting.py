"""Reports in pytest: the ``bpsperf`` terminal section and the report files asked for."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Callable

import pytest

from .. import report
from ..job import Ledger

if TYPE_CHECKING:  # pragma: no cover
    from .gate import BaselineGate
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

    def header_lines(self) -> "list[str]":
        """The profile and its facts, where Ray ran, the backend."""
        lines = []
        profile = self.gate.known_profile
        if profile is not None:
            facts = ", ".join(f"{k}={v}" for k, v in sorted(profile.facts.items()) if k != "cluster")
            lines.append(f"profile: {profile.id} ({facts})")
        return lines + self.runner.header_lines()

    def pytest_terminal_summary(self, terminalreporter, exitstatus: int, config: pytest.Config) -> None:
        ledger = self.ledger
        if not ledger.runs and not ledger.failures and not self.write_failed and not self.gate.lines:
            return
        write = terminalreporter.write_line
        terminalreporter.section("bpsperf")
        for line in self.header_lines():
            write(line)
        for result in ledger.runs:
            write(report.result_line(result))
        for failure in ledger.failures:
            write(f"{failure.nodeid}: FAILED to measure: {failure.reason.splitlines()[0]}")
        for table in report.matrix_tables(ledger.runs):
            write("")
            for line in report.format_matrix_text(table):
                write(line)
        for verdict in ledger.verdicts:
            write(report.verdict_line(verdict))
        for line in self.gate.lines:
            write(f"bpsperf: {line}")
        for path in self.written:
            write(f"bpsperf: wrote {path}")
        for problem in self.write_failed:
            write(f"bpsperf: NOT written: {problem}", red=True)
        if os.environ.get("GITHUB_ACTIONS") == "true":
            for line in report.github_annotations(ledger.verdicts):
                write(line)

    def write_reports(self) -> None:
        """Write the JSON, Markdown and pytest-benchmark files asked for on the command line."""
        ledger = self.ledger
        header = self.header_lines()
        json_path = self.config.getoption("bpsperf_json")
        if json_path:
            self._write(json_path, lambda: report.write_json(json_path, report.json_document(
                ledger.runs, ledger.failures, header, self.runner.session_info())))
        markdown = report.markdown_document(ledger.runs, header, ledger.verdicts)
        md_path = self.config.getoption("bpsperf_markdown")
        if md_path:
            self._write(md_path, lambda: report.write_text(md_path, markdown))
        bench_path = self.config.getoption("bpsperf_benchmark_json")
        if bench_path:
            self._write(bench_path, lambda: report.write_json(
                bench_path, report.benchmark_document(ledger.runs, self.gate.known_profile)))
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if os.environ.get("GITHUB_ACTIONS") == "true" and summary and ledger.runs:
            with open(summary, "a", encoding="utf-8") as fh:
                fh.write(markdown)

    def _write(self, path: str, write: "Callable[[], None]") -> None:
        """One report file: written, or its path and the cause kept for the summary (never a raise)."""
        try:
            write()
        except OSError as exc:
            self.write_failed.append(f"{path}: {exc.strerror or exc}")
        else:
            self.written.append(path)
