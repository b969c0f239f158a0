"""Pictures (PNG, matplotlib's Agg canvas, no display): what a reviewer looks at on a pull request.

- per-step img/s of every run, warm-up steps marked (:func:`steps_picture`);
- the trick matrix as bars with their 95% intervals (:func:`matrix_picture`);
- compute against sync seconds per step, per trick (:func:`split_picture`);
- a job's history across commits with the baseline band and the detected
  change points (:func:`history_picture`);
- a base-vs-head job's ratio per pair with its interval (:func:`pairs_picture`);
- where a base-vs-head job's step time went on each side (:func:`breakdown_picture`);
- a bisect's head/base img/s per tested commit (:func:`bisect_picture`).

Each function computes the numbers first and returns a :class:`Picture` that
keeps them (``data``), so that a test, or a reader, can check that what was
drawn is what was measured. Inputs are plain documents (``--bpsperf-json``)
and :class:`~pytest_bpsperf.store.history.Trend` values; matplotlib is
imported only when drawing.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from ..stats import t_quantile
from ..store.entries import entry_samples
from ..store.history import Trend
from ..store.results import step_img_per_sec

__all__ = [
    "Picture",
    "bisect_picture",
    "breakdown_picture",
    "history_picture",
    "matrix_picture",
    "pairs_picture",
    "session_pictures",
    "split_picture",
    "steps_picture",
]


@dataclass(frozen=True)
class Picture:
    """One PNG written, what it shows, and the numbers drawn in it."""

    path: str
    kind: str  # steps, matrix, split, history
    title: str
    data: Mapping[str, Any] = field(default_factory=dict, hash=False)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]+", "-", text.split("::")[-1]).strip("-")[:60] or "test"


def _file_name(kind: str, test: str) -> str:
    """``KIND-<function>-<6 hex of the whole test id>.png``: readable, and unique per test id (two modules
    may both hold a ``test_throughput``)."""
    return f"{kind}-{_slug(test)}-{hashlib.sha1(test.encode()).hexdigest()[:6]}.png"


def _save(fig: Any, path: Path) -> None:
    """Render ``fig`` to ``path`` atomically (a reader never sees half a PNG)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=str(path.parent), prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        fig.savefig(tmp, format="png", dpi=100)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _figure(width: float = 8.0, height: float = 4.5) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height))


def _by_test(results: Mapping[str, Any]) -> "dict[str, list]":
    """Runs per test; of a base-vs-head session, the head arm's (the base's are in the pairs picture)."""
    grouped: "dict[str, list]" = {}
    for run in results.get("tests", []):
        if run.get("arm") not in (None, "head"):
            continue
        grouped.setdefault(run["test"], []).append(run)
    return grouped


def _run_label(run: Mapping[str, Any]) -> str:
    return f"{run['trick']} run {run['repeat'] + 1}"


def steps_picture(test: str, runs: Sequence[Mapping[str, Any]], out_dir: "str | os.PathLike") -> Picture:
    """Per-step aggregate img/s of each run of ``test``; warm-up steps drawn as hollow markers."""
    data: "dict[str, Any]" = {}
    for run in runs:
        workers = run.get("workers") or []
        if not workers:
            continue
        n = min(len(w["step_s"]) for w in workers)
        warm = sorted({i for w in workers for i in w.get("warmup_steps", []) if i < n})
        data[_run_label(run)] = {
            "steps": list(range(n)),
            "img_per_sec": [sum(w["batch_size"] / w["step_s"][i] for w in workers) for i in range(n)],
            "warmup_steps": warm,
        }
    fig = _figure()
    ax = fig.add_subplot(1, 1, 1)
    tricks = _tricks_in_order(runs)
    for run in runs:
        label = _run_label(run)
        if label not in data:
            continue
        series = data[label]
        # One colour per trick, one line style per repeat.
        (line,) = ax.plot(
            series["steps"],
            series["img_per_sec"],
            marker="o",
            markersize=3,
            label=label,
            color=f"C{tricks.index(run['trick']) % 10}",
            linestyle=("-", "--", ":", "-.")[run["repeat"] % 4],
        )
        warm = series["warmup_steps"]
        if warm:
            ax.plot(
                warm,
                [series["img_per_sec"][i] for i in warm],
                linestyle="none",
                marker="o",
                markersize=8,
                markerfacecolor="none",
                markeredgecolor=line.get_color(),
            )
    ax.set_xlabel("training step (hollow circles: warm-up, left out)")
    ax.set_ylabel("img/s (sum over workers)")
    title = f"per-step throughput: {test.split('::')[-1]}"
    ax.set_title(title)
    if data:
        ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    path = Path(out_dir) / _file_name("steps", test)
    _save(fig, path)
    return Picture(str(path), "steps", title, data)


