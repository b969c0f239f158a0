"""What the tolerance means: the one verdict rule of both gates, on two intervals of the change.

The tolerance ``T`` names the slowdown that must fail. A drop of ``T`` or more
should fail, one of ``T/2`` or less should pass, and what lies in between may
go either way (an indifference zone, as in Wald's sequential test between two
points). Each verdict is read off two intervals around the measured change
(the log of the throughput ratio):

- the *noise interval*, at the ``confidence`` setting (99%): does the change
  exceed noise at all? Unchanged code fails at most ``(1 - confidence) / 2``
  of the time (0.5%), whatever the tolerance;
- the *tolerance interval*, one-sided :data:`TOLERANCE_LEVEL` (10%) at each
  end (an 80% interval): where does the change lie against the tolerance?

The verdicts:

- ``regression``: the noise interval lies below no change and the tolerance
  interval below a drop of ``T/2``: a drop beyond noise and beyond half the
  tolerance. A drop of exactly ``T/2`` fails at most 10% of the time.
- ``improvement``: mirrored on the log scale: the noise interval above no
  change and the tolerance interval above a gain of ``1 / (1 - T/2) - 1``.
- ``ok``: the tolerance interval lies above a drop of ``T``: any drop is
  smaller than the tolerance. A drop of exactly ``T`` passes at most 10% of
  the time.
- ``inconclusive``: none of these: the data cannot tell yet (never a pass).

Both bounds hold for any noise level: each is a one-sided t test at its level
(over all looks, in the base-vs-head gate). How often a drop of ``T`` is
*caught*, rather than left inconclusive, depends on the noise and the number
of runs; docs/method.md gives the measured and simulated curves.
Pure standard-library Python.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["HALF", "TOLERANCE_LEVEL", "Bounds", "decide", "meaning", "reason", "rule_text"]

#: One-sided level of each check against the tolerance (the tolerance interval is 80% two-sided):
#: at most this share of drops of half the tolerance fail, and of drops of the tolerance pass.
TOLERANCE_LEVEL = 0.10
#: The drop that must pass, as a share of the tolerance (the lower end of the indifference zone).
HALF = 0.5


@dataclass(frozen=True)
class Bounds:
    """The log-ratio limits of a tolerance ``T``: ``drop`` = log(1 - T), ``half`` = log(1 - T/2), ``gain`` = -half."""

    tolerance: float

    def __post_init__(self) -> None:
        if not 0.0 <= float(self.tolerance) < 1.0:
            raise ValueError(f"tolerance is {self.tolerance!r}, expected 0 <= tolerance < 1 (0.1 = 10%)")

    @property
    def drop(self) -> float:
        """log(1 - T): a drop of the tolerance."""
        return math.log1p(-float(self.tolerance))

    @property
    def half(self) -> float:
        """log(1 - T/2): a drop of half the tolerance."""
        return math.log1p(-HALF * float(self.tolerance))

    @property
    def gain(self) -> float:
        """-log(1 - T/2): the gain that mirrors the half-tolerance drop on the log scale."""
        return -self.half

    @property
    def half_pct(self) -> float:
        """The half-tolerance drop in percent (5 for a tolerance of 10%)."""
        return 100.0 * HALF * float(self.tolerance)

    @property
    def gain_pct(self) -> float:
        """The gain that mirrors it, in percent (5.26 for a tolerance of 10%)."""
        return 100.0 * math.expm1(self.gain)


def decide(noise: "tuple[float, float]", tol: "tuple[float, float]", tolerance: float) -> "tuple[str, bool]":
    """``(verdict, decided)`` from the noise interval and the tolerance interval (log ratios, low and high).

    ``decided`` is False only for ``inconclusive``.
    """
    b = Bounds(tolerance)
    (n_low, n_high), (t_low, t_high) = noise, tol
    if n_high < 0.0 and t_high < b.half:
        return "regression", True
    if n_low > 0.0 and t_low > b.gain:
        return "improvement", True
    if t_low > b.drop:
        return "ok", True
    return "inconclusive", False


def rule_text(tolerance: float, confidence: float) -> str:
    """The rule in words, with the figures of ``tolerance`` and ``confidence`` (for ``method`` fields)."""
    b = Bounds(tolerance)
    noise = f"{confidence:.0%}"
    level = f"{1.0 - 2.0 * TOLERANCE_LEVEL:.0%}"
    return (
        f"regression iff the {noise} interval lies below no change and the {level} interval below "
        f"-{b.half_pct:.3g}% (half the tolerance {tolerance:.1%}); improvement iff the {noise} interval lies "
        f"above no change and the {level} interval above +{b.gain_pct:.3g}%; ok iff the {level} interval lies "
        f"above -{100 * tolerance:.3g}%; else inconclusive"
    )


def reason(verdict: str, tolerance: float, confidence: float) -> str:
    """Why ``verdict`` was reached, in the rule's words with its figures (the verdict lines end with it)."""
    b = Bounds(tolerance)
    level = f"{1.0 - 2.0 * TOLERANCE_LEVEL:.0%}"
    if verdict == "regression":
        return (
            f"a drop beyond noise ({confidence:.0%} interval below no change) and beyond half the tolerance "
            f"({level} interval below -{b.half_pct:.3g}%)"
        )
    if verdict == "improvement":
        return (
            f"a gain beyond noise ({confidence:.0%} interval above no change) and beyond +{b.gain_pct:.3g}% "
            f"({level} interval above it)"
        )
    if verdict == "ok":
        return f"any drop is smaller than the tolerance ({level} interval above -{100 * tolerance:.3g}%)"
    return (
        f"the data cannot tell yet: the {level} interval reaches below -{100 * tolerance:.3g}% (a drop of the "
        f"tolerance), and no drop beyond -{b.half_pct:.3g}% is shown beyond noise"
    )


def meaning(tolerance: float) -> str:
    """What a tolerance means, in one phrase (``tolerance -10%: a drop of 10% fails, of 5% or less passes``)."""
    b = Bounds(tolerance)
    pct = f"{100 * tolerance:.3g}"
    return f"tolerance -{pct}% (a drop of {pct}% fails, of {b.half_pct:.3g}% or less passes)"
