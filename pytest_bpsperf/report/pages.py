"""Trend tables and whole reports (Markdown or HTML) made from documents, with their pictures.

A session's report is :func:`session_page`: the pieces of its results document
(:mod:`.markdown`), the trend of each of its jobs, its pictures. The plugin
writes it as ``--bpsperf-markdown`` and the ``bpsperf report`` command from the
results file, as Markdown or as an HTML page (:mod:`.blocks`).
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

from ..store.history import Trend
from .blocks import Block, Bullets, Code, Heading, Image, Paragraph, Table
from .markdown import session_pieces
from .plots import Picture

__all__ = [
    "PICTURES_DIR",
    "history_page",
    "picture_names",
    "picture_pieces",
    "session_page",
    "trend_lines",
    "trend_pieces",
]

#: The folder of a report's pictures, next to the report (the plugin's Markdown and ``bpsperf report`` alike).
PICTURES_DIR = "bpsperf-img"


def _steps_text(trend: Trend) -> str:
    if not trend.fit.steps:
        return "none"
    return ", ".join(f"{s.change_pct:+.1f}% at {trend.points[s.index].label}" for s in trend.fit.steps)


def _trend_cells(trend: Trend) -> "tuple[str, ...]":
    first, last = trend.points[0], trend.points[-1]
    return (
        trend.test.split("::")[-1],
        trend.trick,
        str(len(trend.points)),
        f"{first.geomean:.1f}",
        f"{last.geomean:.1f}",
        f"{100 * (last.geomean / first.geomean - 1):+.1f}%",
        _steps_text(trend),
    )


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


def trend_pieces(trends: Sequence[Trend]) -> "list[Block]":
    """The trend table: one row per job and profile, its change points named by commit."""
    if not trends:
        return []
    rows = []
    for t in trends:
        cells = _trend_cells(t)
        rows.append((t.profile_id, Code(cells[0])) + cells[1:])
    return [
        Heading(3, "History"),
        Table(("profile",) + _TREND_HEADER, tuple(rows), (False, False, False, True, True, True, True, False)),
        Paragraph(
            "Change points: an exact penalised piecewise-constant fit of mean log img/s per commit "
            "(pytest_bpsperf.stats.changepoint).",
            note=True,
        ),
    ]


def picture_pieces(pictures: Sequence[Picture], relative_to: "str | os.PathLike") -> "list[Block]":
    """The pictures, linked relative to the directory of the report that shows them."""
    if not pictures:
        return []
    out: "list[Block]" = [Heading(3, "Pictures")]
    return out + [
        Image(p.title, os.path.relpath(p.path, os.fspath(relative_to)).replace(os.sep, "/")) for p in pictures
    ]


def picture_names(pictures: Sequence[Picture]) -> "list[Block]":
    """The pictures named, not linked: for the GitHub job summary, which cannot show the runner's files."""
    if not pictures:
        return []
    return [
        Paragraph("Pictures (in the job's artifacts):"),
        Bullets(tuple((Code(os.path.basename(p.path)), f": {p.title}") for p in pictures)),
    ]


def session_page(
    document: Mapping[str, Any],
    *,
    trends: Sequence[Trend] = (),
    pictures: Sequence[Picture] = (),
    relative_to: "str | os.PathLike" = ".",
) -> "list[Block]":
    """A session's report: its results document, the trend of its jobs, its pictures."""
    return session_pieces(document) + trend_pieces(trends) + picture_pieces(pictures, relative_to)


def history_page(
    header: Sequence[str], trends: Sequence[Trend], pictures: Sequence[Picture], relative_to: "str | os.PathLike"
) -> "list[Block]":
    """A report of the history alone (no results file): what it is of, the trends, their pictures."""
    out: "list[Block]" = [Heading(2, "bpsperf history")]
    if header:
        out.append(Bullets(tuple(header)))
    return out + trend_pieces(trends) + picture_pieces(pictures, relative_to)
