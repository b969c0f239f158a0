"""The session report from its results document: what ``--bpsperf-markdown`` and ``bpsperf report`` write.

One renderer for the plugin and the ``bpsperf`` command, as pytest-benchmark's
``TableResults`` serves both of its own: it reads only the results document
(``--bpsperf-json``, :func:`.documents.json_document`), so that a results file
renders as its session did. It makes pieces (:mod:`.blocks`), which become the
Markdown (a pull-request comment, the GitHub job summary) or an HTML page.
Callers that hold typed results (:func:`markdown_document`,
:func:`verdict_markdown`, :func:`format_matrix_markdown`) go through the
document's form too.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence, Union

from ..judge.breakdown import LABELS, breakdown_change
from ..judge.job import RunResult
from ..judge.pairs import PairedVerdict
from ..judge.verdict import Verdict
from ..remote.provenance import describe_versions
from .blocks import (
    Block,
    Bullets,
    Code,
    Folded,
    Heading,
    Paragraph,
    Status,
    Strong,
    Table,
    markdown,
    markdown_lines,
    text_lines,
)
from .documents import json_document, verdict_entry
from .matrix import HEADER, MatrixTable, row_cells

__all__ = [
    "breakdown_pieces",
    "format_matrix_markdown",
    "markdown_document",
    "matrix_pieces",
    "pairs_markdown",
    "seconds_cell",
    "session_pieces",
    "verdict_markdown",
    "verdict_pieces",
    "verdict_text",
    "verdicts_of",
]


def _pct(ratio: float) -> str:
    return f"{100 * (ratio - 1):+.1f}%"


def _img(value: "float | None") -> str:
    return "-" if value is None else f"{float(value):.1f}"


def seconds_cell(value: "float | None") -> str:
    """Seconds per step for a table cell; None (timing=overlapped: a step is not split) is a dash."""
    return "- (overlapped)" if value is None else f"{value:.3f}s"


def _tolerance(entry: Mapping[str, Any]) -> str:
    tolerance = entry.get("tolerance")
    return "-" if tolerance is None else f"-{100 * float(tolerance):.0f}%"


def _paired(entry: Mapping[str, Any]) -> bool:
    return entry.get("kind") == "pairs"


def verdicts_of(document: Mapping[str, Any]) -> "list[dict]":
    """The verdicts of a results document (:func:`.documents.verdict_entry` each), in the order its jobs started.

    Files before schema 3 have no ``verdicts``: there a job's verdict travels
    with each of its runs and names the run it was decided on, its last
    (:meth:`~pytest_bpsperf.judge.job.Job.decide`), and a base-vs-head
    session's verdicts are its ``base_vs_head`` jobs.
    """
    if "verdicts" in document:
        return [dict(v) for v in document["verdicts"]]
    paired = [dict(j) for j in (document.get("base_vs_head") or {}).get("jobs") or []]
    by_job: "dict[str, dict]" = {}
    for run in document.get("tests", []):
        verdict = run.get("verdict")
        if verdict and not _paired(verdict) and verdict.get("status"):
            by_job[verdict.get("key") or run.get("key") or run["nodeid"]] = {
                **verdict,
                "nodeid": run["nodeid"],
                "test": run["test"],
                "trick": run["trick"],
            }
    # a base-vs-head job of schema 2 names its test by its key only
    return [{"nodeid": j.get("key"), **j} for j in paired] + list(by_job.values())


def _arm_line(name: str, arm: Mapping[str, Any]) -> tuple:
    versions = arm.get("versions") or {}
    v = describe_versions(versions)
    commit = str(arm.get("commit") or "-")[:12] + (" + uncommitted changes" if arm.get("dirty") else "")
    return (
        Strong(name),
        f": {arm.get('ref') or '-'} ",
        Code(commit),
        ", python ",
        Code(str(arm.get("python") or "as head")),
        f" ({v})" if v else "",
    )


def _cores(value: "float | None") -> str:
    return "-" if value is None else f"{value:.2f}"


def _pair_rows(entry: Mapping[str, Any]) -> tuple:
    rows = []
    for p in entry.get("pair_table") or ():
        ratio = (
            "dropped: " + str(p["dropped"])
            if p.get("dropped")
            else "-"
            if p.get("ratio") is None
            else f"{float(p['ratio']):.3f}"
        )
        rows.append(
            (
                str(p["pair"]),
                p["order"],
                _img(p.get("base_img_per_sec")),
                _img(p.get("head_img_per_sec")),
                ratio,
                f"{_cores(p.get('base_foreign_cores'))}, {_cores(p.get('head_foreign_cores'))}",
            )
        )
    return tuple(rows)


def pairs_pieces(entries: Sequence[Mapping[str, Any]], arms: Mapping[str, Any]) -> "list[Block]":
    """The base-vs-head table (what a pull-request comment leads with), the arms, then each job's pairs."""
    if not entries:
        return []
    rows = []
    for v in entries:
        # what the schema does not require may be missing: a dash, as for a figure not computed
        first_look = (v.get("comparison") or {}).get("first_look", 0)
        pairs = v.get("pairs")
        interval = (
            "-"
            if v.get("ci_low") is None or v.get("ci_high") is None or (pairs or 0) < first_look
            else f"{_pct(v['ci_low'])} to {_pct(v['ci_high'])}"
        )
        rows.append(
            (
                Code(v["nodeid"]),
                Status(v["status"]),
                _img(v.get("base_img_per_sec")),
                _img(v.get("measured_img_per_sec")),
                _change_cells(v)[0],
                interval,
                _tolerance(v),
                str(pairs if pairs is not None else "-"),
                str(v.get("looks", "-")),
            )
        )
    out: "list[Block]" = [
        Heading(3, "Base vs head"),
        Table(
            (
                "test",
                "verdict",
                "base img/s",
                "head img/s",
                "head vs base",
                "interval (all looks)",
                "tolerance",
                "pairs",
                "looks",
            ),
            tuple(rows),
            (False, False, True, True, True, False, True, True, True),
        ),
        Bullets(tuple(_arm_line(name, arms.get(name) or {}) for name in ("base", "head")), loose=True),
    ]
    if any(v.get("aa") for v in entries):
        out.append(
            Paragraph("A/A run: both arms are the same commit and interpreter; any difference is noise.", note=True)
        )
    for v in entries:
        out.append(
            Folded(
                ("pairs of ", Code(v["nodeid"])),
                (
                    Table(
                        ("pair", "order", "base img/s", "head img/s", "head/base", "foreign load, cores (base, head)"),
                        _pair_rows(v),
                        (True, False, True, True, True, True),
                    ),
                ),
            )
        )
    out.append(Paragraph("Method: " + str((entries[0].get("comparison") or {}).get("method", "")), note=True))
    return out


