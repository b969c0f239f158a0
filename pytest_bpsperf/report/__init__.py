"""Reports of a session: terminal lines, the trick matrix, Markdown, JSON and exports.

:mod:`.text`, :mod:`.matrix`, :mod:`.markdown` and :mod:`.documents` take a
session's finished results (:class:`~pytest_bpsperf.judge.job.RunResult`,
:class:`~pytest_bpsperf.judge.verdict.Verdict`); :mod:`.exports`, :mod:`.plots` and
:mod:`.pages` take the results document (the JSON those write), so that the
``bpsperf`` command makes the same files from disk. Writing is atomic.
"""

from .documents import JSON_SCHEMA_VERSION, benchmark_document, json_document, write_json, write_text
from .markdown import format_matrix_markdown, markdown_document, pairs_markdown, verdict_markdown
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
    "step_samples",
    "verdict_line",
    "verdict_markdown",
    "write_json",
    "write_text",
]
