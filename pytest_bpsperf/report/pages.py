"""Trend tables and whole reports (Markdown or HTML) made from documents, with their pictures.

Used by the ``bpsperf`` command (``history``, ``report``) and by the plugin
for the pictures section of ``--bpsperf-markdown``.
"""

from __future__ import annotations

import html
import os
from typing import Any, Mapping, Sequence

from ..judge.verdict import Verdict
from ..store.history import Trend
from .markdown import seconds_cell, verdict_markdown
from .plots import Picture

__all__ = ["pictures_markdown", "report_html", "report_markdown", "trend_lines", "trend_markdown"]


def _steps_text(trend: Trend) -> str:
    if not trend.fit.steps:
        return "none"
    return ", ".join(f"{s.change_pct:+.1f}% at {trend.points[s.index].label}" for s in trend.fit.steps)


def _trend_cells(trend: Trend) -> "tuple[str, ...]":
    first, last = trend.points[0], trend.points[-1]
    return (trend.test.split("::")[-1], trend.trick, str(len(trend.points)), f"{first.geomean:.1f}",
            f"{last.geomean:.1f}", f"{100 * (last.geomean / first.geomean - 1):+.1f}%", _steps_text(trend))


_TREND_HEADER = ("test", "trick", "commits", "first img/s", "latest img/s", "change", "change points")


def trend_lines(trends: Sequence[Trend]) -> "list[str]":
    """A plain-text table per profile: one row per job, its change points named by commit."""
    out: "list[str]" = []
    for profile in dict.fromkeys(t.profile_id for t in trends):
        rows = [_TREND_HEADER] + [_trend_cells(t) for t in trends if t.profile_id == profile]
        widths = [max(len(r[i]) for r in rows) for i in range(len(_TREND_HEADER))]
        out.append(f"profile {profile}")
        for r in rows:
            out.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        out.append("")
    return out


def trend_markdown(trends: Sequence[Trend]) -> "list[str]":
    """The trend table in Markdown."""
    if not trends:
        return []
    lines = ["### History", "", "| profile | " + " | ".join(_TREND_HEADER) + " |",
             "|---|---|---|---:|---:|---:|---:|---|"]
    for t in trends:
        cells = _trend_cells(t)
        lines.append(f"| {t.profile_id} | `{cells[0]}` | " + " | ".join(cells[1:]) + " |")
    lines += ["", "_Change points: an exact penalised piecewise-constant fit of mean log img/s per commit "
                  "(pytest_bpsperf.stats.changepoint)._", ""]
    return lines


def pictures_markdown(pictures: Sequence[Picture], relative_to: "str | os.PathLike") -> "list[str]":
    """Image links to ``pictures``, relative to the directory of the document that links them."""
    if not pictures:
        return []
    lines = ["### Pictures", ""]
    for p in pictures:
        rel = os.path.relpath(p.path, os.fspath(relative_to)).replace(os.sep, "/")
        lines += [f"![{p.title}]({rel})", ""]
    return lines


def _result_rows(results: Mapping[str, Any]) -> "list[tuple[str, ...]]":
    # compute/sync are null in timing=overlapped (the default): only breakdown splits a step
    return [(r["nodeid"], f"{r['img_per_sec']:.1f}", seconds_cell(r.get("compute_s_per_step")),
             seconds_cell(r.get("sync_s_per_step"))) for r in results.get("tests", [])]


def report_markdown(*, title: str, header: Sequence[str], verdicts: Sequence[Verdict],
                    results: "Mapping[str, Any] | None", trends: Sequence[Trend], pictures: Sequence[Picture],
                    relative_to: "str | os.PathLike") -> str:
    """A whole report: header, verdicts, runs, history table, pictures."""
    lines = [f"## {title}", ""] + [f"- {h}" for h in header] + ([""] if header else [])
    lines += verdict_markdown(verdicts)
    if results is not None and results.get("tests"):
        lines += ["| run | img/s | compute/step | sync/step |", "|---|---:|---:|---:|"]
        lines += [f"| `{a}` | {b} | {c} | {d} |" for a, b, c, d in _result_rows(results)] + [""]
    lines += trend_markdown(trends)
    lines += pictures_markdown(pictures, relative_to)
    return "\n".join(lines) + "\n"


def _table_html(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def report_html(*, title: str, header: Sequence[str], verdicts: Sequence[Verdict],
                results: "Mapping[str, Any] | None", trends: Sequence[Trend], pictures: Sequence[Picture],
                relative_to: "str | os.PathLike") -> str:
    """The same report as one self-contained HTML page (pictures linked relative to it)."""
    parts = [f"<h1>{html.escape(title)}</h1>", "<ul>" + "".join(f"<li>{html.escape(h)}</li>" for h in header) + "</ul>"]
    if verdicts:
        rows = [(v.nodeid, v.status, f"{v.measured:.1f}",
                 "-" if v.baseline_median is None else f"{v.baseline_median:.1f}",
                 "-" if v.comparison is None else f"{v.comparison.change_pct:+.1f}%",
                 f"-{100 * v.tolerance:.0f}%") for v in verdicts]
        parts += ["<h2>Verdicts</h2>", _table_html(("test", "verdict", "measured img/s", "baseline img/s",
                                                    "change", "tolerance"), rows)]
    if results is not None and results.get("tests"):
        parts += ["<h2>Runs</h2>", _table_html(("run", "img/s", "compute/step", "sync/step"), _result_rows(results))]
    if trends:
        parts += ["<h2>History</h2>", _table_html(("profile",) + _TREND_HEADER,
                                                  [(t.profile_id,) + _trend_cells(t) for t in trends])]
    if pictures:
        parts.append("<h2>Pictures</h2>")
        for p in pictures:
            rel = os.path.relpath(p.path, os.fspath(relative_to)).replace(os.sep, "/")
            parts.append(f'<figure><img src="{html.escape(rel)}" alt="{html.escape(p.title)}">'
                         f"<figcaption>{html.escape(p.title)}</figcaption></figure>")
    style = ("body{font-family:sans-serif;max-width:60em;margin:auto}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:2px 6px}img{max-width:100%}")
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + html.escape(title)
            + f"</title><style>{style}</style></head><body>\n" + "\n".join(parts) + "\n</body></html>\n")
