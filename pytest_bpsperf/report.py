"""Reports: the one-line result, the trick matrix (terminal, Markdown), the JSON file.

Functions here take finished results (``RunResult``-like objects) and return
text or plain data; writing is atomic.
"""

from __future__ import annotations

import json
import os
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from .baselines import atomic_write_text
from .stats import Significance, scaling_efficiency, significance

JSON_SCHEMA_VERSION = 1
REFERENCE_TRICK = "baseline"


def result_line(result: Any) -> str:
    """One line per perf test: img/s, per worker, step split, warm-up, harness overhead."""
    m = result.measurement
    workers = ", ".join(f"{n} {v:.1f}" for n, v in m.per_worker_img_per_sec.items())
    warm = sorted({s for steps in m.warmup_steps.values() for s in steps})
    line = (
        f"{result.request.nodeid}: {m.img_per_sec:.1f} img/s ({workers}); "
        f"step {m.step_s:.3f}s = compute {m.compute_s:.3f}s + sync {m.sync_s:.3f}s; "
        f"warm-up steps {_ranges(warm)}; bring-up {m.bringup_s:.1f}s, teardown {m.teardown_s:.1f}s"
    )
    for trace_dir, t in sorted(((result.output.extra or {}).get("timeline") or {}).items()):
        if "error" in t:
            line += f"; {trace_dir}: no timeline ({t['error']})"
        else:
            line += (f"; {trace_dir}: PUSH {t['mean_push_s']:.4f}s PULL {t['mean_pull_s']:.4f}s per step "
                     f"({t['steps']} traced steps)")
    return line


def _ranges(values: Sequence[int]) -> str:
    if not values:
        return "none"
    out, start, prev = [], values[0], values[0]
    for v in list(values[1:]) + [None]:
        if v is not None and v == prev + 1:
            prev = v
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if v is not None:
            start = prev = v
    return ",".join(out)


def step_samples(result: Any) -> list:
    """Aggregate img/s of each steady step (sum over workers), for one-run statistics."""
    m = result.measurement
    return [sum(w.batch_size / w.step_seconds[i] for w in m.workers) for i in m.common_steady_steps]


@dataclass(frozen=True)
class MatrixRow:
    """One trick of a matrix: throughput over repeats and where the step time goes."""

    trick: str
    runs: int
    median: float
    spread_pct: float  # (max - min) / median over runs; per-step spread for one run
    change_pct: "float | None"
    significance: "Significance | None"
    compute_s: float
    sync_s: float
    scaling: "float | None"

    @property
    def sync_pct(self) -> float:
        total = self.compute_s + self.sync_s
        return 100.0 * self.sync_s / total if total else 0.0

    def as_dict(self) -> dict:
        return {
            "trick": self.trick,
            "runs": self.runs,
            "img_per_sec_median": self.median,
            "spread_pct": self.spread_pct,
            "change_vs_baseline_pct": self.change_pct,
            "significance": self.significance.as_dict() if self.significance else None,
            "compute_s_per_step": self.compute_s,
            "sync_s_per_step": self.sync_s,
            "sync_pct": self.sync_pct,
            "scaling_efficiency": self.scaling,
        }


@dataclass(frozen=True)
class MatrixTable:
    """The trick matrix of one test and workload."""

    test: str
    description: str
    rows: tuple
    method: str

    def as_dict(self) -> dict:
        return {
            "test": self.test,
            "description": self.description,
            "rows": [r.as_dict() for r in self.rows],
            "method": self.method,
        }


def _describe(result: Any) -> str:
    s = result.request.settings
    t = result.output.topology
    return (
        f"{result.backend}, {s.model}, batch {s.batch_size}, {s.image_size}x{s.image_size}, {s.steps} steps, "
        f"{t.get('workers', s.workers)} worker(s), {s.server_nodes} server node(s) x {s.servers_per_node}, "
        f"OMP_NUM_THREADS={s.omp_threads}"
    )


def _group_key(result: Any) -> tuple:
    s = result.request.settings
    return (result.request.test, tuple(sorted(s.workload().items())), tuple(sorted(s.topology().items())))


