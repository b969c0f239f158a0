"""Report options: the files a session writes, one table for the plugin's flags and the ``bpsperf`` command.

Each report is a ``--bpsperf-NAME=PATH`` flag of the plugin; those marked
``export`` are also the formats of ``bpsperf export --format NAME`` (the name
dashed), which makes the same file from a results file. Plain Python: the
``bpsperf`` command reads this table without importing pytest.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..store.history import HISTORY_DIR

__all__ = ["EXPORT_ALIASES", "REPORT_OPTIONS", "REPORT_OPTIONS_BY_NAME", "ReportOption", "export_options"]


@dataclass(frozen=True)
class ReportOption:
    """A command-line option naming a file (or, with ``directory``, a directory) the session writes."""

    name: str  # "json" is --bpsperf-json
    help: str
    directory: bool = False
    #: a format of ``bpsperf export`` too (a file made from the results document alone)
    export: bool = False
    #: what ``--help`` says when the option is not given
    default: str = "not written"

    @property
    def flag(self) -> str:
        """The option as typed: ``--bpsperf-json``."""
        return "--bpsperf-" + self.cli_name

    @property
    def dest(self) -> str:
        """The option's name for ``config.getoption``: ``bpsperf_json``."""
        return "bpsperf_" + self.name

    @property
    def cli_name(self) -> str:
        """The name in the ``bpsperf`` command: ``benchmark-json`` (``--format benchmark-json``)."""
        return self.name.replace("_", "-")

    @property
    def metavar(self) -> str:
        return "DIR" if self.directory else "PATH"


#: Every report the session writes at its end: the options, the configure-time check that each
#: path can be written (``plugin/guard.py``), the notice of what pytest-xdist does not write, and the
#: formats of ``bpsperf export``.
REPORT_OPTIONS: "tuple[ReportOption, ...]" = (
    ReportOption("json", "write every perf result as JSON to PATH"),
    ReportOption("markdown", "write the trick matrix and verdicts as Markdown (for a PR comment) to PATH"),
    ReportOption(
        "benchmark_json",
        "write results in pytest-benchmark's JSON format (per-step times as rounds), "
        "readable by 'pytest-benchmark compare'",
        export=True,
    ),
    ReportOption("bmf", "write img/s per job in Bencher Metric Format (bencher run --adapter json)", export=True),
    ReportOption(
        "github_benchmark", "write img/s per job for github-action-benchmark (tool: customBiggerIsBetter)", export=True
    ),
    ReportOption(
        "plots",
        "write PNG pictures (per-step img/s, trick matrix, compute/sync, history) to DIR",
        directory=True,
        default="bpsperf-img/ next to --bpsperf-markdown when that is given, else none",
    ),
    ReportOption(
        "history",
        "save this session's results in the history under DIR (one file per session) and "
        f"draw each job's trend with its change points (bpsperf history reads {HISTORY_DIR} "
        "unless told)",
        directory=True,
    ),
)

REPORT_OPTIONS_BY_NAME = {o.name: o for o in REPORT_OPTIONS}

#: Earlier names of ``bpsperf export`` formats, still accepted: old name -> the report option's name.
EXPORT_ALIASES = {"github": "github_benchmark", "pytest-benchmark": "benchmark_json"}


def export_options() -> "tuple[ReportOption, ...]":
    """The reports that ``bpsperf export`` also makes, in the table's order."""
    return tuple(o for o in REPORT_OPTIONS if o.export)
