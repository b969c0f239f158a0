"""The Markdown report (a pull-request comment, the GitHub job summary)."""

from __future__ import annotations

from typing import Sequence

from ..job import RunResult
from ..verdict import Verdict
from .matrix import HEADER, MatrixTable, matrix_tables, row_cells

__all__ = ["format_matrix_markdown", "markdown_document", "verdict_markdown"]


def format_matrix_markdown(table: MatrixTable) -> list:
    """The matrix as a Markdown table."""
    lines = [f"#### `{table.test}`", "", table.description, ""]
    lines.append("| " + " | ".join(HEADER) + " |")
    lines.append("|" + "|".join(["---"] + ["---:"] * (len(HEADER) - 1)) + "|")
    for r in table.rows:
        cells = list(row_cells(r))
        cells[0] = f"`{cells[0]}`"
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"_{table.method}_", ""]
    return lines


_STATUS_ICON = {"ok": "✅ ok", "regression": "❌ regression", "improvement": "🚀 improvement",
                "no-baseline": "⚪ no baseline"}


def verdict_markdown(verdicts: Sequence[Verdict]) -> "list[str]":
    """The verdict table of the PR comment."""
    if not verdicts:
        return []
    lines = ["### Verdicts", "",
             "| test | verdict | measured img/s | baseline img/s | change | tolerance | noise margin | "
             "smallest detectable drop |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for v in verdicts:
        c = v.comparison
        base = "-" if v.baseline_median is None else f"{v.baseline_median:.1f}"
        change = "-" if c is None else f"{c.change_pct:+.1f}%"
        margin = "-" if c is None else f"±{c.margin_pct:.1f}%"
        mdc = "-" if c is None else f"{c.min_detectable_change_pct:.1f}%"
        lines.append(f"| `{v.nodeid}` | {_STATUS_ICON.get(v.status, v.status)} | {v.measured:.1f} | {base} | "
                     f"{change} | -{100 * v.tolerance:.0f}% | {margin} | {mdc} |")
    improved = [v for v in verdicts if v.status == "improvement"]
    if improved:
        lines += ["", "Faster than the baseline beyond noise: consider recording new baselines with "
                      "`pytest -m perf --bpsperf-update-baselines`."]
    methods = {v.comparison.method for v in verdicts if v.comparison is not None}
    if methods:
        lines += ["", "_Method: " + "; ".join(sorted(methods)) + "_"]
    return lines + [""]


def _seconds(value: "float | None") -> str:
    return "- (overlapped)" if value is None else f"{value:.3f}s"


def markdown_document(results: Sequence[RunResult], header: Sequence[str], verdicts: Sequence[Verdict] = ()) -> str:
    """The Markdown report: header, verdicts, per-test results, trick matrices."""
    lines = ["## bpsperf results", ""]
    lines += [f"- {h}" for h in header]
    if header:
        lines.append("")
    lines += verdict_markdown(verdicts)
    lines += ["| test | img/s | compute/step | sync/step | bring-up | teardown |", "|---|---:|---:|---:|---:|---:|"]
    for r in results:
        m = r.measurement
        lines.append(
            f"| `{r.spec.nodeid}` | {m.img_per_sec:.1f} | {_seconds(m.compute_s)} | {_seconds(m.sync_s)} | "
            f"{m.bringup_s:.1f}s | {m.teardown_s:.1f}s |"
        )
    lines.append("")
    for table in matrix_tables(results):
        lines += format_matrix_markdown(table)
    return "\n".join(lines) + "\n"


