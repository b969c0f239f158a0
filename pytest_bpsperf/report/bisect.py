"""The report of a bisect: its JSON document, its Markdown, and its terminal lines.

:func:`bisect_document` puts a finished :class:`~pytest_bpsperf.judge.bisect.Bisection`
into a document (schema_version, the range, every step with its verdict and
pairs, how it ended, the time); :func:`bisect_pieces` renders only that
document, so that the Markdown says what the file holds. Plain Python.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..judge.bisect import CULPRIT, ERROR, NONE, RANGE, Bisection, exit_status
from ..vcs.revisions import Commit
from .blocks import Block, Bullets, Code, Folded, Heading, Image, Paragraph, Status, Strong, Table

__all__ = ["BISECT_SCHEMA_VERSION", "bisect_document", "bisect_pieces", "duration", "progress_line", "summary_lines"]

#: 1: the first version.
BISECT_SCHEMA_VERSION = 1


def duration(seconds: float) -> str:
    """``1h02m``, ``3m05s``, ``42s``."""
    s = int(round(max(0.0, seconds)))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


def progress_line(bisection: Bisection, positions: Sequence[Commit], elapsed: float) -> str:
    """The terminal line of the step just recorded: step k of about log2 N, the commits, the verdict, time."""
    step = bisection.steps[-1]
    c, o = step.comparison, step.outcome
    head, base = positions[c.head], positions[c.base]
    if c.why == "ends":
        where = "step 0 (the ends, BAD against GOOD)"
    else:
        where = f"step {step.index} of about {max(step.index, step.about)} ({c.why})"
    again = f", attempt {c.attempt} with more pairs" if c.attempt > 1 else ""
    text = f"bpsperf bisect: {where}{again}: {head.describe()} against {base.short}: {o.figures()}"
    if o.status == "failed" and c.why == "lower half":
        text += f"; skipped {head.short}" if c.head in bisection.skipped else ""
    return text + f"; {duration(elapsed)} so far"


def _position_entry(k: int, commit: Commit, bisection: Bisection) -> dict:
    tested = [s for s in bisection.steps if k in (s.comparison.base, s.comparison.head)]
    return {"position": k, **commit.as_dict(), "tested": bool(tested), "skipped": k in bisection.skipped}


def bisect_document(
    bisection: Bisection,
    positions: Sequence[Commit],
    *,
    good: str,
    bad: str,
    pytest_args: Sequence[str],
    total_s: float,
    pictures: Sequence[str] = (),
    tolerance: "float | None" = None,
) -> dict:
    """The JSON document of a finished bisect (sorted and pretty-printed by the caller)."""
    result = bisection.result
    if result is None:
        raise ValueError("the bisect has not finished")
    steps = [
        {
            "step": s.index,
            "why": s.comparison.why,
            "attempt": s.comparison.attempt,
            "base": positions[s.comparison.base].sha,
            "head": positions[s.comparison.head].sha,
            "base_position": s.comparison.base,
            "head_position": s.comparison.head,
            **s.outcome.as_dict(),
        }
        for s in bisection.steps
    ]
    verdict = result.verdict.as_dict() if result.verdict is not None else None
    end = {
        "kind": result.kind,
        "reason": result.reason,
        "exit_status": exit_status(result.kind),
        "lo": positions[result.lo].sha,
        "hi": positions[result.hi].sha,
        "range": [c.sha for c in positions[result.lo + 1 : result.hi + 1]],
        "skipped": [positions[i].sha for i in result.skipped],
        "verdict": verdict,
        "culprit": positions[result.culprit].as_dict() if result.culprit is not None else None,
    }
    return {
        "schema_version": BISECT_SCHEMA_VERSION,
        "kind": "bisect",
        "good": {"ref": good, **positions[0].as_dict()},
        "bad": {"ref": bad, **positions[-1].as_dict()},
        "first_parent": True,
        "commits": [_position_entry(k, c, bisection) for k, c in enumerate(positions)],
        "pytest_args": list(pytest_args),
        "tolerance": tolerance,
        "steps": steps,
        "result": end,
        "sessions": len(steps),
        "pairs": sum(int(s["pairs"] or 0) for s in steps),
        "total_s": total_s,
        "pictures": list(pictures),
    }


def _pct(value: "float | None") -> str:
    return "-" if value is None else f"{100 * (float(value) - 1):+.1f}%"


def _verdict_text(v: "Mapping[str, Any] | None") -> str:
    if not v:
        return "no decided comparison"
    text = f"head/base {_pct(v.get('ratio'))}"
    if v.get("ci_low") is not None:
        text += f" (interval {_pct(v['ci_low'])} to {_pct(v['ci_high'])})"
    return text + f" after {v.get('pairs')} pairs"


def _headline(doc: Mapping[str, Any]) -> "list[Block]":
    r = doc["result"]
    by_sha = {c["sha"]: c for c in doc["commits"]}
    if r["kind"] == CULPRIT:
        c = r["culprit"]
        lines: "list[Block]" = [
            Heading(2, ("bpsperf bisect: culprit ", Code(c["sha"][:12]), f' "{c["subject"]}"')),
            Paragraph(
                (
                    Strong("Culprit"),
                    ": ",
                    Code(c["sha"]),
                    f' "{c["subject"]}"',
                    ", against its parent ",
                    Code(r["lo"][:12]),
                    ": ",
                    _verdict_text(r["verdict"]),
                    " (",
                    Status("regression"),
                    ").",
                )
            ),
        ]
        where = (r["verdict"] or {}).get("where")
        if where:
            lines.append(Paragraph(("Where the time went: ", where, ".")))
        return lines
    title = {NONE: "no drop beyond the tolerance", RANGE: "not narrowed to one commit", ERROR: "could not bisect"}[
        r["kind"]
    ]
    out: "list[Block]" = [Heading(2, f"bpsperf bisect: {title}"), Paragraph(r["reason"] + ".")]
    if r["kind"] == RANGE:
        out.append(
            Paragraph(
                (
                    f"The change is in {len(r['range'])} commit(s) after ",
                    Code(r["lo"][:12]),
                    ", up to ",
                    Code(r["hi"][:12]),
                    ":",
                )
            )
        )
        out.append(
            Bullets(
                tuple(
                    (
                        Code(s[:12]),
                        f' "{by_sha[s]["subject"]}"',
                        " (skipped: it does not import or run)" if s in r["skipped"] else "",
                    )
                    for s in r["range"]
                )
            )
        )
    return out


def bisect_pieces(doc: Mapping[str, Any]) -> "list[Block]":
    """The Markdown report of a bisect document: the culprit (or the range), the range walked, each step."""
    out = _headline(doc)
    n = len(doc["commits"]) - 1
    out.append(
        Bullets(
            (
                (
                    "range: GOOD ",
                    Code(doc["good"]["ref"]),
                    " = ",
                    Code(doc["good"]["sha"][:12]),
                    " .. BAD ",
                    Code(doc["bad"]["ref"]),
                    " = ",
                    Code(doc["bad"]["sha"][:12]),
                    f": {n} commit(s) along BAD's first parents (a merge is one step)",
                ),
                f"{doc['sessions']} session(s), {doc['pairs']} pairs in all, {duration(doc['total_s'])} in all",
                (
                    "each step: ",
                    Code(" ".join(["pytest", *doc["pytest_args"], "--bpsperf-base=B", "--bpsperf-head=H"])),
                ),
            )
        )
    )
    out += _steps_pieces(doc)
    for path in doc.get("pictures") or ():
        out.append(Image("head/base img/s per tested commit", path))
    out.append(
        Paragraph(
            "Method: each step is a base-vs-head pytest session (the paired gate: pairs of runs in "
            "alternating order, more pairs while undecided); the bisect narrows only on a regression "
            "the gate decided, asks an inconclusive step once more with more pairs, then reports the "
            "range; a commit that does not import or run is skipped.",
            note=True,
        )
    )
    return out


def _steps_pieces(doc: Mapping[str, Any]) -> "list[Block]":
    """The table of a bisect's steps, and where the time went in each."""
    out: "list[Block]" = []
    rows = []
    for s in doc["steps"]:
        status = "failed" if s["status"] == "failed" else s["status"]
        rows.append(
            (
                f"{s['step']}" + (f" (attempt {s['attempt']})" if s["attempt"] > 1 else ""),
                s["why"],
                Code(s["base"][:12]),
                Code(s["head"][:12]),
                Status(status) if status != "failed" else f"failed: {s['reason']}",
                _pct(s["ratio"]),
                "-" if s["ci_low"] is None else f"{_pct(s['ci_low'])} to {_pct(s['ci_high'])}",
                str(s["pairs"]),
                duration(s["seconds"]),
            )
        )
    out += [
        Heading(3, "Steps"),
        Table(
            ("step", "half", "base", "head", "verdict", "head/base", "interval", "pairs", "time"),
            tuple(rows),
            (False, False, False, False, False, True, False, True, True),
        ),
    ]
    wheres = [s for s in doc["steps"] if s.get("where")]
    if wheres:
        out.append(
            Folded(
                "where the time went, per step",
                (
                    Bullets(
                        tuple(
                            (
                                f"step {s['step']} ",
                                Code(s["head"][:12]),
                                " against ",
                                Code(s["base"][:12]),
                                ": ",
                                s["where"],
                            )
                            for s in wheres
                        )
                    ),
                ),
            )
        )
    return out


def summary_lines(doc: Mapping[str, Any]) -> "list[str]":
    """The terminal's last lines: how the bisect ended and where its reports are."""
    r = doc["result"]
    head = f"bpsperf bisect: {doc['sessions']} session(s), {doc['pairs']} pairs, {duration(doc['total_s'])}"
    if r["kind"] == CULPRIT:
        c = r["culprit"]
        line = (
            f'culprit: {c["sha"][:12]} "{c["subject"]}": {_verdict_text(r["verdict"])} against its parent '
            f"{r['lo'][:12]}"
        )
        where = (r["verdict"] or {}).get("where")
        return [head, line] + ([f"where the time went: {where}"] if where else [])
    if r["kind"] == RANGE:
        return [
            head,
            f"not narrowed to one commit: {r['reason']}; the change is in {len(r['range'])} commit(s) "
            f"{r['lo'][:12]}..{r['hi'][:12]}: " + ", ".join(s[:12] for s in r["range"]),
        ]
    return [head, r["reason"]]
