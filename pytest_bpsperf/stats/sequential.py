"""Base against head in one session: a sequential test on interleaved runs, with drift modelled.

Each pair is one run of the base arm and one of the head arm, back to back in
one session, in alternating order (A B, B A, ...). Whatever the machine's
speed of the hour, both arms share it, so the session effect that limits the
stored-baseline gate cancels (the design of asv ``continuous`` and Chromium's
Pinpoint).

The estimator (``ancova``, the default) is a least-squares line through
every run's log img/s on its arm and its place in the job's sequence
(analysis of covariance: ``log y = mu + delta * head + beta * slot + e``):
``delta`` is the change, ``beta`` the drift of the machine over the job, which
the alternation alone cancels only on average. It uses all ``2n - 3`` degrees
of freedom of the ``2n`` runs, where the paired t test (``paired``: the mean
of the pairs' log ratios) has ``n - 1``; at the early looks that decide most
jobs, that is what makes the interval narrow. Runs are taken as independent
given the line; the small positive correlation measured within pairs makes
the interval a little wider than needed, never narrower.

The job looks at the data after every pair from ``first_look`` on and stops
as soon as the verdict is decided (:mod:`.rule`). Looking repeatedly raises
the chance of crossing a limit by luck, so every look of a check at one-sided
level ``alpha`` uses the same nominal level ``alpha'`` (a repeated
significance test, Pocock 1977; Armitage, McPherson and Rowe 1969), chosen
so that the chance of crossing at *any* look, at the limit itself, is
``alpha``. The statistics do not depend on the noise level, the drift or the
arm means under that null, so ``alpha'`` depends only on the estimator, the
looks and ``alpha``: :func:`simulated_look_level` finds it by simulation
(seeded, so every session of a design gets the same level, and taken a little
below the simulated quantile so that its Monte Carlo error errs on the safe
side). That takes seconds per design (3.3 s for the default looks on a fast
runner), so the levels of the usual designs ship computed ahead, in
``look_levels.json`` (``scripts/look_levels.py --write``): :func:`look_level`
reads them there and simulates only a design the file lacks.
Stopping early only removes chances to cross, so each bound of :mod:`.rule`
holds over all looks. The intervals at each look are the repeated confidence
intervals (Jennison and Turnbull 1984) at those per-look levels.
Pure standard-library Python.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

from . import rule
from .tdist import t_cdf, t_quantile

__all__ = [
    "ESTIMATORS",
    "LEVELS_FILE",
    "MIN_PAIRS",
    "PairRuns",
    "PairedComparison",
    "computed_levels",
    "estimate",
    "level_key",
    "look_level",
    "paired_compare",
    "simulated_look_level",
]

#: The earliest look: two pairs leave too few degrees of freedom for any look to decide.
MIN_PAIRS = 3
#: ``ancova``: log img/s on arm and run index (the default); ``paired``: the mean of the pairs' log ratios.
ESTIMATORS = ("ancova", "paired")
DEFAULT_ESTIMATOR = "ancova"
#: Simulated null sequences behind :func:`look_level` (seeded: deterministic).
_SIMULATIONS = 50_000
_SEED = 20261201
#: p values above this never matter: no level used is larger (rule.TOLERANCE_LEVEL is the largest).
_P_KEPT = 0.2
#: The levels of the usual designs, computed ahead by :func:`simulated_look_level` (``scripts/look_levels.py``).
LEVELS_FILE = Path(__file__).with_name("look_levels.json")


@dataclass(frozen=True)
class PairRuns:
    """One valid pair, as the estimators see it: its place in the job (0-based, dropped pairs counted),
    the log img/s of each arm, and whether the base arm ran first."""

    index: int
    log_base: float
    log_head: float
    base_first: bool

    @property
    def log_ratio(self) -> float:
        """log(head / base) of the pair."""
        return self.log_head - self.log_base

    def runs(self) -> "list[tuple[float, float, float]]":
        """``(head?, slot, log img/s)`` of its two runs; slot ``2 * index`` ran first."""
        first, second = 2.0 * self.index, 2.0 * self.index + 1.0
        base_slot, head_slot = (first, second) if self.base_first else (second, first)
        return [(0.0, base_slot, self.log_base), (1.0, head_slot, self.log_head)]


@dataclass(frozen=True)
class Estimate:
    """The change ``diff`` (log head/base), its standard error and degrees of freedom; ``sd`` the run noise
    (``ancova``: SD of a run's log img/s around the line; ``paired``: SD of a pair's log ratio)."""

    diff: float
    se: float
    dof: int
    sd: float


def _ancova(pairs: Sequence[PairRuns]) -> "Estimate | None":
    """Least squares of log img/s on [1, head, slot] (Frisch-Waugh: both residualized on [1, slot])."""
    runs = [r for p in pairs for r in p.runs()]
    n = len(runs)
    dof = n - 3
    if dof < 1:
        return None
    mx = math.fsum(x for x, _t, _y in runs) / n
    mt = math.fsum(t for _x, t, _y in runs) / n
    my = math.fsum(y for _x, _t, y in runs) / n
    sxx = math.fsum((x - mx) ** 2 for x, _t, _y in runs)
    stt = math.fsum((t - mt) ** 2 for _x, t, _y in runs)
    syy = math.fsum((y - my) ** 2 for _x, _t, y in runs)
    sxt = math.fsum((x - mx) * (t - mt) for x, t, _y in runs)
    sxy = math.fsum((x - mx) * (y - my) for x, _t, y in runs)
    sty = math.fsum((t - mt) * (y - my) for _x, t, y in runs)
    xx = sxx - sxt * sxt / stt
    if xx <= 0.0:
        return None
    diff = (sxy - sxt * sty / stt) / xx
    rss = max(0.0, syy - sty * sty / stt - diff * diff * xx)
    s2 = rss / dof
    return Estimate(diff, math.sqrt(s2 / xx), dof, math.sqrt(s2))


def _paired(pairs: Sequence[PairRuns]) -> "Estimate | None":
    xs = [p.log_ratio for p in pairs]
    n = len(xs)
    if n < 2:
        return None
    mean = math.fsum(xs) / n
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
    return Estimate(mean, sd / math.sqrt(n), n - 1, sd)


def estimate(pairs: Sequence[PairRuns], estimator: str = DEFAULT_ESTIMATOR) -> "Estimate | None":
    """The change and its standard error from ``pairs`` (None while too few for any spread)."""
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator is {estimator!r}, expected one of {', '.join(ESTIMATORS)}")
    return _ancova(pairs) if estimator == "ancova" else _paired(pairs)


def _null_statistics(estimator: str, first_look: int, last_look: int, rng: random.Random) -> "list[tuple[float, int]]":
    """One null sequence (iid standard normal runs, base first in pair 0, alternating): ``(t, dof)`` per look."""
    out = []
    if estimator == "paired":
        s1 = s2 = 0.0
        for n in range(1, last_look + 1):
            z = rng.gauss(0.0, 1.0) - rng.gauss(0.0, 1.0)
            s1 += z
            s2 += z * z
            if n >= first_look:
                var = (s2 - s1 * s1 / n) / (n - 1)
                out.append(((s1 / n) / math.sqrt(var / n) if var > 0 else 0.0, n - 1))
        return out
    # ancova, incrementally: running sums of x (head), t (slot), y and their products
    sx = st = sy = sxx = stt = syy = sxt = sxy = sty = 0.0
    k = 0
    for n in range(1, last_look + 1):
        base_first = (n - 1) % 2 == 0
        for x in (0.0, 1.0) if base_first else (1.0, 0.0):
            t, y = float(k), rng.gauss(0.0, 1.0)
            k += 1
            sx, st, sy = sx + x, st + t, sy + y
            sxx, stt, syy = sxx + x * x, stt + t * t, syy + y * y
            sxt, sxy, sty = sxt + x * t, sxy + x * y, sty + t * y
        if n < first_look:
            continue
        m = float(k)
        cxx, ctt, cyy = sxx - sx * sx / m, stt - st * st / m, syy - sy * sy / m
        cxt, cxy, cty = sxt - sx * st / m, sxy - sx * sy / m, sty - st * sy / m
        xx = cxx - cxt * cxt / ctt
        diff = (cxy - cxt * cty / ctt) / xx
        dof = k - 3
        rss = max(0.0, cyy - cty * cty / ctt - diff * diff * xx)
        se = math.sqrt(rss / dof / xx)
        out.append((diff / se if se > 0 else 0.0, dof))
    return out


@lru_cache(maxsize=16)
def _smallest_p(estimator: str, first_look: int, last_look: int) -> "tuple[float, ...]":
    """The smallest lower-tail p value over the looks of each simulated null sequence, sorted; those
    above :data:`_P_KEPT` are left out (no level is that large)."""
    rng = random.Random(f"{_SEED}:{estimator}")
    # a t statistic above the normal quantile of _P_KEPT has a p value above it at any dof
    skip = -_normal_quantile_upper(_P_KEPT)
    kept = []
    for _ in range(_SIMULATIONS):
        best = 1.0
        for t, dof in _null_statistics(estimator, first_look, last_look, rng):
            if t < skip:
                best = min(best, t_cdf(t, dof))
        if best <= _P_KEPT:
            kept.append(best)
    return tuple(sorted(kept))


def look_level(first_look: int, last_look: int, alpha: float, estimator: str = DEFAULT_ESTIMATOR) -> float:
    """Per-look one-sided level ``alpha'`` of a repeated test with looks ``first_look..last_look``.

    Under the null (runs iid normal around the arm means and any drift, of any
    spread), the chance that the estimator's t statistic reaches
    ``-t_{1-alpha'}(dof)`` at one look or more is ``alpha``: the level
    :func:`simulated_look_level` finds, read from :data:`LEVELS_FILE` where the
    design is there (the same number: that file is the simulation's output),
    simulated otherwise. With one look this is ``alpha`` itself.

    Parameters
    ----------
    first_look, last_look:
        pairs at the first and the last look (``2 <= first_look <= last_look``).
    alpha:
        one-sided rate of crossing over all looks (``0 < alpha <= 0.2``).
    estimator:
        one of :data:`ESTIMATORS`.
    """
    _check_design(first_look, last_look, alpha, estimator)
    if first_look == last_look:
        return alpha
    known = computed_levels().get(level_key(estimator, first_look, last_look, alpha))
    return known if known is not None else simulated_look_level(first_look, last_look, alpha, estimator)


def simulated_look_level(first_look: int, last_look: int, alpha: float, estimator: str = DEFAULT_ESTIMATOR) -> float:
    """:func:`look_level` by simulating 50,000 null sequences of the estimator (seconds).

    The level is the quantile of the smallest per-look p value at
    ``alpha * (1 - 2 / sqrt(alpha * 50000))``, two Monte Carlo standard
    errors below ``alpha``, so that the achieved rate does not exceed it.
    """
    _check_design(first_look, last_look, alpha, estimator)
    if first_look == last_look:
        return alpha
    smallest = _smallest_p(estimator, first_look, last_look)
    target = alpha * (1.0 - 2.0 / math.sqrt(alpha * _SIMULATIONS))
    index = max(0, int(target * _SIMULATIONS) - 1)
    return min(alpha, smallest[index]) if index < len(smallest) else alpha


def _check_design(first_look: int, last_look: int, alpha: float, estimator: str) -> None:
    if not 2 <= first_look <= last_look:
        raise ValueError(f"looks {first_look}..{last_look}: expected 2 <= first_look <= last_look")
    if not 0.0 < alpha <= _P_KEPT:
        raise ValueError(f"alpha is {alpha!r}, expected 0 < alpha <= {_P_KEPT}")
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator is {estimator!r}, expected one of {', '.join(ESTIMATORS)}")


def level_key(estimator: str, first_look: int, last_look: int, alpha: float) -> str:
    """The key of a design in :data:`LEVELS_FILE`: ``ancova:3:20:0.005`` (alpha to 6 significant digits)."""
    return f"{estimator}:{first_look}:{last_look}:{alpha:.6g}"


def simulation_design() -> "dict[str, object]":
    """What the levels of :data:`LEVELS_FILE` were simulated with; a file of another design is not used."""
    return {"simulations": _SIMULATIONS, "seed": _SEED, "p_kept": _P_KEPT}


@lru_cache(maxsize=1)
def computed_levels() -> Mapping[str, float]:
    """The levels of :data:`LEVELS_FILE` (empty where it is missing, unreadable or of another design)."""
    try:
        doc = json.loads(LEVELS_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(doc, dict) or doc.get("design") != simulation_design():
        return {}
    levels = doc.get("levels")
    return {str(k): float(v) for k, v in levels.items()} if isinstance(levels, dict) else {}


@lru_cache(maxsize=4096)
def _quantile(p: float, dof: int) -> float:
    """t quantile, cached: a job asks for the same few levels and dofs at every look."""
    return t_quantile(p, dof)


def _normal_quantile_upper(alpha: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(1.0 - alpha)


@dataclass(frozen=True)
class PairedComparison:
    """The decision of a job of pairs at its latest look.

    ``ratio`` is head over base throughput (exp of the estimated change);
    ``ci_low``/``ci_high`` its noise interval at ``confidence`` over all looks,
    ``tol_low``/``tol_high`` its tolerance interval (:data:`~.rule.TOLERANCE_LEVEL`
    at each end, over all looks); ``pairs`` the valid pairs it used, ``looks``
    the looks taken so far (including this one), ``last_look`` the pairs of
    the design's last look. ``decided`` is False while the verdict is
    ``inconclusive``: before the last look the job then takes another pair.
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
    look_alpha: float  # per-look level of the noise check
    sd: float  # run noise of the estimator (see Estimate.sd)
    decided: bool
    method: str
    tol_low: "float | None" = None
    tol_high: "float | None" = None
    tolerance_alpha: float = rule.TOLERANCE_LEVEL  # per-look level of the tolerance checks
    estimator: str = DEFAULT_ESTIMATOR

    @property
    def margin_pct(self) -> "float | None":
        """Half-width of the noise interval, as a drop in percent (the noise margin); None before the first look."""
        if self.ci_low is None or self.ci_high is None:
            return None
        half = (math.log(self.ci_high) - math.log(self.ci_low)) / 2.0
        return -100.0 * math.expm1(-half)

    def as_dict(self) -> dict:
        """JSON view."""
        return {
            "verdict": self.verdict,
            "ratio": self.ratio,
            "change_pct": self.change_pct,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "tol_low": self.tol_low,
            "tol_high": self.tol_high,
            "pairs": self.pairs,
            "looks": self.looks,
            "first_look": self.first_look,
            "last_look": self.last_look,
            "tolerance": self.tolerance,
            "confidence": self.confidence,
            "look_alpha": self.look_alpha,
            "tolerance_alpha": self.tolerance_alpha,
            "tolerance_level": rule.TOLERANCE_LEVEL,
            "estimator": self.estimator,
            "sd_log": self.sd,
            "decided": self.decided,
            "margin_pct": self.margin_pct,
            "method": self.method,
        }


def paired_compare(
    pairs: Sequence[PairRuns],
    *,
    tolerance: float,
    confidence: float,
    last_look: int,
    first_look: int = MIN_PAIRS,
    estimator: str = DEFAULT_ESTIMATOR,
) -> PairedComparison:
    """Decide head against base from the valid pairs so far (:mod:`.rule` on repeated intervals).

    Before ``first_look`` pairs (or without any spread yet) there is no
    interval: the verdict is ``inconclusive`` and not decided, so the job takes
    another pair. ``last_look`` is the design's last look (the caller's
    ``max_pairs`` setting, so no default here).
    """
    tolerance = float(tolerance)
    rule.Bounds(tolerance)  # checks it
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence is {confidence!r}, expected 0 < confidence < 1")
    if any(not (math.isfinite(p.log_base) and math.isfinite(p.log_head)) for p in pairs):
        raise ValueError(f"log img/s must be finite numbers, got {list(pairs)!r}")
    first_look = max(2, int(first_look))
    last_look = max(first_look, int(last_look))
    alpha = (1.0 - confidence) / 2.0
    noise_level = look_level(first_look, last_look, alpha, estimator)
    tol_level = look_level(first_look, last_look, rule.TOLERANCE_LEVEL, estimator)
    n = len(pairs)
    looks = max(0, min(n, last_look) - first_look + 1)
    method = (
        f"{'log img/s on arm and run index (ANCOVA)' if estimator == 'ancova' else 'paired t on log(head/base)'}"
        f"; looks after {first_look}..{last_look} pairs, each check at one-sided level {noise_level:.2g} "
        f"(noise) and {tol_level:.2g} (tolerance) so that over all looks they are {alpha:.2g} and "
        f"{rule.TOLERANCE_LEVEL:.2g} (repeated significance test, simulated); " + rule.rule_text(tolerance, confidence)
    )
    est = estimate(pairs, estimator) if n >= first_look else None
    common: "dict[str, Any]" = dict(
        first_look=first_look,
        last_look=last_look,
        tolerance=tolerance,
        confidence=confidence,
        look_alpha=noise_level,
        tolerance_alpha=tol_level,
        estimator=estimator,
        method=method,
    )
    if est is None:
        mean = math.fsum(p.log_ratio for p in pairs) / n if n else 0.0
        return PairedComparison(
            "inconclusive", math.exp(mean), 100.0 * math.expm1(mean), None, None, n, 0, sd=0.0, decided=False, **common
        )
    noise = _quantile(1.0 - noise_level, est.dof) * est.se
    tol = _quantile(1.0 - tol_level, est.dof) * est.se
    verdict, decided = rule.decide((est.diff - noise, est.diff + noise), (est.diff - tol, est.diff + tol), tolerance)
    return PairedComparison(
        verdict,
        math.exp(est.diff),
        100.0 * math.expm1(est.diff),
        math.exp(est.diff - noise),
        math.exp(est.diff + noise),
        n,
        looks,
        sd=est.sd,
        decided=decided,
        tol_low=math.exp(est.diff - tol),
        tol_high=math.exp(est.diff + tol),
        **common,
    )
