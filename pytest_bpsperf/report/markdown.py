"""The Markdown report (a pull-request comment, the GitHub job summary)."""

from __future__ import annotations

from typing import Sequence

from ..judge.job import RunResult
from ..judge.pairs import PairedVerdict
from ..judge.verdict import Verdict
from .matrix import HEADER, MatrixTable, head_runs, matrix_tables, row_cells

__all__ = ["format_matrix_markdown", "markdown_document", "pairs_markdown", "seconds_cell", "verdict_markdown"]


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
                "no-baseline": "⚪ no baseline", "inconclusive": "❔ inconclusive"}


def _pct(ratio: float) -> str:
    return f"{100 * (ratio - 1):+.1f}%"


def pairs_markdown(verdicts: Sequence[PairedVerdict]) -> "list[str]":
    """The base-vs-head table (what a pull-request comment leads with), then each job's pairs."""
    if not verdicts:
        return []
    lines = ["### Base vs head", "",
             "| test | verdict | base img/s | head img/s | head vs base | interval (all looks) | tolerance | "
             "pairs | looks |",
             "|---|---|---:|---:|---:|---|---:|---:|---:|"]
    for v in verdicts:
        c = v.comparison
        interval = "-" if c.pairs < c.first_look else f"{_pct(c.ci_low)} to {_pct(c.ci_high)}"
        base = "-" if v.baseline_median is None else f"{v.baseline_median:.1f}"
        lines.append(f"| `{v.nodeid}` | {_STATUS_ICON.get(v.status, v.status)} | {base} | {v.measured:.1f} | "
                     f"{c.change_pct:+.1f}% | {interval} | -{100 * v.tolerance:.0f}% | {c.pairs} | {c.looks} |")
    first = verdicts[0]
    for name in ("base", "head"):
        arm = first.arms.get(name) or {}
        versions = arm.get("versions") or {}
        v = ", ".join(f"{k} {versions[k]}" for k in ("python", "mxnet", "byteps", "gluoncv", "ray") if k in versions)
        commit = str(arm.get("commit") or "-")[:12] + (" + uncommitted changes" if arm.get("dirty") else "")
        lines.append("")
        lines.append(f"- **{name}**: {arm.get('ref') or '-'} `{commit}`, python `{arm.get('python') or 'as head'}`"
                     + (f" ({v})" if v else ""))
    if any(v.aa for v in verdicts):
        lines += ["", "_A/A run: both arms are the same commit and interpreter; any difference is noise._"]
    for v in verdicts:
        lines += ["", f"<details><summary>pairs of <code>{v.nodeid}</code></summary>", "",
                  "| pair | order | base img/s | head img/s | head/base |", "|---:|---|---:|---:|---:|"]
        for p in v.pairs:
            ratio = "dropped: " + str(p["dropped"]) if p.get("dropped") else f"{float(p['ratio']):.3f}"
            base = "-" if p.get("base_img_per_sec") is None else f"{float(p['base_img_per_sec']):.1f}"
            head = "-" if p.get("head_img_per_sec") is None else f"{float(p['head_img_per_sec']):.1f}"
            lines.append(f"| {p['pair']} | {p['order']} | {base} | {head} | {ratio} |")
        lines += ["", "</details>"]
    lines += ["", "_Method: " + first.comparison.method + "_", ""]
    return lines


def verdict_markdown(verdicts: Sequence[Verdict]) -> "list[str]":
    """The verdict table of the PR comment (base-vs-head verdicts get their own table first)."""
    paired = [v for v in verdicts if getattr(v, "kind", "") == "pairs"]
    verdicts = [v for v in verdicts if getattr(v, "kind", "") != "pairs"]
    if paired:
        return pairs_markdown(paired) + (verdict_markdown(verdicts) if verdicts else [])  # type: ignore[arg-type]
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


def seconds_cell(value: "float | None") -> str:
    """Seconds per step for a table cell; None (timing=overlapped: a step is not split) is a dash."""
    return "- (overlapped)" if value is None else f"{value:.3f}s"


def markdown_document(results: Sequence[RunResult], header: Sequence[str], verdicts: Sequence[Verdict] = ()) -> str:
    """The Markdown report: a summary line, the verdicts (base vs head first), the session, results, matrices."""
    lines = ["## bpsperf results", ""]
    if verdicts:
        counts = {st: sum(v.status == st for v in verdicts) for st in dict.fromkeys(v.status for v in verdicts)}
        lines += ["**" + ", ".join(f"{n} {st}" for st, n in counts.items()) + "**", ""]
    lines += verdict_markdown(verdicts)
    if header:
        lines += ["### Session", ""] + [f"- {h}" for h in header] + [""]
    lines += ["| test | img/s | compute/step | sync/step | bring-up | teardown |", "|---|---:|---:|---:|---:|---:|"]
    for r in results:
        m = r.measurement
        arm = f" ({r.spec.arm.name}, pair {(r.spec.pair or 0) + 1})" if r.spec.arm is not None else ""
        lines.append(
            f"| `{r.spec.nodeid}`{arm} | {m.img_per_sec:.1f} | {seconds_cell(m.compute_s)} | {seconds_cell(m.sync_s)} | "
            f"{m.bringup_s:.1f}s | {m.teardown_s:.1f}s |"
        )
    lines.append("")
    for table in matrix_tables(head_runs(results)):
        lines += format_matrix_markdown(table)
    return "\n".join(lines) + "\n"


