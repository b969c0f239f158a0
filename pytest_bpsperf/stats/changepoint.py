"""Change points of a series: where throughput stepped, as a piecewise-constant fit.

A history gives one value per commit (mean log img/s of that commit's runs).
Noise makes single commits jump about; a change in the code moves the level
for good. :func:`detect_steps` fits the series with constant segments by
exact optimal partitioning (Jackson et al., "An algorithm for optimal
partitioning of data on an interval", IEEE Signal Processing Letters 12,
2005): minimise the sum over segments of squared deviations from the segment
mean plus a penalty per segment. The penalty is ``beta * sigma^2 * log(n)``
(a BIC-like choice) with the noise ``sigma`` estimated robustly from the
differences of neighbouring values (median absolute deviation), so that the
same code yields one segment however noisy the machine, and a step shows up
at the commit that caused it. Steps smaller than ``min_change`` are merged
away: they may be real but are too small to act on.

Plain standard-library Python, O(n^2) in the number of commits (fine for
thousands).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Optional, Sequence

__all__ = ["Segment", "Step", "StepFit", "detect_steps", "noise_sigma"]


@dataclass(frozen=True)
class Segment:
    """Indices ``start`` (inclusive) to ``end`` (exclusive) share ``level`` (the mean of their values)."""

    start: int
    end: int
    level: float


@dataclass(frozen=True)
class Step:
    """A change point: the level moves at index ``index`` from ``before`` to ``after``."""

    index: int
    before: float
    after: float

    @property
    def change_pct(self) -> float:
        """The step as a percentage, for values that are logs (``exp(after - before) - 1``)."""
        return 100.0 * math.expm1(self.after - self.before)


@dataclass(frozen=True)
class StepFit:
    """The fitted segments, the steps between them, and the noise and penalty used."""

    segments: "tuple[Segment, ...]"
    steps: "tuple[Step, ...]"
    sigma: float
    penalty: float

    def level_at(self, index: int) -> float:
        """The fitted level at ``index``."""
        for seg in self.segments:
            if seg.start <= index < seg.end:
                return seg.level
        raise IndexError(f"index {index} is outside the fitted series of {self.segments[-1].end} values")


_MAD_TO_SIGMA = 1.4826  # MAD of a normal distribution times this is its standard deviation


def noise_sigma(values: Sequence[float]) -> float:
    """Robust noise estimate: MAD of neighbour differences, scaled to a standard deviation.

    A difference of two independent values has variance ``2 sigma^2``; steps
    affect only the few differences that straddle them, which the median
    ignores.
    """
    diffs = [b - a for a, b in zip(values, values[1:])]
    if not diffs:
        return 0.0
    med = statistics.median(diffs)
    mad = statistics.median(abs(d - med) for d in diffs)
    return _MAD_TO_SIGMA * mad / math.sqrt(2.0)


def _optimal_partition(values: Sequence[float], penalty: float) -> "list[int]":
    """Segment starts of the penalised least-squares fit (exact dynamic programme)."""
    n = len(values)
    s1 = [0.0] * (n + 1)
    s2 = [0.0] * (n + 1)
    for i, v in enumerate(values):
        s1[i + 1] = s1[i] + v
        s2[i + 1] = s2[i] + v * v

    def cost(i: int, j: int) -> float:  # squared deviations of values[i:j] from their mean
        m = j - i
        total = s1[j] - s1[i]
        return max(0.0, (s2[j] - s2[i]) - total * total / m)

    best = [0.0] * (n + 1)
    last = [0] * (n + 1)
    best[0] = -penalty
    for j in range(1, n + 1):
        best[j], last[j] = min((best[i] + cost(i, j) + penalty, i) for i in range(j))
    starts, j = [], n
    while j > 0:
        starts.append(last[j])
        j = last[j]
    return sorted(starts)


def _segments(values: Sequence[float], starts: Sequence[int]) -> "list[Segment]":
    bounds = list(starts) + [len(values)]
    return [Segment(a, b, math.fsum(values[a:b]) / (b - a)) for a, b in zip(bounds, bounds[1:])]


def detect_steps(
    values: Sequence[float],
    *,
    beta: float = 6.0,
    min_change: float = 0.02,
    sigma: Optional[float] = None,
) -> StepFit:
    """Fit ``values`` (e.g. mean log img/s per commit, oldest first) with constant segments.

    Parameters
    ----------
    values:
        The series; at least one finite number.
    beta:
        Penalty scale; larger finds fewer steps.
    min_change:
        Smallest step kept, in the units of ``values`` (0.02 on logs is about 2%);
        smaller neighbouring segments are merged and refitted.
    sigma:
        Noise of one value, when known (e.g. from repeats); estimated otherwise.

    Returns
    -------
    StepFit
        Segments, the steps between them, the noise and the penalty used.
    """
    xs = [float(v) for v in values]
    if not xs or not all(math.isfinite(v) for v in xs):
        raise ValueError(f"values must be a non-empty sequence of finite numbers, got {list(values)!r}")
    if not beta > 0 or not min_change >= 0:
        raise ValueError(f"beta must be > 0 and min_change >= 0, got beta={beta!r}, min_change={min_change!r}")
    n = len(xs)
    noise = noise_sigma(xs) if sigma is None else float(sigma)
    # A floor so that a perfectly flat stretch does not make every wiggle a step.
    noise = max(noise, min_change / 4.0, 1e-12)
    penalty = beta * noise * noise * math.log(max(n, 2))
    starts = _optimal_partition(xs, penalty)
    segments = _segments(xs, starts)
    while len(segments) > 1:
        gaps = [abs(b.level - a.level) for a, b in zip(segments, segments[1:])]
        smallest = min(range(len(gaps)), key=gaps.__getitem__)
        if gaps[smallest] >= min_change:
            break
        starts = [s.start for k, s in enumerate(segments) if k != smallest + 1]
        segments = _segments(xs, starts)
    steps = tuple(Step(b.start, a.level, b.level) for a, b in zip(segments, segments[1:]))
    return StepFit(segments=tuple(segments), steps=steps, sigma=noise, penalty=penalty)
