"""Reading the files this package wrote: results (``--bpsperf-json``), baselines, history records.

:func:`read_document` reads and validates one file against its JSON Schema;
:func:`jobs_of` groups the runs of a results document into jobs (test, trick,
topology, workload), the unit that verdicts and baselines are about. Plain
Python: the ``bpsperf`` command and the plugin share it.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Mapping

from .baselines import entry_key
from .schema import validate

__all__ = ["DocumentError", "JobSamples", "jobs_of", "read_document", "run_key_of", "step_img_per_sec"]


class DocumentError(ValueError):
    """A file cannot be read as the document it should be; the message names the file."""


def read_document(path: "str | os.PathLike", kind: str) -> "dict[str, Any]":
    """Read ``path`` as JSON and validate it against the ``kind`` schema (see :mod:`.schema`)."""
    p = Path(path)
    try:
        raw = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DocumentError(f"{kind} file {p} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DocumentError(f"{kind} file {p} cannot be read: {exc}") from None
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise DocumentError(
            f"{kind} file {p} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except RecursionError:
        raise DocumentError(
            f"{kind} file {p} nests its JSON too deeply to be read (deeper than {sys.getrecursionlimit()} levels)"
        ) from None
    if not isinstance(doc, dict):
        raise DocumentError(f"{kind} file {p} holds a JSON {type(doc).__name__}, expected an object")
    try:
        validate(doc, kind, f"{kind} file {p}")
    except ValueError as exc:
        raise DocumentError(str(exc)) from None
    return doc


def _settings_parts(run: Mapping[str, Any]) -> "tuple[dict, dict]":
    s = run.get("settings", {})
    topology = {k: s.get(k) for k in ("workers", "server_nodes", "servers_per_node")}
    workload = {
        "backend": run.get("backend"),
        **{k: s.get(k) for k in ("model", "steps", "batch_size", "image_size", "omp_threads")},
    }
    return topology, workload


def run_key_of(run: Mapping[str, Any]) -> str:
    """The job key of one run of a results document (stored, or rebuilt from its settings)."""
    if run.get("key"):
        return str(run["key"])
    topology, workload = _settings_parts(run)
    return entry_key(run["test"], run["trick"], topology, workload)


def step_img_per_sec(run: Mapping[str, Any]) -> "list[float]":
    """Aggregate img/s of each step every worker counted as steady (sum over workers)."""
    workers = run.get("workers") or []
    if not workers:
        return []
    common = set(range(min(len(w["step_s"]) for w in workers)))
    for w in workers:
        common -= set(w.get("warmup_steps", []))
    return [sum(w["batch_size"] / w["step_s"][i] for w in workers) for i in sorted(common)]


@dataclass(frozen=True)
class JobSamples:
    """The runs of one job in a results document: what a verdict or a baseline entry needs."""

    key: str
    test: str
    trick: str
    nodeid: str  # of the job's last run
    samples: "tuple[float, ...]"
    tolerance: float
    topology: Dict[str, Any] = field(hash=False)
    workload: Dict[str, Any] = field(hash=False)
    settings: Dict[str, Any] = field(hash=False)
    median_step_s: "tuple[float, ...]" = ()
    #: the session's single-process img/s for the job's workload (its latest run's), if measured
    single_img_per_sec: "float | None" = None
    #: each run's ``breakdown`` (where its step time went; None for a run without one)
    breakdowns: "tuple[dict | None, ...]" = field(default=(), hash=False)


def jobs_of(document: Mapping[str, Any]) -> "dict[str, JobSamples]":
    """Key -> :class:`JobSamples`, in the order the jobs first ran.

    Of a base-vs-head session only the head arm's runs count (the code under
    test; :func:`pytest_bpsperf.judge.offline.pair_verdicts` decides its pairs).
    """
    grouped: "dict[str, list]" = {}
    for run in document.get("tests", []):
        if run.get("arm") == "base":
            continue
        grouped.setdefault(run_key_of(run), []).append(run)
    out = {}
    for key, runs in grouped.items():
        first, last = runs[0], runs[-1]
        topology, workload = _settings_parts(first)
        out[key] = JobSamples(
            key=key,
            test=first["test"],
            trick=first["trick"],
            nodeid=last["nodeid"],
            samples=tuple(float(r["img_per_sec"]) for r in runs),
            tolerance=float(last["settings"]["tolerance"]),
            topology=topology,
            workload=workload,
            settings=dict(first["settings"]),
            median_step_s=tuple(float(r["step_s"]) for r in runs if "step_s" in r),
            single_img_per_sec=next(
                (float(r["single_img_per_sec"]) for r in reversed(runs) if r.get("single_img_per_sec")), None
            ),
            breakdowns=tuple(r.get("breakdown") for r in runs),
        )
    return out
