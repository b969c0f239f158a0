"""Report files: the ``--bpsperf-json`` document and the pytest-benchmark export; atomic writes."""

from __future__ import annotations

import json
import os
import statistics
from importlib import metadata
from pathlib import Path
from typing import Mapping, Sequence

from ..job import RunFailure, RunResult
from ..profile import Profile
from ..store.files import atomic_write_text
from .matrix import matrix_tables

JSON_SCHEMA_VERSION = 1

__all__ = ["JSON_SCHEMA_VERSION", "benchmark_document", "json_document", "write_json", "write_text"]


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"


def json_document(
    results: Sequence[RunResult], failures: Sequence[RunFailure], header: Sequence[str],
    info: "Mapping[str, object] | None" = None,
) -> dict:
    """The ``--bpsperf-json`` document."""
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "session": list(header),
        "session_info": dict(info or {}),
        "tests": [r.as_dict() for r in results],
        "failures": [{"nodeid": f.nodeid, "reason": f.reason} for f in failures],
        "matrix": [t.as_dict() for t in matrix_tables(results)],
    }


def _benchmark_stats(seconds: Sequence[float]) -> dict:
    """pytest-benchmark's stats block for a list of round times (seconds)."""
    data = sorted(seconds)
    n = len(data)
    mean = statistics.fmean(data)
    stddev = statistics.stdev(data) if n > 1 else 0.0
    q1, median, q3 = statistics.quantiles(data, n=4, method="inclusive") if n > 1 else (data[0],) * 3
    iqr = q3 - q1
    low = min((x for x in data if x >= q1 - 1.5 * iqr), default=data[0])
    high = max((x for x in data if x <= q3 + 1.5 * iqr), default=data[-1])
    iqr_outliers = sum(1 for x in data if x < q1 - 1.5 * iqr or x > q3 + 1.5 * iqr)
    sd_outliers = sum(1 for x in data if abs(x - mean) > stddev) if stddev else 0
    return {
        "min": data[0], "max": data[-1], "mean": mean, "stddev": stddev, "rounds": n, "median": median,
        "iqr": iqr, "q1": q1, "q3": q3, "iqr_outliers": iqr_outliers, "stddev_outliers": sd_outliers,
        "outliers": f"{sd_outliers};{iqr_outliers}", "ld15iqr": low, "hd15iqr": high,
        "ops": 1.0 / mean if mean else 0.0, "total": sum(data), "data": list(seconds), "iterations": 1,
    }


def benchmark_document(results: Sequence[RunResult], profile: "Profile | None" = None) -> dict:
    """pytest-benchmark's JSON format: one benchmark per run, its steady steps as rounds.

    A round is one training step (mean over worker processes of that step's
    wall time), so ``pytest-benchmark compare`` shows step times; img/s and the
    verdict travel in ``extra_info``.
    """
    import datetime
    import platform

    benchmarks = []
    for r in results:
        workers = r.measurement.workers
        rounds = [statistics.fmean(w.step_seconds[i] for w in workers) for i in r.measurement.common_steady_steps]
        name = r.spec.nodeid.split("::")[-1]
        if r.spec.repeat:
            name += f"-run{r.spec.repeat + 1}"
        extra = {"img_per_sec": r.img_per_sec, "per_worker_img_per_sec": r.per_worker_img_per_sec,
                 "backend": r.backend, "warmup_steps": r.warmup_steps}
        if r.verdict is not None:
            extra["verdict"] = r.verdict.status
        benchmarks.append({
            "group": r.spec.test, "name": name, "fullname": r.spec.nodeid,
            "params": {"trick": r.spec.trick.name}, "param": r.spec.trick.name,
            "extra_info": extra,
            "options": {"disable_gc": False, "timer": "perf_counter", "min_rounds": len(rounds),
                        "max_time": r.measurement.wall_s, "min_time": 0.0, "warmup": True},
            "stats": _benchmark_stats(rounds),
        })
    return {
        "machine_info": {"node": platform.node(), "machine": platform.machine(), "processor": platform.processor(),
                         "python_version": platform.python_version(), "system": platform.system(),
                         "release": platform.release(), "python_implementation": platform.python_implementation(),
                         "bpsperf_profile": profile.id if profile else None},
        "commit_info": {},
        "benchmarks": benchmarks,
        "datetime": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "version": _version("pytest-benchmark"),
    }


def write_text(path: "str | os.PathLike", text: str) -> None:
    """Write ``text`` to ``path`` atomically, creating its directory."""
    target = Path(os.path.abspath(os.fspath(path)))
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, text)


def write_json(path: "str | os.PathLike", document: dict) -> None:
    """Stable, sorted, pretty-printed JSON, written atomically."""
    write_text(path, json.dumps(document, indent=2, sort_keys=True, default=str) + "\n")