def matrix_tables(results: Iterable[Any], *, alpha: float = 0.05) -> list:
    """Group results by test and workload; one row per trick, changes against ``baseline``."""
    groups: dict = {}
    for r in results:
        groups.setdefault(_group_key(r), []).append(r)
    tables = []
    for key, members in groups.items():
        by_trick: dict = {}
        for r in members:
            by_trick.setdefault(r.request.trick.name, []).append(r)
        ref = by_trick.get(REFERENCE_TRICK)
        rows = []
        methods = set()
        for trick, runs in by_trick.items():
            samples = [r.img_per_sec for r in runs]
            med = statistics.median(samples)
            if len(runs) > 1:
                spread = 100.0 * (max(samples) - min(samples)) / med
            else:
                steps = step_samples(runs[0])
                spread = 100.0 * (max(steps) - min(steps)) / statistics.median(steps) if steps else 0.0
            change = sig = None
            if ref is not None and trick != REFERENCE_TRICK:
                ref_samples = [r.img_per_sec for r in ref]
                change = 100.0 * (med / statistics.median(ref_samples) - 1.0)
                if len(runs) > 1 and len(ref) > 1:
                    sig = significance(ref_samples, samples, alpha=alpha, sample_kind="runs")
                else:
                    sig = significance(step_samples(ref[0]), step_samples(runs[0]), alpha=alpha,
                                       sample_kind="steps")
                methods.add(sig.method.split(" (")[0] + (" (per-step samples of one run each)"
                                                         if sig.n_a and len(runs) == 1 else " (runs)"))
            singles = [r.output.extra.get("single_img_per_sec") for r in runs if r.output.extra]
            singles = [s for s in singles if s]
            scaling = None
            if singles:
                n = int(runs[0].output.topology.get("worker_processes") or len(runs[0].measurement.workers))
                scaling = scaling_efficiency(med, n, statistics.median(singles))
            rows.append(
                MatrixRow(
                    trick=trick,
                    runs=len(runs),
                    median=med,
                    spread_pct=spread,
                    change_pct=change,
                    significance=sig,
                    compute_s=statistics.median(r.measurement.compute_s for r in runs),
                    sync_s=statistics.median(r.measurement.sync_s for r in runs),
                    scaling=scaling,
                )
            )
        method = (
            f"change = median img/s against the '{REFERENCE_TRICK}' trick; significant: "
            + ("; ".join(sorted(methods)) if methods else "n/a")
            + f", p < {alpha:g}. Scaling = img/s / (worker processes x single-process img/s without a "
            "parameter server)."
        )
        tables.append(MatrixTable(test=key[0], description=_describe(members[0]), rows=tuple(rows), method=method))
    return tables


def _fmt_change(row: MatrixRow) -> str:
    return "-" if row.change_pct is None else f"{row.change_pct:+.1f}%"


def _fmt_sig(row: MatrixRow) -> str:
    sig = row.significance
    if sig is None:
        return "-"
    if sig.p_value is None:
        return "n/a"
    return f"{'yes' if sig.significant else 'no'} (p={sig.p_value:.2g})"


def _fmt_scaling(row: MatrixRow) -> str:
    return "-" if row.scaling is None else f"{100 * row.scaling:.1f}%"


_HEADER = ("setting", "runs", "img/s", "spread", "vs baseline", "beyond noise", "compute/step", "sync/step",
           "sync", "scaling")


def _cells(row: MatrixRow) -> tuple:
    return (
        row.trick,
        str(row.runs),
        f"{row.median:.1f}",
        f"±{row.spread_pct / 2:.0f}%",
        _fmt_change(row),
        _fmt_sig(row),
        f"{row.compute_s:.3f}s",
        f"{row.sync_s:.3f}s",
        f"{row.sync_pct:.0f}%",
        _fmt_scaling(row),
    )


def format_matrix_text(table: MatrixTable) -> list:
    """The matrix as aligned terminal lines."""
    rows = [_HEADER] + [_cells(r) for r in table.rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEADER))]
    lines = [f"trick matrix: {table.test} ({table.description})"]
    for r in rows:
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
    lines.append(table.method)
    return lines


def format_matrix_markdown(table: MatrixTable) -> list:
    """The matrix as a Markdown table."""
    lines = [f"#### `{table.test}`", "", table.description, ""]
    lines.append("| " + " | ".join(_HEADER) + " |")
    lines.append("|" + "|".join(["---"] + ["---:"] * (len(_HEADER) - 1)) + "|")
    for r in table.rows:
        cells = list(_cells(r))
        cells[0] = f"`{cells[0]}`"
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"_{table.method}_", ""]
    return lines


