"""The trick matrix: per test and workload, one row per trick against the reference trick."""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..config.tricks import REFERENCE_TRICK
from ..judge.job import RunResult
from ..stats import Significance, change_pct, scaling_efficiency, significance, summarize

__all__ = ["HEADER", "MatrixRow", "MatrixTable", "format_matrix_text", "head_runs", "matrix_tables", "step_samples"]


def head_runs(results: Iterable[RunResult]) -> "list[RunResult]":
    """The runs a matrix is made of: all of them, or of a base-vs-head session the head arm's."""
    return [r for r in results if r.spec.arm is None or r.spec.arm.name == "head"]


def step_samples(result: RunResult) -> "list[float]":
    """Aggregate img/s of each steady step (sum over workers), for one-run statistics."""
    m = result.measurement
    return [sum(w.batch_size / w.step_seconds[i] for w in m.workers) for i in m.common_steady_steps]


@dataclass(frozen=True)
class MatrixRow:
    """One trick of a matrix: throughput over repeats and where the step time goes."""

    trick: str
    runs: int
    median: float
    spread_pct: float  # stdev/mean over runs; over steady steps for one run
    change_pct: "float | None"  # against the reference trick, geometric means
    significance: "Significance | None"
    compute_s: "float | None"  # timing=breakdown only
    sync_s: "float | None"
    scaling: "float | None"  # img/s / (worker nodes x one worker node alone)
    #: img/s / (worker processes x one process on one GPU alone); None where a node runs one process
    scaling_per_process: "float | None" = None

    @property
    def sync_pct(self) -> "float | None":
        if self.compute_s is None or self.sync_s is None:
            return None
        total = self.compute_s + self.sync_s
        return 100.0 * self.sync_s / total if total else 0.0

    def as_dict(self) -> dict:
        return {
            "trick": self.trick,
            "runs": self.runs,
            "img_per_sec_median": self.median,
            "spread_pct": self.spread_pct,
            f"change_vs_{REFERENCE_TRICK}_pct": self.change_pct,
            "significance": self.significance.as_dict() if self.significance else None,
            "compute_s_per_step": self.compute_s,
            "sync_s_per_step": self.sync_s,
            "sync_pct": self.sync_pct,
            "scaling_efficiency": self.scaling,
            "scaling_efficiency_per_gpu": self.scaling_per_process,
        }

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> "MatrixRow":
        """The row again from its :meth:`as_dict` (a results document's ``matrix``)."""
        sig = row.get("significance")
        return cls(
            trick=row["trick"],
            runs=int(row["runs"]),
            median=float(row["img_per_sec_median"]),
            spread_pct=float(row["spread_pct"]),
            change_pct=row.get(f"change_vs_{REFERENCE_TRICK}_pct"),
            significance=Significance(**sig) if sig else None,
            compute_s=row.get("compute_s_per_step"),
            sync_s=row.get("sync_s_per_step"),
            scaling=row.get("scaling_efficiency"),
            scaling_per_process=row.get("scaling_efficiency_per_gpu"),
        )


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

    @classmethod
    def from_dict(cls, table: Mapping[str, Any]) -> "MatrixTable":
        """The table again from its :meth:`as_dict` (a results document's ``matrix``)."""
        return cls(
            test=table["test"],
            description=table["description"],
            rows=tuple(MatrixRow.from_dict(r) for r in table["rows"]),
            method=table["method"],
        )


def _describe(result: RunResult) -> str:
    s = result.spec.settings
    t = result.output.topology
    what = f"entry {s.entry.spec}" if s.entry is not None else s.model
    data = "" if s.data == "synthetic" else f", data {os.path.basename(s.data)} ({s.data_threads} decode threads)"
    processes = t.get("worker_processes", 0)
    servers = (
        f"{s.server_nodes} server node(s) x {s.servers_per_node}"
        if t.get("servers", 1)
        else f"no servers ({processes} rank(s))"
    )
    return (
        f"{result.backend}, {what}, batch {s.batch_size}, {s.image_size}x{s.image_size}, {s.dtype}{data}, "
        f"{s.steps} steps, {t.get('workers', s.workers)} worker(s), {servers}, "
        f"OMP_NUM_THREADS={s.omp_threads}, {timing_label(result.measurement.timing)}"
    )


def timing_label(timing: str) -> str:
    """How the steps were timed, as reports say it: breakdown is labelled as the serialized diagnostic."""
    if timing == "breakdown":
        return "timing breakdown (diagnostic: each step serialized to split compute from sync; slower than training)"
    return "timing overlapped (one sync per step, as users train)"


def _group_key(result: RunResult) -> tuple:
    s = result.spec.settings
    return (result.spec.test, tuple(sorted(s.workload(result.backend).items())), tuple(sorted(s.topology().items())))


