"""Report options: the files a session writes, one table for the plugin's flags and the ``bpsperf`` command.

Each report is a ``--bpsperf-NAME=PATH`` flag of the plugin. Plain Python: the
``bpsperf`` command can read this table without importing pytest.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..store.history import HISTORY_DIR

__all__ = ["REPORT_OPTIONS", "ReportOption"]


@dataclass(frozen=True)
class ReportOption:
    """A command-line option naming a file (or, with ``directory``, a directory) the session writes."""

    name: str  # "json" is --bpsperf-json
    help: str
    directory: bool = False

    @property
    def flag(self) -> str:
        """The option as typed: ``--bpsperf-json``."""
        return "--bpsperf-" + self.name.replace("_", "-")

    @property
    def dest(self) -> str:
        """The option's name for ``config.getoption``: ``bpsperf_json``."""
        return "bpsperf_" + self.name

    @property
    def metavar(self) -> str:
        return "DIR" if self.directory else "PATH"


#: Every report the session writes at its end: the options, the configure-time check that each
#: path can be written (``glue/guard.py``) and the notice of what pytest-xdist does not write.
REPORT_OPTIONS: "tuple[ReportOption, ...]" = (
    ReportOption("json", "write every perf result as JSON to PATH"),
    ReportOption("markdown", "write the trick matrix and verdicts as Markdown (for a PR comment) to PATH"),
    ReportOption("benchmark_json", "write results in pytest-benchmark's JSON format (per-step times as rounds), "
                                   "readable by 'pytest-benchmark compare'"),
    ReportOption("bmf", "write img/s per job in Bencher Metric Format (bencher run --adapter json)"),
    ReportOption("github_benchmark", "write img/s per job for github-action-benchmark (tool: customBiggerIsBetter)"),
    ReportOption("plots", "write PNG pictures (per-step img/s, trick matrix, compute/sync, history) to DIR "
                          "(default: bpsperf-img/ next to --bpsperf-markdown, when given)", directory=True),
    ReportOption("history", "save this session's results in the history under DIR (one file per session) and "
                            f"draw each job's trend with its change points (bpsperf history reads {HISTORY_DIR} "
                            "unless told)", directory=True),
)