def _interval(samples: Sequence[float], confidence: float = 0.95) -> "tuple[float, float, float]":
    """Geometric mean and its t interval on log scale; (x, x, x) for one sample."""
    logs = [math.log(x) for x in samples]
    n = len(logs)
    mean = math.fsum(logs) / n
    if n < 2:
        return math.exp(mean), math.exp(mean), math.exp(mean)
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in logs) / (n - 1))
    half = t_quantile(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def _tricks_in_order(runs: Sequence[Mapping[str, Any]]) -> "list[str]":
    return list(dict.fromkeys(r["trick"] for r in runs))


def matrix_picture(test: str, runs: Sequence[Mapping[str, Any]], out_dir: "str | os.PathLike") -> Picture:
    """The trick matrix of ``test``: geometric-mean img/s per trick with a 95% interval.

    Over runs when a trick ran at least twice, else over its steady steps
    (the interval is then optimistic: steps of one run share its luck).
    """
    data: "dict[str, Any]" = {}
    for trick in _tricks_in_order(runs):
        mine = [r for r in runs if r["trick"] == trick]
        samples = [float(r["img_per_sec"]) for r in mine]
        steps = step_img_per_sec(mine[0]) if len(samples) < 2 else []
        if len(steps) >= 2:
            # One run: its img/s, with the relative interval of its steady steps.
            gm, low, high = _interval(steps)
            scale = samples[0] / gm
            data[trick] = {
                "value": samples[0],
                "low": low * scale,
                "high": high * scale,
                "n": len(steps),
                "basis": "steps",
            }
        else:
            value, low, high = _interval(samples)
            data[trick] = {"value": value, "low": low, "high": high, "n": len(samples), "basis": "runs"}
    fig = _figure()
    ax = fig.add_subplot(1, 1, 1)
    names = list(data)
    values = [data[t]["value"] for t in names]
    errs = [[data[t]["value"] - data[t]["low"] for t in names], [data[t]["high"] - data[t]["value"] for t in names]]
    ax.bar(range(len(names)), values, yerr=errs, capsize=6, color="#4c78a8")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=15, fontsize="small")
    ax.set_ylabel("img/s (geometric mean, 95% interval)")
    title = f"trick matrix: {test.split('::')[-1]}"
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    path = Path(out_dir) / _file_name("matrix", test)
    _save(fig, path)
    return Picture(str(path), "matrix", title, data)


def split_picture(test: str, runs: Sequence[Mapping[str, Any]], out_dir: "str | os.PathLike") -> Picture:
    """Compute (forward+backward) against sync (optimizer: push/pull) seconds per step, mean over runs.

    Only runs of ``timing=breakdown`` have the split (that mode serializes each step to measure it).
    """
    data: "dict[str, Any]" = {}
    for trick in _tricks_in_order(runs):
        mine = [r for r in runs if r["trick"] == trick]
        data[trick] = {
            "compute_s": math.fsum(r.get("compute_s_per_step", 0.0) for r in mine) / len(mine),
            "sync_s": math.fsum(r.get("sync_s_per_step", 0.0) for r in mine) / len(mine),
        }
    fig = _figure()
    ax = fig.add_subplot(1, 1, 1)
    names = list(data)
    compute = [data[t]["compute_s"] for t in names]
    sync = [data[t]["sync_s"] for t in names]
    ax.bar(range(len(names)), compute, label="compute (forward+backward)", color="#72b7b2")
    ax.bar(range(len(names)), sync, bottom=compute, label="sync (optimizer step: push/pull)", color="#e45756")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=15, fontsize="small")
    ax.set_ylabel("seconds per steady step")
    title = f"compute/sync split (timing=breakdown, serialized steps): {test.split('::')[-1]}"
    ax.set_title(title)
    ax.legend(fontsize="small")
    path = Path(out_dir) / _file_name("split", test)
    _save(fig, path)
    return Picture(str(path), "split", title, data)