def matrix_tables(results: Iterable[RunResult], *, alpha: float = 0.05) -> "list[MatrixTable]":
    """Group results by test and workload; one row per trick, changes against the reference trick."""
    groups: dict = {}
    for r in results:
        groups.setdefault(_group_key(r), []).append(r)
    tables = []
    for key, members in groups.items():
        by_trick: dict = {}
        for r in members:
            by_trick.setdefault(r.spec.trick.name, []).append(r)
        ref = by_trick.get(REFERENCE_TRICK)
        rows = []
        methods = set()
        for trick, runs in by_trick.items():
            samples = [r.img_per_sec for r in runs]
            med = statistics.median(samples)
            spread_samples = samples if len(runs) > 1 else step_samples(runs[0])
            spread = 100.0 * summarize(spread_samples).rel_spread if spread_samples else 0.0
            change = sig = None
            if ref is not None and trick != REFERENCE_TRICK:
                ref_samples = [r.img_per_sec for r in ref]
                change = change_pct(ref_samples, samples)
                if len(runs) > 1 and len(ref) > 1:
                    sig = significance(ref_samples, samples, alpha=alpha, sample_kind="runs")
                else:
                    sig = significance(step_samples(ref[0]), step_samples(runs[0]), alpha=alpha, sample_kind="steps")
                methods.add(
                    sig.method.split(" (")[0]
                    + (" (per-step samples of one run each)" if sig.n_a and len(runs) == 1 else " (runs)")
                )
            scaling, per_gpu = _scaling(runs, med)
            rows.append(
                MatrixRow(
                    trick=trick,
                    runs=len(runs),
                    median=med,
                    spread_pct=spread,
                    change_pct=change,
                    significance=sig,
                    compute_s=_median_or_none([r.measurement.compute_s for r in runs]),
                    sync_s=_median_or_none([r.measurement.sync_s for r in runs]),
                    scaling=scaling,
                    scaling_per_process=per_gpu,
                )
            )
        method = (
            f"img/s = median over runs; spread = stdev/mean; vs {REFERENCE_TRICK} = change of the geometric "
            f"mean against the '{REFERENCE_TRICK}' trick (not the stored baseline); beyond noise: "
            + ("; ".join(sorted(methods)) if methods else "n/a")
            + f", p < {alpha:g}. Scaling = img/s / (worker nodes x img/s of one worker node alone, same trick, "
            "no parameter server; on CPUs a worker node is one process), as the BytePS report computes it; on "
            "GPUs also per GPU: img/s / (worker processes x one process alone on one GPU)."
        )
        tables.append(MatrixTable(test=key[0], description=_describe(members[0]), rows=tuple(rows), method=method))
    return tables


def _median_or_none(values: "list[float | None]") -> "float | None":
    found = [v for v in values if v is not None]
    return None if len(found) < len(values) else statistics.median(found)


def _fmt_seconds(value: "float | None") -> str:
    return "-" if value is None else f"{value:.3f}s"


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
    if row.scaling is None:
        return "-"
    text = f"{100 * row.scaling:.1f}%"
    return text if row.scaling_per_process is None else f"{text} ({100 * row.scaling_per_process:.1f}%/GPU)"


def _scaling(runs: "list[RunResult]", median: float) -> "tuple[float | None, float | None]":
    """(per worker node, per GPU) scaling efficiency of a trick's runs, from their references."""
    nodes_ref = [float(ref) for r in runs for ref in [r.output.node_img_per_sec or r.output.single_img_per_sec] if ref]
    if not nodes_ref:
        return None, None
    topology = runs[0].output.topology
    processes = int(topology.get("worker_processes") or len(runs[0].measurement.workers))
    nodes = int(topology.get("workers") or processes)
    per_node = scaling_efficiency(median, nodes, statistics.median(nodes_ref))
    singles = [r.output.single_img_per_sec for r in runs if r.output.single_img_per_sec]
    if processes == nodes or not singles:
        return per_node, None
    return per_node, scaling_efficiency(median, processes, statistics.median(singles))


HEADER = (
    "trick",
    "runs",
    "img/s",
    "spread",
    f"vs {REFERENCE_TRICK}",
    "beyond noise",
    "compute/step",
    "sync/step",
    "sync",
    "scaling",
)


def row_cells(row: MatrixRow) -> tuple:
    """The cells of one row under :data:`HEADER`, as the terminal and the reports show them."""
    return (
        row.trick,
        str(row.runs),
        f"{row.median:.1f}",
        f"±{row.spread_pct:.0f}%",
        _fmt_change(row),
        _fmt_sig(row),
        _fmt_seconds(row.compute_s),
        _fmt_seconds(row.sync_s),
        "-" if row.sync_pct is None else f"{row.sync_pct:.0f}%",
        _fmt_scaling(row),
    )


def format_matrix_text(table: MatrixTable) -> list:
    """The matrix as aligned terminal lines."""
    rows = [HEADER] + [row_cells(r) for r in table.rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    lines = [f"trick matrix: {table.test} ({table.description})"]
    for r in rows:
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
    lines.append(table.method)
    return lines