def verdict_line(verdict: Any) -> str:
    """One terminal line per verdict."""
    return f"{verdict.status.upper():12s} {verdict.nodeid}: {verdict.figures()}"


_STATUS_ICON = {"ok": "✅ ok", "regression": "❌ regression", "improvement": "🚀 improvement",
                "no-baseline": "⚪ no baseline"}


def verdict_markdown(verdicts: Sequence[Any]) -> list:
    """The verdict table of the PR comment."""
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


def github_annotations(verdicts: Sequence[Any]) -> list:
    """GitHub Actions workflow commands: ::error for regressions, ::warning for the rest worth seeing."""
    def escape(text: str) -> str:
        return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")

    out = []
    for v in verdicts:
        level = {"regression": "error", "improvement": "warning", "no-baseline": "warning"}.get(v.status)
        if level is None:
            continue
        path = v.nodeid.split("::")[0]
        title = f"bpsperf {v.status}: {v.trick}"
        out.append(f"::{level} file={path},title={escape(title)}::{escape(v.nodeid + ': ' + v.figures())}")
    return out


def markdown_document(results: Sequence[Any], header: Sequence[str], verdicts: Sequence[Any] = ()) -> str:
    """The Markdown report: header, verdicts, per-test results, trick matrices."""
    lines = ["## bpsperf results", ""]
    lines += [f"- {h}" for h in header]
    if header:
        lines.append("")
    lines += verdict_markdown(verdicts)
    lines += ["| test | img/s | compute/step | sync/step | bring-up | teardown |", "|---|---:|---:|---:|---:|---:|"]
    for r in results:
        m = r.measurement
        lines.append(
            f"| `{r.request.nodeid}` | {m.img_per_sec:.1f} | {m.compute_s:.3f}s | {m.sync_s:.3f}s | "
            f"{m.bringup_s:.1f}s | {m.teardown_s:.1f}s |"
        )
    lines.append("")
    for table in matrix_tables(results):
        lines += format_matrix_markdown(table)
    return "\n".join(lines) + "\n"


def json_document(
    results: Sequence[Any], failures: Sequence[tuple], header: Sequence[str], info: "dict | None" = None
) -> dict:
    """The ``--bpsperf-json`` document."""
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "session": list(header),
        "session_info": dict(info or {}),
        "tests": [r.as_dict() for r in results],
        "failures": [{"nodeid": n, "reason": reason} for n, reason in failures],
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


def benchmark_document(results: Sequence[Any], profile: Any = None) -> dict:
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
        name = r.request.nodeid.split("::")[-1]
        if r.request.repeat:
            name += f"-run{r.request.repeat + 1}"
        extra = {"img_per_sec": r.img_per_sec, "per_worker_img_per_sec": r.per_worker_img_per_sec,
                 "backend": r.backend, "warmup_steps": r.warmup_steps}
        if r.verdict is not None:
            extra["verdict"] = r.verdict.status
        benchmarks.append({
            "group": r.request.test, "name": name, "fullname": r.request.nodeid,
            "params": {"trick": r.request.trick.name}, "param": r.request.trick.name,
            "extra_info": extra,
            "options": {"disable_gc": False, "timer": "perf_counter", "min_rounds": len(rounds),
                        "max_time": r.measurement.wall_s, "min_time": 0.0, "warmup": True},
            "stats": _benchmark_stats(rounds),
        })
    return {
        "machine_info": {"node": platform.node(), "machine": platform.machine(), "processor": platform.processor(),
                         "python_version": platform.python_version(), "system": platform.system(),
                         "release": platform.release(), "python_implementation": platform.python_implementation(),
                         "bpsperf_profile": getattr(profile, "id", None)},
        "commit_info": {},
        "benchmarks": benchmarks,
        "datetime": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "version": "5.1.0",
    }


def write_text(path: "str | os.PathLike", text: str) -> None:
    """Write ``text`` to ``path`` atomically, creating its directory."""
    target = Path(os.path.abspath(os.fspath(path)))
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, text)


def write_json(path: "str | os.PathLike", document: dict) -> None:
    """Stable, sorted, pretty-printed JSON, written atomically."""
    write_text(path, json.dumps(document, indent=2, sort_keys=True, default=str) + "\n")