def _change_cells(v: Mapping[str, Any]) -> tuple:
    # a verdict without a comparison (no baseline, nothing to normalize by) has no figures
    change = "-" if v.get("change_pct") is None else f"{v['change_pct']:+.1f}%"
    margin = "-" if v.get("margin_pct") is None else f"±{v['margin_pct']:.1f}%"
    mdc = "-" if v.get("min_detectable_change_pct") is None else f"{v['min_detectable_change_pct']:.1f}%"
    return change, margin, mdc


def gate_pieces(entries: Sequence[Mapping[str, Any]]) -> "list[Block]":
    """The verdicts against the stored baselines: one row each, then what to do and how it was decided."""
    if not entries:
        return []
    rows = []
    for v in entries:
        change, margin, mdc = _change_cells(v)
        rows.append(
            (
                Code(v["nodeid"]),
                Status(v["status"]),
                _img(v.get("measured_img_per_sec")),
                _img(v.get("baseline_img_per_sec")),
                change,
                _tolerance(v),
                margin,
                mdc,
            )
        )
    out: "list[Block]" = [
        Heading(3, "Verdicts"),
        Table(
            (
                "test",
                "verdict",
                "measured img/s",
                "baseline img/s",
                "change",
                "tolerance",
                "noise margin",
                "smallest detectable drop",
            ),
            tuple(rows),
            (False, False) + (True,) * 6,
        ),
    ]
    if any(v["status"] == "improvement" for v in entries):
        out.append(
            Paragraph(
                (
                    "Faster than the baseline beyond noise: consider recording new baselines with ",
                    Code("pytest -m perf --bpsperf-update-baselines"),
                    ".",
                )
            )
        )
    methods = {v["method"] for v in entries if v.get("method")}
    if methods:
        out.append(Paragraph("Method: " + "; ".join(sorted(methods)), note=True))
    return out


def _seconds(value: "float | None") -> str:
    return "-" if value is None else f"{1000 * float(value):.1f} ms"


def breakdown_pieces(entries: Sequence[Mapping[str, Any]]) -> "list[Block]":
    """Where the step time went on both sides of each verdict that has a breakdown: one row per part
    (base, head, change), the part that grew most, the tensors that grew most (BytePS traces)."""
    rows, lines = [], []
    for v in entries:
        sides = v.get("breakdown") or {}
        change = breakdown_change(sides.get("base"), sides.get("head"))
        if change is None:
            continue
        reference = "base" if _paired(v) else "baseline"
        for name, before, after, pct in change.rows():
            rows.append(
                (
                    Code(v["nodeid"]),
                    LABELS[name],
                    _seconds(before),
                    _seconds(after),
                    "-" if pct is None else f"{pct:+.0f}%",
                )
            )
        if v["status"] == "regression":
            lines.append((Code(v["nodeid"]), f" ({reference} to head): ", change.phrase(v.get("change_pct"))))
    if not rows:
        return []
    return [
        Heading(3, "Where the time went"),
        Table(
            ("test", "part", "base or baseline /step", "head /step", "change"),
            tuple(rows),
            (False, False, True, True, True),
        ),
        *([Bullets(tuple(lines))] if lines else []),
        Paragraph(
            "Diagnostic steps after the timed ones (setting breakdown_steps), each waiting between input, "
            "compute and push/pull: the share of each part, not the throughput (the timed steps overlap "
            "them, as users train); medians over the runs of each side.",
            note=True,
        ),
    ]


