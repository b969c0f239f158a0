"""Where a step's time goes: input wait, compute and push/pull wait of each side of a verdict.

The timed steps are overlapped, as users train (one sync per step), so they
cannot say which part of a step grew. The workers therefore train a few
*diagnostic* steps after the timed ones (setting ``breakdown_steps``,
:func:`pytest_bpsperf.remote.workload.diagnose`), each waiting for its input
batch, then for forward and backward (``ctx.split()``), then for the optimizer
step's push and pull. :func:`run_breakdown` reads them (medians over a
worker's diagnostic steps; of a run, the worker the others waited for); with
BytePS traces the timed steps' PUSH and PULL per tensor come along (``tensors``).

A verdict carries the breakdown of both sides (base and head runs, or the
baseline's recorded session and this session's runs: :func:`combine` takes
the median of each part over runs), and :class:`BreakdownChange` says which
part grew: ``head 14.0% slower: compute +1%, push/pull wait +38%, input wait
+0% (push/pull wait grew most: +0.038 of +0.041 s per step)``. The parts are
diagnostics, serialized steps: their sum is more than an overlapped step, and
what they say is the share of each part, not the throughput. Plain Python.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import median
from typing import Any, Iterable, Mapping, Sequence

__all__ = [
    "BreakdownChange",
    "LABELS",
    "PARTS",
    "StepBreakdown",
    "breakdown_change",
    "breakdown_view",
    "change_phrase",
    "combine",
    "run_breakdown",
    "worker_breakdown",
]

#: The parts of a diagnostic step, in the order reports name them, with their words.
PARTS: "tuple[tuple[str, str], ...]" = (
    ("compute_s", "compute"),
    ("sync_s", "push/pull wait"),
    ("unsplit_s", "compute + push/pull"),  # a step callable that never calls ctx.split()
    ("input_s", "input wait"),
)
#: Below this many seconds per step on both sides a part is nothing to wait for (synthetic data's input).
NEGLIGIBLE_S = 1e-4
LABELS = dict(PARTS)


def _median(values: Iterable["float | None"]) -> "float | None":
    found = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    return median(found) if found else None


@dataclass(frozen=True)
class StepBreakdown:
    """Seconds per step of each part (None: not measured), over ``steps`` diagnostic steps of ``workers``.

    ``tensors``: tensor -> ``{"push_s", "pull_s"}`` busy seconds per traced step
    (BytePS traces of the timed steps; empty without them).
    """

    total_s: float
    input_s: "float | None" = None
    compute_s: "float | None" = None
    sync_s: "float | None" = None
    unsplit_s: "float | None" = None
    steps: int = 0
    workers: int = 0
    tensors: "Mapping[str, Mapping[str, float]]" = field(default_factory=dict, hash=False)

    def parts(self) -> "dict[str, float]":
        """Part name (``compute_s``, ...) -> seconds per step, for the parts measured, in step order."""
        return {name: float(getattr(self, name)) for name, _label in PARTS if getattr(self, name) is not None}

    def as_dict(self) -> dict:
        """JSON view (a run's ``breakdown``, each side of a verdict's)."""
        out: dict = {"total_s": self.total_s, "steps": self.steps, "workers": self.workers}
        out.update({name: getattr(self, name) for name, _label in PARTS})
        if self.tensors:
            out["tensors"] = {k: dict(v) for k, v in sorted(self.tensors.items())}
        return out

    @classmethod
    def from_dict(cls, data: "Mapping[str, Any] | None") -> "StepBreakdown | None":
        """The breakdown of a JSON view (None for none, or one without a total)."""
        if not data or data.get("total_s") is None:
            return None
        return cls(
            total_s=float(data["total_s"]),
            steps=int(data.get("steps") or 0),
            workers=int(data.get("workers") or 0),
            tensors={
                str(k): {p: float(x) for p, x in dict(v).items()} for k, v in dict(data.get("tensors") or {}).items()
            },
            **{name: (None if data.get(name) is None else float(data[name])) for name, _l in PARTS},
        )


def worker_breakdown(records: Sequence[Mapping[str, Any]]) -> "StepBreakdown | None":
    """One worker's breakdown: the median of each part over its ``diagnostic`` records (None without any)."""
    steps = [r for r in records if r.get("event") == "diagnostic" and r.get("total_s") is not None]
    if not steps:
        return None
    total = _median(r["total_s"] for r in steps)
    if total is None:
        return None  # no finite total: nothing measured
    values: "dict[str, Any]" = {name: _median(r.get(name) for r in steps) for name, _label in PARTS}
    return StepBreakdown(total_s=total, steps=len(steps), workers=1, **values)


