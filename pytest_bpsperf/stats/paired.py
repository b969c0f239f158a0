"""Base against head in one session: a sequential paired t test on log throughput ratios.

Each pair is one run of the base arm and one of the head arm, back to back in
one session, in alternating order; its statistic is ``d = log(head img/s /
base img/s)``. Whatever the machine's speed of the hour, both runs of a pair
share it, so the session effect that limits the stored-baseline gate cancels
(the design of asv ``continuous`` and Chromium's Pinpoint). The pairs of one
job are taken as independent draws of ``d ~ N(delta, sigma_d^2)``.

The job looks at the data after every pair from ``first_look`` on, and stops
as soon as the verdict is decided. Looking repeatedly raises the chance of a
false alarm, so every look uses the same nominal one-sided level ``alpha'``
(a repeated significance test, Pocock 1977; Armitage, McPherson and Rowe
1969), chosen so that the chance of crossing the lower boundary at *any*
look, when nothing changed, is ``(1 - confidence) / 2``. The t statistics of
the looks do not depend on ``sigma_d`` under the null, so ``alpha'`` depends
only on the looks and the confidence: :func:`look_level` finds it by
simulation (seeded, so every session of a design gets the same level, and
taken a little below the simulated quantile so that its Monte Carlo error
errs on the safe side). Stopping early for an ``ok`` only removes chances to
cross, so the false-alarm rate stays at or below the nominal one.

The interval at each look is the repeated confidence interval (Jennison and
Turnbull 1984) with that per-look level; the verdict reads it with the same
words and tolerance rule as the stored-baseline gate:
``regression`` when it lies below no change and reaches a drop of the
tolerance, ``improvement`` symmetrically, ``ok`` when it shows any drop to
be smaller than the tolerance, and ``inconclusive`` when the last look still
holds both no change and a drop of the tolerance. Pure standard-library
Python.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from .tdist import t_cdf, t_quantile

__all__ = ["MIN_PAIRS", "PairedComparison", "look_level", "paired_compare"]

#: The earliest look: two pairs leave one degree of freedom, whose t quantile makes any
#: look at them useless; three is the first that large slowdowns can decide.
MIN_PAIRS = 3
#: Simulated null sequences behind :func:`look_level` (seeded: deterministic).
_SIMULATIONS = 50_000
_SEED = 20261201


@lru_cache(maxsize=64)
def look_level(first_look: int, last_look: int, alpha: float) -> float:
    """Per-look one-sided level ``alpha'`` of a repeated t test with looks ``first_look..last_look``.

    Under the null (no change, normal pair differences of any spread), the
    chance that ``T_n <= -t_{1-alpha'}(n - 1)`` at one look or more is
    ``alpha`` (one-sided). Found by simulating 50,000 null sequences: the
    level is the quantile of the smallest per-look p value at
    ``alpha * (1 - 2 / sqrt(alpha * 50000))``, two Monte Carlo standard
    errors below ``alpha``, so that the achieved rate does not exceed it.
    With one look this is ``alpha`` itself (the fixed-sample t test).

    Parameters
    ----------
    first_look, last_look:
        pairs at the first and the last look (``2 <= first_look <= last_look``).
    alpha:
        one-sided false-alarm rate over all looks (``0 < alpha < 0.5``).
    """
    if not 2 <= first_look <= last_look:
        raise ValueError(f"looks {first_look}..{last_look}: expected 2 <= first_look <= last_look")
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha is {alpha!r}, expected 0 < alpha < 0.5")
    if first_look == last_look:
        return alpha
    rng = random.Random(_SEED)
    # p values above this never matter: the level is at most alpha (< 0.5), and a t
    # statistic above the normal quantile of alpha has a p value above alpha at any dof.
    skip = -_normal_quantile_upper(alpha)
    smallest = []
    for _ in range(_SIMULATIONS):
        s1 = s2 = 0.0
        best = 1.0
        for n in range(1, last_look + 1):
            z = rng.gauss(0.0, 1.0)
            s1 += z
            s2 += z * z
            if n < first_look:
                continue
            var = (s2 - s1 * s1 / n) / (n - 1)
            if var <= 0.0:
                continue
            t = (s1 / n) / math.sqrt(var / n)
            if t < skip:
                best = min(best, t_cdf(t, n - 1))
        smallest.append(best)
    smallest.sort()
    target = alpha * (1.0 - 2.0 / math.sqrt(alpha * _SIMULATIONS))
    return min(alpha, smallest[max(0, int(target * _SIMULATIONS) - 1)])


def _normal_quantile_upper(alpha: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(1.0 - alpha)


@dataclass(frozen=True)
class PairedComparison:
    """The decision of a job of pairs at its latest look.

    ``ratio`` is head over base throughput (the geometric mean of the pair
    ratios), ``ci_low``/``ci_high`` its repeated confidence interval at this
    look, ``pairs`` the pairs it used, ``looks`` the looks taken so far
    (including this one), ``last_look`` the pairs of the design's last look.
    ``decided`` is whether the interval settles "a drop of the tolerance or
    not"; a verdict that is not decided at the last look is ``inconclusive``,
    before it the job takes another pair.
    """

    verdict: str
    ratio: float
    change_pct: float
    ci_low: "float | None"  # None before the first look
    ci_high: "float | None"
    pairs: int
    looks: int
    first_look: int
    last_look: int
    tolerance: float
    confidence: float
    look_alpha: float
    sd: float  # SD of the pairs' log ratios
    decided: bool
    method: str

    @property
    def margin_pct(self) -> "float | None":
        """Half-width of the interval, as a drop in percent (the noise margin); None before the first look."""
        if self.ci_low is None or self.ci_high is None:
            return None
        half = (math.log(self.ci_high) - math.log(self.ci_low)) / 2.0
        return -100.0 * math.expm1(-half)

    def as_dict(self) -> dict:
        """JSON view."""
        return {
            "verdict": self.verdict, "ratio": self.ratio, "change_pct": self.change_pct, "ci_low": self.ci_low,
            "ci_high": self.ci_high, "pairs": self.pairs, "looks": self.looks, "first_look": self.first_look,
            "last_look": self.last_look, "tolerance": self.tolerance, "confidence": self.confidence,
            "look_alpha": self.look_alpha, "sd_log_ratio": self.sd, "decided": self.decided,
            "margin_pct": self.margin_pct, "method": self.method,
        }


def paired_compare(log_ratios: Sequence[float], *, tolerance: float, confidence: float,
                   last_look: int, first_look: int = MIN_PAIRS) -> PairedComparison:
    """Decide head against base from the log ratios of the pairs so far.

    Before ``first_look`` pairs (and without two distinct ratios' worth of
    spread) there is no interval: the verdict is ``inconclusive`` and not
    decided, so the job takes another pair. ``last_look`` is the design's
    last look: an undecided verdict there is final (the caller's ``max_pairs``
    setting, so no default here).
    """
    tolerance = float(tolerance)
    if not 0.0 <= tolerance < 1.0:
        raise ValueError(f"tolerance is {tolerance!r}, expected 0 <= tolerance < 1 (0.1 = 10%)")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence is {confidence!r}, expected 0 < confidence < 1")
    xs = [float(x) for x in log_ratios]
    if any(not math.isfinite(x) for x in xs):
        raise ValueError(f"log ratios must be finite numbers, got {xs!r}")
    first_look = max(2, int(first_look))
    last_look = max(first_look, int(last_look))
    alpha = (1.0 - confidence) / 2.0
    level = look_level(first_look, last_look, alpha)
    n = len(xs)
    mean = math.fsum(xs) / n if n else 0.0
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1)) if n >= 2 else 0.0
    drop = math.log1p(-tolerance)
    looks = max(0, min(n, last_look) - first_look + 1)
    method = (f"paired t on log(head/base) per pair; looks after {first_look}..{last_look} pairs, each at one-sided "
              f"level {level:.2g} so that a false alarm over all looks is at most {alpha:.2g} "
              f"(repeated significance test, simulated); regression iff the interval lies below 0 and reaches "
              f"below log({1.0 - tolerance:.4g}) (tolerance {tolerance:.1%}), improvement symmetrically")
    if n < first_look:
        return PairedComparison("inconclusive", math.exp(mean), 100.0 * math.expm1(mean), None, None, n, 0,
                                first_look, last_look, tolerance, confidence, level, sd, False, method)
    half = t_quantile(1.0 - level, n - 1) * sd / math.sqrt(n)
    low, high = mean - half, mean + half
    if high < 0.0 and low < drop:
        verdict = "regression"
    elif low > 0.0 and high > math.log1p(tolerance):
        verdict = "improvement"
    elif low > drop:
        verdict = "ok"
    else:
        verdict = "inconclusive"
    decided = verdict != "inconclusive"
    return PairedComparison(verdict, math.exp(mean), 100.0 * math.expm1(mean), math.exp(low), math.exp(high), n,
                            looks, first_look, last_look, tolerance, confidence, level, sd, decided, method)
