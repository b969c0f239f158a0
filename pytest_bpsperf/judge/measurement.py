"""From what the roles wrote to a measurement: steady state, img/s, compute/sync split.

:class:`RunOutput` is what one distributed run leaves (per-worker step records,
each role's fate, the harness's own timings). :func:`measure` turns it into a
:class:`Measurement`. Aggregate img/s is the sum over worker processes of each
one's steady-state img/s, warm-up steps detected from the timings themselves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from ..runs.output import RunOutput, WorkerRecords
from ..stats import SteadyState, detect_steady_state
from .breakdown import StepBreakdown, run_breakdown


class MeasurementError(ValueError):
    """The records do not allow a measurement (e.g. too few steps)."""


#: No training step is shorter than this, and no run trains more images a second than
#: :data:`MAX_IMG_PER_SEC`: records beyond them are no measurement (the statistics would overflow
#: on them). The schemas of the files bound img/s and step times by the same figures.
MIN_STEP_S = 1e-6
MAX_IMG_PER_SEC = 1e9


@dataclass(frozen=True)
class WorkerMeasurement:
    """One worker's steady-state figures."""

    name: str
    img_per_sec: float
    steady: SteadyState
    step_seconds: "tuple[float, ...]"
    compute_seconds: "tuple[float, ...] | None"  # None unless every step was split (timing=breakdown)
    sync_seconds: "tuple[float, ...] | None"
    batch_size: int
    timing: str = "breakdown"

    @property
    def step_img_per_sec(self) -> list:
        """Per-step throughput of the steady steps (for per-step statistics)."""
        return [self.batch_size / self.step_seconds[i] for i in self.steady.steady_steps]

    def mean_of(self, series: "Sequence[float] | None") -> "float | None":
        """Mean of ``series`` over the steady steps (None for no series)."""
        return None if series is None else self.steady_mean(series)

    def steady_mean(self, series: "Sequence[float]") -> float:
        """Mean of ``series`` over the steady steps."""
        values = [series[i] for i in self.steady.steady_steps]
        return sum(values) / len(values)


@dataclass(frozen=True)
class Measurement:
    """Aggregate figures of one run."""

    img_per_sec: float
    workers: tuple  # WorkerMeasurement per worker process
    compute_s: "float | None"  # mean steady-state forward+backward seconds per step; timing=breakdown only
    sync_s: "float | None"  # mean steady-state optimizer (push/pull) seconds per step; timing=breakdown only
    step_s: float
    bringup_s: float
    teardown_s: float
    wall_s: float
    #: ``overlapped`` (one sync per step, as users train) or ``breakdown`` (serialized, split steps)
    timing: str = "breakdown"
    #: where a step's time goes, from the diagnostic steps after the timed ones (None: none ran)
    breakdown: "StepBreakdown | None" = None

    @property
    def per_worker_img_per_sec(self) -> dict:
        """Worker name -> steady-state img/s."""
        return {w.name: w.img_per_sec for w in self.workers}

    @property
    def warmup_steps(self) -> dict:
        """Worker name -> the step indices left out as warm-up."""
        return {w.name: list(w.steady.warmup_steps) for w in self.workers}

    @property
    def common_steady_steps(self) -> list:
        """Step indices that every worker counted as steady (workers of dist_sync step together)."""
        return sorted(set.intersection(*(set(w.steady.steady_steps) for w in self.workers)))

    @property
    def sync_fraction(self) -> "float | None":
        """Share of a step spent in push/pull (None without the breakdown)."""
        if self.sync_s is None:
            return None
        return self.sync_s / self.step_s if self.step_s else 0.0

    @property
    def training_s(self) -> float:
        """Seconds of the run spent in the harness's view of training (wall minus overhead)."""
        return max(0.0, self.wall_s - self.bringup_s - self.teardown_s)

    def as_dict(self) -> dict:
        """JSON view."""
        return {
            "img_per_sec": self.img_per_sec,
            "timing": self.timing,
            "per_worker_img_per_sec": self.per_worker_img_per_sec,
            "warmup_steps": self.warmup_steps,
            "steady_state_method": self.workers[0].steady.method if self.workers else "",
            "steady_state_reliable": all(w.steady.reliable for w in self.workers),
            "compute_s_per_step": self.compute_s,
            "sync_s_per_step": self.sync_s,
            "step_s": self.step_s,
            "sync_fraction": self.sync_fraction,
            "bringup_s": self.bringup_s,
            "teardown_s": self.teardown_s,
            "wall_s": self.wall_s,
            "training_s": self.training_s,
            "breakdown": self.breakdown.as_dict() if self.breakdown is not None else None,
        }