def _tensor_means(comm: Iterable[Any]) -> "dict[str, dict[str, float]]":
    """Tensor -> mean PUSH/PULL busy seconds per step over the traced worker nodes (``CommWindow.detail``)."""
    sums: "dict[str, dict[str, list]]" = {}
    for window in comm:
        if getattr(window, "error", None) is not None:
            continue
        for tensor, values in dict((getattr(window, "detail", None) or {}).get("tensors") or {}).items():
            for part in ("push_s", "pull_s"):
                if values.get(part) is not None:
                    sums.setdefault(tensor, {}).setdefault(part, []).append(float(values[part]))
    return {t: {p: sum(v) / len(v) for p, v in parts.items()} for t, parts in sums.items()}


def _before_sync(b: StepBreakdown) -> float:
    return sum(v for v in (b.input_s, b.compute_s, b.unsplit_s if b.compute_s is None else None) if v is not None)


def run_breakdown(workers: Sequence[Any], comm: Iterable[Any] = ()) -> "StepBreakdown | None":
    """A run's breakdown: the parts of the worker the others waited for; None when no worker trained
    diagnostic steps. ``comm``: the run's ``CommWindow`` values (per-tensor PUSH/PULL).

    Synchronous training waits for its slowest worker: the others' push/pull wait
    holds the time they waited for it to finish its compute. So the parts are
    those of the worker that took longest to its push/pull (input wait and
    compute), whose push/pull wait is the communication alone: a straggler's
    compute counts as compute, never as push/pull wait.
    """
    found = [b for b in (worker_breakdown(w.records) for w in workers) if b is not None]
    if not found:
        return None
    slowest = max(found, key=_before_sync)
    return StepBreakdown(
        total_s=slowest.total_s,
        steps=min(b.steps for b in found),
        workers=len(found),
        tensors=_tensor_means(comm),
        **{name: getattr(slowest, name) for name, _label in PARTS},
    )


def combine(breakdowns: Iterable["StepBreakdown | Mapping[str, Any] | None"]) -> "StepBreakdown | None":
    """The median of each part over runs (a side of a verdict); runs without a breakdown are left out."""
    found = [b if isinstance(b, StepBreakdown) else StepBreakdown.from_dict(b) for b in breakdowns]
    runs = [b for b in found if b is not None]
    if not runs:
        return None
    tensors: "dict[str, dict[str, float]]" = {}
    names = sorted({t for b in runs for t in b.tensors})
    for t in names:
        tensors[t] = {
            p: v
            for p in ("push_s", "pull_s")
            for v in [_median(b.tensors.get(t, {}).get(p) for b in runs)]
            if v is not None
        }
    total = _median(b.total_s for b in runs)
    if total is None:
        return None  # no finite total: nothing measured
    values: "dict[str, Any]" = {name: _median(getattr(b, name) for b in runs) for name, _label in PARTS}
    return StepBreakdown(
        total_s=total, steps=min(b.steps for b in runs), workers=max(b.workers for b in runs), tensors=tensors, **values
    )


def _pct(before: float, after: float) -> "float | None":
    return None if before <= 0 else 100.0 * (after / before - 1.0)


