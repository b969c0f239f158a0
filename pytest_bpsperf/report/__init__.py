"""Reports of a session: terminal lines, the trick matrix, Markdown, JSON and exports.

:mod:`.text` and :mod:`.matrix` take a session's finished, typed results
(:class:`~pytest_bpsperf.judge.job.RunResult`, :class:`~pytest_bpsperf.judge.verdict.Verdict`)
for the terminal; :mod:`.documents` turns them into the results document
(``--bpsperf-json``). Everything written for people is made from that document:
:mod:`.markdown` renders it in pieces (:mod:`.blocks`: written as Markdown or as
an HTML page), :mod:`.pages` adds its trends and pictures, and :mod:`.exports`
and :mod:`.plots` read it too, so that the ``bpsperf`` command makes the same
files from disk. Writing is atomic.
"""

from .documents import JSON_SCHEMA_VERSION, benchmark_document, json_document, verdict_entry, write_json, write_text
from .markdown import (
    format_matrix_markdown,
    markdown_document,
    pairs_markdown,
    session_pieces,
    verdict_markdown,
    verdict_text,
    verdicts_of,
)
from .matrix import MatrixRow, MatrixTable, format_matrix_text, head_runs, matrix_tables, step_samples
from .text import github_annotations, result_line, verdict_line

__all__ = [
    "JSON_SCHEMA_VERSION",
    "MatrixRow",
    "MatrixTable",
    "benchmark_document",
    "format_matrix_markdown",
    "format_matrix_text",
    "github_annotations",
    "head_runs",
    "json_document",
    "markdown_document",
    "matrix_tables",
    "pairs_markdown",
    "result_line",
    "session_pieces",
    "step_samples",
    "verdict_entry",
    "verdict_line",
    "verdict_markdown",
    "verdict_text",
    "verdicts_of",
    "write_json",
    "write_text",
]