def measure_worker(worker: WorkerRecords) -> WorkerMeasurement:
    """Steady-state img/s of one worker from its step records."""
    steps = worker.steps
    if len(steps) < 2:
        raise MeasurementError(f"worker {worker.name} recorded {len(steps)} step(s); need at least 2")
    total = tuple(float(s["total_s"]) for s in steps)
    bad = next((i for i, t in enumerate(total) if not (math.isfinite(t) and t >= MIN_STEP_S)), None)
    if bad is not None:
        raise MeasurementError(
            f"worker {worker.name}: step {bad} took {total[bad]!r} s; a training step takes at "
            f"least {MIN_STEP_S:g} s, so these records are no measurement"
        )
    split = all("compute_s" in s and "sync_s" in s for s in steps)
    compute = tuple(float(s["compute_s"]) for s in steps) if split else None
    sync = tuple(float(s["sync_s"]) for s in steps) if split else None
    timing = str(worker.start.get("timing") or ("breakdown" if split else "overlapped"))
    batch = int(steps[0].get("images") or worker.start.get("batch_size") or 0)
    if batch <= 0:
        raise MeasurementError(f"worker {worker.name}: records do not say the batch size")
    steady = detect_steady_state(total)
    seconds = sum(total[i] for i in steady.steady_steps)
    # a record is one step, or a window of steps (sync_every): its own image count
    images = [int(s.get("images") or batch) for s in steps]
    img_per_sec = sum(images[i] for i in steady.steady_steps) / seconds
    if not img_per_sec <= MAX_IMG_PER_SEC:
        raise MeasurementError(
            f"worker {worker.name}: {img_per_sec:.4g} img/s is more than the {MAX_IMG_PER_SEC:g} "
            "img/s that any training reaches, so these records are no measurement"
        )
    return WorkerMeasurement(worker.name, img_per_sec, steady, total, compute, sync, batch, timing)


def measure(output: RunOutput) -> Measurement:
    """Aggregate measurement of one run (sum of per-worker steady-state img/s)."""
    if not output.workers:
        raise MeasurementError("the run has no worker records")
    workers = tuple(measure_worker(w) for w in output.workers)
    n = len(workers)
    if not sum(w.img_per_sec for w in workers) <= MAX_IMG_PER_SEC:
        raise MeasurementError(
            f"the run's {sum(w.img_per_sec for w in workers):.4g} img/s is more than the "
            f"{MAX_IMG_PER_SEC:g} img/s that any training reaches, so it is no measurement"
        )

    def mean_over_workers(series: str) -> "float | None":
        values = [w.mean_of(getattr(w, series)) for w in workers]
        found = [v for v in values if v is not None]
        return None if len(found) < len(values) else sum(found) / n

    return Measurement(
        img_per_sec=sum(w.img_per_sec for w in workers),
        workers=workers,
        compute_s=mean_over_workers("compute_seconds"),
        sync_s=mean_over_workers("sync_seconds"),
        step_s=sum(w.steady_mean(w.step_seconds) for w in workers) / n,
        timing=workers[0].timing,
        bringup_s=output.bringup_s,
        teardown_s=output.teardown_s,
        wall_s=output.wall_s,
        breakdown=run_breakdown(output.workers, output.comm),
    )
