"""Exports for other tools, made from a results document (``--bpsperf-json``).

- :func:`benchmark_export`: pytest-benchmark's JSON (``pytest-benchmark compare``
  reads it), one benchmark per run, its steady steps as rounds; written without
  pytest-benchmark (statistics: :mod:`..stats.rounds`; the commit: :func:`commit_info`).
- :func:`bmf_export`: Bencher Metric Format (``bencher run --adapter json``),
  one benchmark per job with the ``throughput`` measure (img/s, min and max
  over runs as bounds).
- :func:`github_benchmark_export`: github-action-benchmark's
  ``customBiggerIsBetter`` input, a list of ``{name, unit, value, range, extra}``.

They work on plain result documents, so the ``bpsperf`` command makes the same
files from a results file as the plugin does at the end of a session.
"""

from __future__ import annotations

import datetime
import math
import os
import platform
import re
import statistics
import subprocess
from typing import Any, Mapping, Optional

from ..remote.provenance import current_commit, working_tree_dirty
from ..stats.rounds import round_stats
from ..store.results import jobs_of

__all__ = ["BENCHMARK_FORMAT_VERSION", "benchmark_export", "bmf_export", "commit_info", "github_benchmark_export"]

#: The pytest-benchmark release whose file format :func:`benchmark_export` writes (its ``version`` field,
#: which pytest-benchmark fills with its own version); ``.ci/run`` installs that release in
#: ``.ci/benchmark`` to read the file back.
BENCHMARK_FORMAT_VERSION = "5.3.1"


