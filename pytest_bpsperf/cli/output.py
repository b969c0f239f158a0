"""The ``bpsperf`` command's ``--json`` output: one document per command, the facts its text gives.

Each document has ``schema_version`` and ``command`` and matches
``pytest_bpsperf/schemas/cli.schema.json``; it is printed with sorted keys and
two-space indents, so two runs on the same files print the same bytes. A
number that is not finite (no interval yet) is ``null``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from ..judge.pairs import PairedVerdict
    from ..judge.verdict import Verdict
    from ..store.history import Trend

__all__ = ["SCHEMA_VERSION", "baselines_document", "dumps", "entries_document", "trends_document", "verdicts_document"]

#: The version of the documents below; a change that drops or renames a field raises it.
SCHEMA_VERSION = 1


def _finite(value: Any) -> Any:
    """``value`` with every float that is not finite replaced by None (JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def dumps(document: Mapping[str, Any]) -> str:
    """The document as printed: sorted keys, two-space indents, a final newline; letters beyond ASCII
    as they are (JSON is UTF-8), not escaped."""
    return json.dumps(_finite(document), indent=2, sort_keys=True, allow_nan=False, ensure_ascii=False) + "\n"


def _document(command: str, **fields: Any) -> "dict[str, Any]":
    return {"schema_version": SCHEMA_VERSION, "command": command, **fields}


def verdict_fields(verdict: "Verdict | PairedVerdict") -> "dict[str, Any]":
    """One verdict: the figures both kinds share at the top, the text line, and the kind's own details."""
    from ..report.text import verdict_line

    c = verdict.comparison
    return {
        "kind": "pairs" if getattr(verdict, "kind", "") == "pairs" else "baseline",
        "status": verdict.status,
        "nodeid": verdict.nodeid,
        "test": verdict.test,
        "trick": verdict.trick,
        "key": verdict.key,
        "profile": verdict.profile_id,
        "tolerance": verdict.tolerance,
        "runs": verdict.runs,
        "measured_img_per_sec": verdict.measured,
        "reference_img_per_sec": verdict.baseline_median,
        "ratio": c.ratio if c is not None else None,
        "change_pct": c.change_pct if c is not None else None,
        "ci_low": c.ci_low if c is not None else None,
        "ci_high": c.ci_high if c is not None else None,
        "confidence": c.confidence if c is not None else None,
        "margin_pct": c.margin_pct if c is not None else None,
        "decided": c.decided if c is not None else None,
        "line": verdict_line(verdict),
        "detail": verdict.as_dict(),
    }


def verdicts_document(
    command: str,
    verdicts: "Sequence[Verdict | PairedVerdict]",
    *,
    exit_status: int,
    strict: bool,
    notes: Sequence[str] = (),
    **facts: Any,
) -> "dict[str, Any]":
    """``check`` or ``compare``: each verdict, the count per status, the notes and the exit status."""
    counts: "dict[str, int]" = {}
    for v in verdicts:
        counts[v.status] = counts.get(v.status, 0) + 1
    return _document(
        command,
        verdicts=[verdict_fields(v) for v in verdicts],
        counts=counts,
        exit_status=exit_status,
        strict=strict,
        notes=list(notes),
        **facts,
    )


def _trend(trend: "Trend") -> "dict[str, Any]":
    first, last = trend.points[0], trend.points[-1]
    points = [
        {
            "commit": p.commit,
            "branch": p.branch,
            "date": p.date,
            "label": p.label,
            "img_per_sec": p.geomean,
            "samples": list(p.samples),
            "fitted_img_per_sec": math.exp(trend.fit.level_at(i)),
        }
        for i, p in enumerate(trend.points)
    ]
    steps = [
        {
            "index": s.index,
            "commit": trend.points[s.index].commit,
            "label": trend.points[s.index].label,
            "date": trend.points[s.index].date,
            "change_pct": s.change_pct,
            "before_img_per_sec": math.exp(s.before),
            "after_img_per_sec": math.exp(s.after),
        }
        for s in trend.fit.steps
    ]
    return {
        "profile": trend.profile_id,
        "key": trend.key,
        "test": trend.test,
        "trick": trend.trick,
        "commits": len(trend.points),
        "first_img_per_sec": first.geomean,
        "latest_img_per_sec": last.geomean,
        "change_pct": 100 * (last.geomean / first.geomean - 1),
        "points": points,
        "change_points": steps,
    }


def trends_document(
    trends: "Sequence[Trend]", *, directory: str, profile: "str | None", branch: "str | None", test: "str | None"
) -> "dict[str, Any]":
    """``history``: the trend of each job, a point per commit, with its change points."""
    return _document(
        "history",
        directory=directory,
        filters={"profile": profile, "branch": branch, "test": test},
        trends=[_trend(t) for t in trends],
    )


def baselines_document(directory: str, profiles: Sequence[Mapping[str, Any]]) -> "dict[str, Any]":
    """``baselines list``: a row per profile file (``profile``, ``path``, ``entries``, ``latest``)."""
    return _document("baselines list", directory=directory, profiles=[dict(p) for p in profiles])


def entries_document(
    directory: str, profile: str, path: "str | Path", entries: Sequence[Mapping[str, Any]]
) -> "dict[str, Any]":
    """``baselines show``: a row per entry of one profile."""
    return _document(
        "baselines show", directory=directory, profile=profile, path=str(path), entries=[dict(e) for e in entries]
    )