def history_picture(
    trend: Trend,
    out_dir: "str | os.PathLike",
    *,
    baseline: Optional[Mapping[str, Any]] = None,
    tolerance: Optional[float] = None,
) -> Picture:
    """A job across commits: every run, the per-commit level, the fitted segments and change points.

    The baseline band spans the baseline's samples (all recorded sessions); the dashed line is where
    a drop beyond ``tolerance`` from its median begins.
    """
    points = trend.points
    data: "dict[str, Any]" = {
        "commits": [p.label for p in points],
        "geomean": [p.geomean for p in points],
        "samples": [list(p.samples) for p in points],
        "fitted": [math.exp(trend.fit.level_at(i)) for i in range(len(points))],
        "change_points": [
            {"index": s.index, "commit": points[s.index].label, "change_pct": s.change_pct} for s in trend.fit.steps
        ],
    }
    samples = entry_samples(baseline)  # every recorded session's runs (either schema)
    if samples:
        data["baseline_band"] = [min(samples), max(samples)]
        if tolerance is not None:
            ordered = sorted(samples)
            mid = len(ordered) // 2
            median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
            data["regression_below"] = median * (1.0 - tolerance)
    fig = _figure(9.0, 4.5)
    ax = fig.add_subplot(1, 1, 1)
    xs = list(range(len(points)))
    if "baseline_band" in data:
        ax.axhspan(*data["baseline_band"], color="#9ecae9", alpha=0.4, label="baseline samples")
    if "regression_below" in data:
        ax.axhline(
            data["regression_below"],
            color="#d62728",
            linestyle="--",
            linewidth=1,
            label=f"baseline -{100 * (tolerance or 0):.0f}%",
        )
    for x, p in zip(xs, points):
        ax.plot([x] * len(p.samples), p.samples, linestyle="none", marker=".", color="#7f7f7f")
    ax.plot(xs, data["geomean"], marker="o", color="#1f77b4", label="geometric mean per commit")
    ax.plot(xs, data["fitted"], drawstyle="steps-mid", color="#ff7f0e", label="fitted level")
    for cp in data["change_points"]:
        ax.axvline(cp["index"] - 0.5, color="#ff7f0e", linestyle=":")
        ax.annotate(
            f"{cp['change_pct']:+.1f}% at {cp['commit']}",
            (cp["index"] - 0.5, data["fitted"][cp["index"]]),
            textcoords="offset points",
            xytext=(4, 8),
            fontsize="small",
            color="#ff7f0e",
        )
    ax.set_xticks(xs)
    ax.set_xticklabels(data["commits"], rotation=60, fontsize="x-small")
    ax.set_ylabel("img/s")
    title = f"history: {trend.test.split('::')[-1]} [{trend.trick}] on {trend.profile_id}"
    ax.set_title(title, fontsize="medium")
    ax.legend(fontsize="x-small")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    digest = hashlib.sha1(trend.key.encode()).hexdigest()[:6]  # jobs of one test and trick differ in workload
    path = Path(out_dir) / f"history-{_slug(trend.test)}-{_slug(trend.trick)}-{digest}.png"
    _save(fig, path)
    return Picture(str(path), "history", title, data)