def _git(*args: str) -> "str | None":
    """The output of ``git ARGS`` in the working directory, stripped; None when git fails or is absent."""
    try:
        proc = subprocess.run(["git", *args], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def commit_info() -> "dict[str, Any]":
    """pytest-benchmark's ``commit_info`` of the working directory's git checkout.

    ``id`` the commit (``unversioned`` outside a checkout), ``time`` and
    ``author_time`` its committer and author dates (ISO 8601), ``dirty`` whether
    tracked files differ from it, ``branch`` (``(detached head)``, or
    ``(unknown)`` outside a checkout) and ``project``: the last part of the
    ``origin`` remote's URL without ``.git``, else the directory's name.
    """
    origin = _git("config", "--local", "remote.origin.url")
    parts = [p for p in re.split(r"[/:\\\s]|\.git$", origin or "") if p]
    project = parts[-1] if parts else os.path.basename(os.getcwd())
    commit = current_commit()
    if commit is None:
        return {
            "id": "unversioned",
            "time": None,
            "author_time": None,
            "dirty": False,
            "project": project,
            "branch": "(unknown)",
        }
    branch = _git("rev-parse", "--abbrev-ref", "HEAD")
    return {
        "id": commit,
        "time": _git("show", "-s", "--format=%cI", commit),
        "author_time": _git("show", "-s", "--format=%aI", commit),
        "dirty": bool(working_tree_dirty()),
        "project": project,
        "branch": "(detached head)" if branch == "HEAD" else branch or "(unknown)",
    }


def _rounds(run: Mapping[str, Any]) -> "list[float]":
    """Step seconds (mean over workers) of the steps every worker counted as steady."""
    workers = run.get("workers") or []
    if not workers:
        return [float(run["step_s"])] if run.get("step_s") else []
    n = min(len(w["step_s"]) for w in workers)
    steady = [i for i in range(n) if not any(i in w.get("warmup_steps", []) for w in workers)]
    return [statistics.fmean(w["step_s"][i] for w in workers) for i in steady]


def benchmark_export(results: Mapping[str, Any], profile_id: Optional[str] = None) -> "dict[str, Any]":
    """pytest-benchmark's JSON format: one benchmark per run, its steady steps as rounds.

    A round is one training step (mean over worker processes of that step's
    wall time), so ``pytest-benchmark compare`` shows step times; img/s and
    the verdict travel in ``extra_info``. The statistics are pytest-benchmark's
    fields (:func:`~pytest_bpsperf.stats.rounds.round_stats`), the commit its
    ``commit_info`` (:func:`commit_info`); pytest-benchmark itself is not needed.
    """
    benchmarks = []
    for run in results.get("tests", []):
        rounds = _rounds(run)
        if not rounds:
            continue
        name = run["nodeid"].split("::")[-1]
        if run.get("repeat"):
            name += f"-run{run['repeat'] + 1}"
        extra = {
            "img_per_sec": run["img_per_sec"],
            "per_worker_img_per_sec": run.get("per_worker_img_per_sec", {}),
            "backend": run.get("backend"),
            "warmup_steps": run.get("warmup_steps", {}),
        }
        if run.get("verdict"):
            extra["verdict"] = run["verdict"].get("status")
        benchmarks.append(
            {
                "group": run["test"],
                "name": name,
                "fullname": run["nodeid"],
                "params": {"trick": run["trick"]},
                "param": run["trick"],
                "extra_info": extra,
                "options": {
                    "disable_gc": False,
                    "timer": "perf_counter",
                    "min_rounds": len(rounds),
                    "max_time": run.get("wall_s", 0.0),
                    "min_time": 0.0,
                    "warmup": True,
                },
                "stats": {**round_stats(rounds), "iterations": 1},
            }
        )
    return {
        "machine_info": {
            "node": platform.node(),
            "machine": platform.machine(),
            "processor": platform.processor(),
            "python_version": platform.python_version(),
            "system": platform.system(),
            "release": platform.release(),
            "python_implementation": platform.python_implementation(),
            "bpsperf_profile": profile_id,
        },
        "commit_info": commit_info(),
        "benchmarks": benchmarks,
        "datetime": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "version": BENCHMARK_FORMAT_VERSION,
    }


def _geomean(xs: "tuple[float, ...]") -> float:
    # Clamped: rounding must not put the mean of equal runs above the fastest of them.
    return min(max(math.exp(math.fsum(math.log(x) for x in xs) / len(xs)), min(xs)), max(xs))


def _job_name(nodeid: str) -> str:
    """The job's test id without the repeat suffix pytest adds for repeats (``[trick-r2]`` -> ``[trick]``)."""
    head, bracket, param = nodeid.partition("[")
    if not bracket:
        return nodeid
    param = param.rstrip("]")
    parts = param.rsplit("-r", 1)
    if len(parts) == 2 and parts[1].isdigit():
        param = parts[0]
    return f"{head}[{param}]"


def bmf_export(results: Mapping[str, Any]) -> "dict[str, Any]":
    """Bencher Metric Format: ``{benchmark: {"throughput": {"value", "lower_value", "upper_value"}}}``.

    One benchmark per job (its test id; the workload when two jobs share one),
    value the geometric mean img/s over its runs, bounds the slowest and
    fastest run.
    """
    jobs = list(jobs_of(results).values())
    names = [_job_name(j.nodeid) for j in jobs]
    out: "dict[str, Any]" = {}
    for job, name in zip(jobs, names):
        if names.count(name) > 1:
            name = f"{name} {job.key.split('|', 2)[2]}"
        out[name] = {
            "throughput": {
                "value": _geomean(job.samples),
                "lower_value": min(job.samples),
                "upper_value": max(job.samples),
            }
        }
    return out


def github_benchmark_export(results: Mapping[str, Any]) -> "list[dict[str, Any]]":
    """github-action-benchmark ``customBiggerIsBetter``: one entry per job, img/s."""
    out = []
    jobs = list(jobs_of(results).values())
    names = [_job_name(j.nodeid) for j in jobs]
    for job, name in zip(jobs, names):
        if names.count(name) > 1:
            name = f"{name} {job.key.split('|', 2)[2]}"
        spread = statistics.stdev(job.samples) if len(job.samples) > 1 else 0.0
        w = job.workload
        out.append(
            {
                "name": name,
                "unit": "img/s",
                "value": _geomean(job.samples),
                "range": f"± {spread:.3g}",
                "extra": (
                    f"runs: {len(job.samples)}\ntrick: {job.trick}\nbackend: {w.get('backend')}, "
                    f"{w.get('model')}, batch {w.get('batch_size')}, {w.get('steps')} steps"
                ),
            }
        )
    return out