@dataclass(frozen=True)
class BreakdownChange:
    """The breakdown of both sides of a verdict and what changed from ``base`` (the reference) to ``head``."""

    base: StepBreakdown
    head: StepBreakdown

    def rows(self) -> "list[tuple[str, float, float, float | None]]":
        """(part, base s/step, head s/step, change in percent) of each part both sides measured."""
        b, h = self.base.parts(), self.head.parts()
        return [(name, b[name], h[name], _pct(b[name], h[name])) for name, _label in PARTS if name in b and name in h]

    def grown(self) -> "tuple[str, float] | None":
        """The part whose seconds per step grew most, and by how much (None when none grew)."""
        grew = [(h - b, name) for name, b, h, _pct_change in self.rows() if h > b]
        if not grew:
            return None
        delta, name = max(grew)
        return name, delta

    def tensor_rows(self, top: int = 5) -> "list[tuple[str, float, float]]":
        """(tensor, push+pull growth s/step, head push+pull s/step) of the tensors that grew most (traces)."""
        out = []
        for tensor, head in self.head.tensors.items():
            base = self.base.tensors.get(tensor, {})
            now = sum(head.get(p, 0.0) for p in ("push_s", "pull_s"))
            before = sum(base.get(p, 0.0) for p in ("push_s", "pull_s"))
            out.append((tensor, now - before, now))
        out.sort(key=lambda row: (-row[1], row[0]))
        return [row for row in out[:top] if row[1] > 0]

    def phrase(self, change_pct: "float | None" = None) -> str:
        """``head 14.0% slower: compute +1%, push/pull wait +38%, input wait +0% (push/pull wait grew most:
        +0.038 of +0.041 s per step)``; ``change_pct`` is the throughput change of the verdict. A part
        below :data:`NEGLIGIBLE_S` on both sides is not named."""
        lead = ""
        if change_pct is not None and math.isfinite(change_pct):
            lead = (
                f"head {-change_pct:.1f}% slower: "
                if change_pct < 0
                else f"head {change_pct:.1f}% faster: "
                if change_pct > 0
                else "head as fast: "
            )
        parts = [
            f"{LABELS[name]} {'?' if pct is None else f'{pct:+.0f}%'}"
            for name, b, h, pct in self.rows()
            if max(b, h) >= NEGLIGIBLE_S
        ]  # synthetic data has no input to wait for: not named
        text = lead + ", ".join(parts)
        grown = self.grown()
        if grown is not None:
            name, delta = grown
            total = self.head.total_s - self.base.total_s
            text += f" ({LABELS[name]} grew most: +{delta:.3f} of {total:+.3f} s per step"
            tensors = self.tensor_rows(3) if name in ("sync_s", "unsplit_s") else []
            if tensors:
                text += "; most in " + ", ".join(f"{t} +{1000 * d:.1f} ms" for t, d, _now in tensors)
            text += ")"
        return text

    def as_dict(self) -> dict:
        """JSON view: both sides, each part's change, the part that grew most."""
        grown = self.grown()
        return {
            "base": self.base.as_dict(),
            "head": self.head.as_dict(),
            "change_pct": {name: pct for name, _b, _h, pct in self.rows()},
            "grew_most": None if grown is None else {"part": grown[0], "label": LABELS[grown[0]], "delta_s": grown[1]},
        }


def breakdown_change(
    base: "StepBreakdown | Mapping[str, Any] | None", head: "StepBreakdown | Mapping[str, Any] | None"
) -> "BreakdownChange | None":
    """Both sides' breakdowns as a :class:`BreakdownChange` (None unless both have one)."""
    b = base if isinstance(base, StepBreakdown) or base is None else StepBreakdown.from_dict(base)
    h = head if isinstance(head, StepBreakdown) or head is None else StepBreakdown.from_dict(head)
    return BreakdownChange(b, h) if b is not None and h is not None else None


def change_phrase(sides: "Mapping[str, Any] | None", change_pct: "float | None") -> str:
    """:meth:`BreakdownChange.phrase` of a verdict's ``breakdown`` (``{"base": ..., "head": ...}``); ''
    when a side has none."""
    change = breakdown_change((sides or {}).get("base"), (sides or {}).get("head"))
    return change.phrase(change_pct) if change is not None else ""


def breakdown_view(sides: "Mapping[str, Any] | None") -> "dict | None":
    """A verdict's ``breakdown`` (``{"base": ..., "head": ...}``) in its JSON view: both sides, each part's
    change, the part that grew most; only the side there is when the other has none; None for neither."""
    sides = sides or {}
    change = breakdown_change(sides.get("base"), sides.get("head"))
    if change is not None:
        return change.as_dict()
    return {k: dict(v) for k, v in sides.items() if v} or None
