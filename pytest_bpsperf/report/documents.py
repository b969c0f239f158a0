"""Report files: the ``--bpsperf-json`` document and the pytest-benchmark export; atomic writes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Mapping, Sequence, Union

from ..judge.job import RunFailure, RunResult
from ..judge.pairs import PairedVerdict
from ..judge.verdict import Verdict
from ..store.files import atomic_write_text
from ..store.profile import Profile
from .exports import benchmark_export
from .matrix import head_runs, matrix_tables

#: 2: runs carry ``arm`` and ``pair``; base-vs-head sessions add ``base_vs_head`` (arms, seed, pair tables).
#: 3: ``verdicts``, every verdict of the session in the order its jobs started (what the reports show),
#:    and runs' ``settings_origins``, where each of their settings came from.
JSON_SCHEMA_VERSION = 3

__all__ = ["JSON_SCHEMA_VERSION", "benchmark_document", "json_document", "verdict_entry", "write_json", "write_text"]


def verdict_entry(verdict: "Union[Verdict, PairedVerdict]") -> dict:
    """One verdict as the results document holds it: its JSON view and the test it is about."""
    return {**verdict.as_dict(), "nodeid": verdict.nodeid, "test": verdict.test, "trick": verdict.trick}


def json_document(
    results: Sequence[RunResult],
    failures: Sequence[RunFailure],
    header: Sequence[str],
    info: "Mapping[str, object] | None" = None,
    *,
    profile: "Profile | None" = None,
    commit: "str | None" = None,
    branch: "str | None" = None,
    date: "str | None" = None,
    versions: "Mapping[str, str] | None" = None,
    base_vs_head: "Mapping[str, object] | None" = None,
    verdicts: "Sequence[Union[Verdict, PairedVerdict]]" = (),
    dirty: "bool | None" = None,
    host: "str | None" = None,
) -> dict:
    """The ``--bpsperf-json`` document (schema ``pytest_bpsperf/schemas/results.schema.json``).

    It holds everything the reports show, so that :mod:`.markdown` renders it
    alike at the end of a session and from the file (``bpsperf report``).
    """
    doc = {
        "schema_version": JSON_SCHEMA_VERSION,
        "profile": profile.as_dict() if profile is not None else None,
        "commit": commit,
        "dirty": dirty,
        "host": host,
        "branch": branch,
        "date": date,
        "versions": dict(versions) if versions is not None else None,
        "session": list(header),
        "session_info": dict(info or {}),
        "tests": [r.as_dict() for r in results],
        "failures": [{"nodeid": f.nodeid, "reason": f.reason} for f in failures],
        "matrix": [t.as_dict() for t in matrix_tables(head_runs(results))],
        "verdicts": [verdict_entry(v) for v in verdicts],
    }
    if base_vs_head is not None:
        doc["base_vs_head"] = dict(base_vs_head)
    simulated = sorted({r.output.simulation for r in results if r.output.simulation})
    if simulated:
        # a stand-in ran (tests only): these figures are no measurement of BytePS and never a baseline
        doc["simulation"] = "; ".join(simulated)
    return doc


def benchmark_document(results: Sequence[RunResult], profile: "Profile | None" = None) -> dict:
    """pytest-benchmark's JSON format: one benchmark per run, its steady steps as rounds.

    See :func:`.exports.benchmark_export` (built with pytest-benchmark's own API).
    """
    return benchmark_export({"tests": [r.as_dict() for r in results]}, profile.id if profile else None)


def write_text(path: "str | os.PathLike", text: str) -> None:
    """Write ``text`` to ``path`` atomically, creating its directory."""
    target = Path(os.path.abspath(os.fspath(path)))
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, text)


def write_json(path: "str | os.PathLike", document: dict) -> None:
    """Stable, sorted, pretty-printed JSON, written atomically as UTF-8 (letters beyond ASCII not escaped)."""
    write_text(path, json.dumps(document, indent=2, sort_keys=True, default=str, ensure_ascii=False) + "\n")