def pairs_picture(job: Mapping[str, Any], out_dir: "str | os.PathLike") -> Picture:
    """Head over base img/s of each pair of a base-vs-head job, with the final interval and the tolerance."""
    rows = [p for p in job.get("pair_table", []) if p.get("ratio") is not None]
    data: "dict[str, Any]" = {
        "pairs": [int(p["pair"]) for p in rows],
        "ratio": [float(p["ratio"]) for p in rows],
        "order": [str(p.get("order", "")) for p in rows],
        "ci_low": job.get("ci_low"),
        "ci_high": job.get("ci_high"),
        "tolerance": job.get("tolerance"),
        "status": job.get("status"),
    }
    fig = _figure()
    ax = fig.add_subplot(1, 1, 1)
    colours = ["#4c78a8" if o.startswith("base") else "#f58518" for o in data["order"]]
    ax.scatter(data["pairs"], [100 * (r - 1) for r in data["ratio"]], c=colours, zorder=3)
    ax.axhline(0.0, color="black", linewidth=1)
    if data["tolerance"] is not None:
        ax.axhline(
            -100 * float(data["tolerance"]),
            color="#e45756",
            linestyle="--",
            label=f"tolerance -{100 * float(data['tolerance']):.0f}%",
        )
    if data["ci_low"] is not None and data["ci_high"] is not None:
        ax.axhspan(
            100 * (float(data["ci_low"]) - 1),
            100 * (float(data["ci_high"]) - 1),
            color="#72b7b2",
            alpha=0.3,
            label="interval over all looks",
        )
    ax.set_xlabel("pair (blue: base ran first, orange: head ran first)")
    ax.set_ylabel("head vs base img/s (%)")
    name = str(job.get("nodeid", job.get("test", "job")))
    title = f"base vs head, {data['status']}: {name.split('::')[-1]}"
    ax.set_title(title)
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    digest = hashlib.sha1(str(job.get("key", name)).encode()).hexdigest()[:6]
    path = Path(out_dir) / f"pairs-{_slug(name)}-{digest}.png"
    _save(fig, path)
    return Picture(str(path), "pairs", title, data)


#: The parts of a step as the breakdown pictures draw them (name, words, colour).
_PARTS = (
    ("input_s", "input wait", "#72b7b2"),
    ("compute_s", "compute", "#4c78a8"),
    ("sync_s", "push/pull wait", "#f58518"),
    ("unsplit_s", "compute + push/pull", "#9d755d"),
)


def breakdown_picture(job: Mapping[str, Any], out_dir: "str | os.PathLike") -> Picture:
    """Where a base-vs-head job's step time went: stacked seconds per diagnostic step of each part, per side."""
    sides = job.get("breakdown") or {}
    data: "dict[str, Any]" = {"sides": [s for s in ("base", "head") if sides.get(s)], "status": job.get("status")}
    for name, _label, _colour in _PARTS:
        data[name] = [(sides[s] or {}).get(name) for s in data["sides"]]
    fig = _figure()
    ax = fig.add_subplot(1, 1, 1)
    bottom = [0.0] * len(data["sides"])
    for name, label, colour in _PARTS:
        values = [float(v or 0.0) for v in data[name]]
        if any(values):
            ax.bar(data["sides"], values, bottom=bottom, color=colour, label=label)
            bottom = [b + v for b, v in zip(bottom, values)]
    ax.set_ylabel("seconds per diagnostic step")
    name = str(job.get("nodeid", job.get("test", "job")))
    title = f"where the step time went, {data['status']}: {name.split('::')[-1]}"
    ax.set_title(title, fontsize="medium")
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3, axis="y")
    digest = hashlib.sha1(str(job.get("key", name)).encode()).hexdigest()[:6]
    path = Path(out_dir) / f"breakdown-{_slug(name)}-{digest}.png"
    _save(fig, path)
    return Picture(str(path), "breakdown", title, data)