def verdict_pieces(entries: Sequence[Mapping[str, Any]], arms: Mapping[str, Any]) -> "list[Block]":
    """The verdict tables: base-vs-head verdicts first, then those against the stored baselines, then where
    the step time went."""
    return (
        pairs_pieces([v for v in entries if _paired(v)], arms)
        + gate_pieces([v for v in entries if not _paired(v)])
        + breakdown_pieces(entries)
    )


def _runs_pieces(runs: Sequence[Mapping[str, Any]]) -> "list[Block]":
    rows: "list[tuple[Any, ...]]" = []
    for r in runs:
        arm = f" ({r['arm']}, pair {(r.get('pair') or 0) + 1})" if r.get("arm") is not None else ""
        seconds = ["-" if r.get(k) is None else f"{r[k]:.1f}s" for k in ("bringup_s", "teardown_s")]
        # compute/sync are null in timing=overlapped (the default): only breakdown splits a step
        rows.append(
            (
                (Code(r["nodeid"]), arm),
                _img(r["img_per_sec"]),
                seconds_cell(r.get("compute_s_per_step")),
                seconds_cell(r.get("sync_s_per_step")),
                *seconds,
                _cores((r.get("foreign_load") or {}).get("cores")),
            )
        )
    return [
        Table(
            ("test", "img/s", "compute/step", "sync/step", "bring-up", "teardown", "foreign load, cores"),
            tuple(rows),
            (False,) + (True,) * 6,
        )
    ]


def matrix_pieces(table: MatrixTable) -> "list[Block]":
    """One trick matrix: its test, the workload, one row per trick, how the columns are computed."""
    rows = []
    for r in table.rows:
        cells = list(row_cells(r))
        rows.append(tuple([Code(cells[0])] + cells[1:]))
    return [
        Heading(4, Code(table.test)),
        Paragraph(table.description),
        Table(HEADER, tuple(rows), (False,) + (True,) * (len(HEADER) - 1)),
        Paragraph(table.method, note=True),
    ]


def session_pieces(document: Mapping[str, Any]) -> "list[Block]":
    """The report of a results document: a summary line, the verdicts (base vs head first), the session, the
    runs, the trick matrices."""
    verdicts = verdicts_of(document)
    out: "list[Block]" = [Heading(2, "bpsperf results")]
    if document.get("simulation"):
        out.append(
            Paragraph(
                Strong(
                    f"SIMULATION, not a measurement of BytePS: {document['simulation']}. "
                    "Its figures never become baselines."
                )
            )
        )
    if verdicts:
        counts = {st: sum(v["status"] == st for v in verdicts) for st in dict.fromkeys(v["status"] for v in verdicts)}
        out.append(Paragraph(Strong(", ".join(f"{n} {st}" for st, n in counts.items()))))
    out += verdict_pieces(verdicts, (document.get("base_vs_head") or {}).get("arms") or {})
    header = document.get("session") or []
    if header:
        out += [Heading(3, "Session"), Bullets(tuple(header))]
    out += _runs_pieces(document.get("tests", []))
    for table in document.get("matrix") or []:
        out += matrix_pieces(MatrixTable.from_dict(table))
    return out


# -- typed results: through the document's form --------------------------------------------------------

AnyVerdict = Union[Verdict, PairedVerdict]


def _arms(verdicts: Sequence[AnyVerdict]) -> Mapping[str, Any]:
    paired = [v for v in verdicts if getattr(v, "kind", "") == "pairs"]
    return paired[0].arms if paired else {}  # type: ignore[union-attr]


def markdown_document(results: Sequence[RunResult], header: Sequence[str], verdicts: Sequence[AnyVerdict] = ()) -> str:
    """The Markdown report of typed results: :func:`session_pieces` of their results document."""
    document = json_document(results, (), header, verdicts=verdicts)
    arms = _arms(verdicts)
    if arms:  # where a session's document keeps them
        document["base_vs_head"] = {"arms": {name: dict(arm) for name, arm in arms.items()}}
    return markdown(session_pieces(document))


def verdict_markdown(verdicts: Sequence[AnyVerdict]) -> "list[str]":
    """The verdict tables of typed verdicts, as Markdown lines (base-vs-head verdicts first)."""
    return markdown_lines(verdict_pieces([verdict_entry(v) for v in verdicts], _arms(verdicts)))


def verdict_text(verdicts: Sequence[AnyVerdict]) -> "list[str]":
    """The verdict tables of typed verdicts for the terminal: the Markdown's tables, aligned in columns."""
    return text_lines(verdict_pieces([verdict_entry(v) for v in verdicts], _arms(verdicts)))


def pairs_markdown(verdicts: Sequence[PairedVerdict]) -> "list[str]":
    """The base-vs-head table and each job's pairs, as Markdown lines."""
    return markdown_lines(pairs_pieces([verdict_entry(v) for v in verdicts], _arms(verdicts)))


def format_matrix_markdown(table: MatrixTable) -> "list[str]":
    """The matrix as Markdown lines."""
    return markdown_lines(matrix_pieces(table))
