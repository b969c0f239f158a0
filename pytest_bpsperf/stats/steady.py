"""Steady state: which training steps are warm-up and which measure throughput.

Pure standard-library Python (no numpy, no pytest).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Dict, Sequence, Tuple

from .validate import as_floats as _as_floats

# A MAD times this constant estimates the standard deviation of normal data;
# it turns "3 MADs" into the familiar "3 sigma".
_MAD_TO_SIGMA = 1.4826
# The median of |x[i+1] - x[i]| for independent normal steps is
# 0.6745 * sqrt(2) sigma.
_ABS_DIFF_MEDIAN_TO_SIGMA = 0.6745 * math.sqrt(2.0)
# A steady region whose halves differ by less than this is steady enough.
_MIN_DRIFT = 0.05
# Below this relative slowdown a leading step is never called warm-up: even a
# perfectly flat series jitters by a few percent, and a 25% slower step on a
# warm process is unusual, while real warm-up steps are usually 2x-100x slower.
_MIN_WARMUP_THRESHOLD = 0.25


@dataclass(frozen=True)
class SteadyState:
    """Which training steps are warm-up and which measure throughput.

    ``reliable`` is False when the series was too short, never settled, or
    still drifts after the warm-up: the throughput is then reported but should
    not be trusted as a baseline.
    """

    warmup_steps: Tuple[int, ...]
    steady_steps: Tuple[int, ...]
    method: str
    reliable: bool

    def as_dict(self) -> Dict[str, Any]:
        """Return a JSON-ready dict."""
        return {
            "warmup_steps": list(self.warmup_steps),
            "steady_steps": list(self.steady_steps),
            "method": self.method,
            "reliable": self.reliable,
        }


def _robust_sigma(xs: Sequence[float], centre: float) -> float:
    """Noise scale of ``xs`` that neither a few outliers nor a small sample fool.

    The larger of two robust estimates: the scaled MAD, and the scaled median
    step-to-step difference. A MAD of 10-20 values collapses when they happen
    to cluster (or split in two groups); the difference-based one does not,
    so taking the larger keeps the warm-up threshold from becoming too tight.
    """
    mad = statistics.median([abs(x - centre) for x in xs])
    sigma = _MAD_TO_SIGMA * mad
    if len(xs) >= 3:
        diffs = [abs(b - a) for a, b in zip(xs, xs[1:])]
        sigma = max(sigma, statistics.median(diffs) / _ABS_DIFF_MEDIAN_TO_SIGMA)
    return sigma


def detect_steady_state(step_seconds: Sequence[float], *, min_steady: int = 3) -> SteadyState:
    """Split per-step wall times into warm-up and steady-state steps.

    Step 0 is always warm-up (graph build, memory allocation, ps-lite
    connection). The reference step time is the median of the last half of
    steps 1..n-1 and the threshold is ``max(25%, 3 robust sigmas)`` relative
    to it, the robust sigma being the larger of ``1.4826 * MAD`` and the
    scaled median step-to-step difference of that same half. Steady state
    starts at the first run of ``min_steady`` consecutive steps that are all
    within ``reference * (1 + threshold)``; everything before it is warm-up.
    Requiring a run, rather than a single
    fast step, keeps an uneven warm-up (slow, fast, slow) out of the
    measurement, and stopping at the first run keeps a lone slow step later
    on (a GC pause, a straggler) from discarding most of the data.

    At least ``min_steady`` steps are always kept, except that step 0 is
    dropped from series too short for that (it is only kept when it is the
    only step). ``reliable`` is False when fewer than ``min_steady`` steps
    follow step 0, when no run of
    ``min_steady`` settled steps exists (the last ``min_steady`` steps are
    kept), or when the medians of the two halves of the steady region differ
    by more than 5% and more than 4 standard errors (the process is still
    speeding up or slowing down).
    """
    if isinstance(min_steady, bool) or not isinstance(min_steady, int) or min_steady < 1:
        raise ValueError(f"min_steady is {min_steady!r}, expected an integer >= 1")
    times = _as_floats(step_seconds, "step_seconds", positive=True)
    n = len(times)
    if n - 1 < min_steady:
        return _too_short(n, min_steady)

    later = times[1:]
    tail = later[len(later) // 2 :]
    reference = statistics.median(tail)
    sigma = _robust_sigma(tail, reference)
    threshold = max(_MIN_WARMUP_THRESHOLD, 3.0 * sigma / reference)
    bound = reference * (1.0 + threshold)
    start = _first_settled([True] + [t > bound for t in later], min_steady)

    described = (
        f"step 0 plus leading steps slower than {1.0 + threshold:.2f}x the median of the "
        f"last half ({reference:.4g} s; threshold max(25%, 3 robust sigmas)) until "
        f"{min_steady} consecutive settled steps"
    )
    if start is None:
        start = n - min_steady
        return SteadyState(
            warmup_steps=tuple(range(start)),
            steady_steps=tuple(range(start, n)),
            method=f"{described}: never settled, kept the last {min_steady} of {n} steps",
            reliable=False,
        )

    warmup = tuple(range(start))
    steady = tuple(range(start, n))
    note = _drift_note(times[start:], reference)
    return SteadyState(
        warmup_steps=warmup,
        steady_steps=steady,
        method=f"{described}: {len(warmup)} warm-up, {len(steady)} steady{note}",
        reliable=not note,
    )


def _too_short(n: int, min_steady: int) -> SteadyState:
    """A series of ``n`` steps with fewer than ``min_steady`` after step 0: all kept but step 0 (unless alone)."""
    if n == 1:
        return SteadyState(
            warmup_steps=(),
            steady_steps=(0,),
            method="only 1 step: it is kept although it includes warm-up",
            reliable=False,
        )
    return SteadyState(
        warmup_steps=(0,),
        steady_steps=tuple(range(1, n)),
        method=(f"only {n} steps: dropped step 0, kept {n - 1} < min_steady={min_steady}; run more steps"),
        reliable=False,
    )


def _first_settled(slow: "list[bool]", min_steady: int) -> "int | None":
    """The first step from which ``min_steady`` steps in a row are not ``slow`` (step 0 never counts)."""
    for j in range(1, len(slow) - min_steady + 1):
        if not any(slow[j : j + min_steady]):
            return j
    return None


def _drift_note(region: "list[float]", reference: float) -> str:
    """``""`` when the steady ``region`` is flat enough, else a note of how far its two halves' medians drift."""
    half = len(region) // 2
    if half < 2:
        return ""
    first = statistics.median(region[:half])
    last = statistics.median(region[-half:])
    drift = abs(first - last) / reference
    # Noise from step-to-step differences, which a trend barely inflates
    # (a MAD would absorb the trend into the noise and hide it). The
    # standard error of a median of h normal values is 1.2533 sigma /
    # sqrt(h); 4 of those on the difference of two medians keeps pure
    # noise from being called drift, and a drift under 5% is harmless.
    diffs = [abs(b - a) for a, b in zip(region, region[1:])]
    step_sigma = statistics.median(diffs) / _ABS_DIFF_MEDIAN_TO_SIGMA
    limit = max(_MIN_DRIFT, 4.0 * 1.2533 * step_sigma * math.sqrt(2.0 / half) / reference)
    if drift > limit:
        return f"; still drifting ({drift:.0%} between the halves of the steady region)"
    return ""