def bisect_picture(doc: Mapping[str, Any], path: "str | os.PathLike") -> Picture:
    """A bisect's comparisons: head/base img/s of each (at its head commit, with its interval) over the
    range's commits in first-parent order; the tolerance, the culprit or the range it ended with."""
    commits = doc["commits"]
    steps = [s for s in doc["steps"] if s.get("ratio") is not None]
    data = {
        "labels": [c["sha"][:7] for c in commits],
        "x": [s["head_position"] for s in steps],
        "ratio": [float(s["ratio"]) for s in steps],
        "status": [s["status"] for s in steps],
        "ci_low": [s.get("ci_low") for s in steps],
        "ci_high": [s.get("ci_high") for s in steps],
        "base": [s["base_position"] for s in steps],
        "tolerance": doc.get("tolerance"),
        "result": doc["result"]["kind"],
        "skipped": [c["position"] for c in commits if c.get("skipped")],
    }
    fig = _figure()
    ax = fig.add_subplot(1, 1, 1)
    colour = {"regression": "#e45756", "ok": "#54a24b", "improvement": "#4c78a8", "inconclusive": "#bab0ac"}
    for x, r, lo, hi, st in zip(data["x"], data["ratio"], data["ci_low"], data["ci_high"], data["status"]):
        y = 100 * (r - 1)
        err = None if lo is None or hi is None else [[y - 100 * (float(lo) - 1)], [100 * (float(hi) - 1) - y]]
        ax.errorbar([x], [y], yerr=err, fmt="o", color=colour.get(st, "black"), capsize=3, zorder=3)
    ax.axhline(0.0, color="black", linewidth=1)
    if data["tolerance"] is not None:
        ax.axhline(
            -100 * float(data["tolerance"]),
            color="#e45756",
            linestyle="--",
            label=f"tolerance -{100 * float(data['tolerance']):.0f}%",
        )
    positions = {c["sha"]: c["position"] for c in commits}
    r = doc["result"]
    if r["kind"] == "culprit":
        ax.axvline(positions[r["hi"]], color="#e45756", alpha=0.4, linewidth=6, label="culprit")
    elif r["kind"] == "range":
        ax.axvspan(positions[r["lo"]] + 0.5, positions[r["hi"]] + 0.5, color="#bab0ac", alpha=0.3, label="not narrowed")
    for k in data["skipped"]:
        ax.axvline(k, color="#bab0ac", linestyle=":", linewidth=1)
    ax.set_xticks(range(len(commits)))
    ax.set_xticklabels(data["labels"], rotation=60, fontsize="x-small")
    ax.set_xlabel("commit (GOOD first, first parents; each point: a comparison at its head commit)")
    ax.set_ylabel("head vs base img/s (%)")
    title = f"bpsperf bisect: {r['kind']}" + (f" {r['culprit']['sha'][:12]}" if r.get("culprit") else "")
    ax.set_title(title, fontsize="medium")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    _save(fig, Path(path))
    return Picture(str(path), "bisect", title, data)


def session_pictures(
    results: Mapping[str, Any],
    out_dir: "str | os.PathLike",
    *,
    trends: Sequence[Trend] = (),
    baselines: "Mapping[str, Mapping[str, Any]] | None" = None,
    tolerances: "Mapping[str, float] | None" = None,
) -> "list[Picture]":
    """Every picture of a session: steps, matrix and split per test, history per job with a trend.

    ``baselines`` and ``tolerances`` map job keys to the baseline entry and
    the test's tolerance, for the band in history pictures.
    """
    out: "list[Picture]" = []
    for test, runs in _by_test(results).items():
        out.append(steps_picture(test, runs, out_dir))
        if len(_tricks_in_order(runs)) > 1 or len(runs) > 1:
            out.append(matrix_picture(test, runs, out_dir))
        split = [r for r in runs if r.get("compute_s_per_step") is not None]
        if split:  # only timing=breakdown splits a step; overlapped steps have no split to draw
            out.append(split_picture(test, split, out_dir))
    for job in (results.get("base_vs_head") or {}).get("jobs", []):
        out.append(pairs_picture(job, out_dir))
        if job.get("breakdown"):
            out.append(breakdown_picture(job, out_dir))
    for trend in trends:
        if len(trend.points) < 2:
            continue
        out.append(
            history_picture(
                trend, out_dir, baseline=(baselines or {}).get(trend.key), tolerance=(tolerances or {}).get(trend.key)
            )
        )
    return out
