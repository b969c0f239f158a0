"""Bisecting a range of commits with the paired gate: which commit made throughput drop, or which range.

A bisect walks positions ``0..N`` of a range (0 is GOOD, N is BAD, in
first-parent order). Each question is one comparison of two commits in pairs
of runs (a base-vs-head session, :mod:`pytest_bpsperf.judge.pairs`), whose
:class:`Outcome` a driver feeds back; :class:`Bisection` only decides what to
ask next, so it is plain Python and tested without sessions.

It keeps one invariant: the comparison of ``lo`` (base) with ``hi`` (head)
said ``regression``. It starts by comparing the ends (GOOD with BAD). Then, at
a midpoint ``m``, it compares ``lo`` with ``m``: a regression moves ``hi`` to
``m``; otherwise it compares ``m`` with ``hi``, and a regression there moves
``lo`` to ``m``. So every narrowing rests on a comparison the gate decided,
and when ``hi`` is ``lo + 1`` the culprit's own comparison against its parent
is the one that put it there (its ratio and interval are the report's). A
comparison that stays ``inconclusive`` is asked once more with more pairs
(``retries``), and then ends the bisect with the range it could not narrow,
never a guess; so does a drop that neither half shows beyond the tolerance
(spread over several commits). A comparison that fails because the new
commit does not import or run skips that commit, as ``git bisect skip``
does: the next midpoint is the nearest commit not skipped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Mapping

__all__ = ["Bisection", "BisectResult", "Comparison", "Outcome", "CULPRIT", "NONE", "RANGE", "ERROR", "exit_status"]

REGRESSION, OK, IMPROVEMENT, INCONCLUSIVE, FAILED = "regression", "ok", "improvement", "inconclusive", "failed"
#: What a bisect ends with (:attr:`BisectResult.kind`).
CULPRIT, NONE, RANGE, ERROR = "culprit", "none", "range", "error"
#: Exit statuses of ``bpsperf bisect``: culprit found, none beyond the tolerance, usage or input error,
#: (3: an internal error, as every bpsperf command), the range could not be narrowed to one commit.
EXIT = {CULPRIT: 0, NONE: 1, ERROR: 2, RANGE: 4}


def exit_status(kind: str) -> int:
    """The exit status of a bisect that ended with ``kind``."""
    return EXIT[kind]


@dataclass(frozen=True)
class Comparison:
    """One question: position ``base`` against position ``head``, why it is asked, which attempt it is."""

    base: int
    head: int
    why: str  # "ends", "lower half", "upper half"
    attempt: int = 1


@dataclass(frozen=True)
class Outcome:
    """What one comparison said: its status, the ratio head/base with its interval, pairs, the breakdown.

    ``status`` is a verdict of the gate, or ``failed`` when the session gave
    none (``reason`` says why, ``broken`` which arm's commit failed: ``head``,
    ``base`` or '' when it cannot tell).
    """

    status: str
    ratio: "float | None" = None
    ci_low: "float | None" = None
    ci_high: "float | None" = None
    pairs: int = 0
    looks: int = 0
    nodeid: str = ""
    breakdown: "Mapping[str, object] | None" = field(default=None, hash=False)
    where: str = ""  # the breakdown in words ("head 23.0% slower: compute +30%, ...")
    reason: str = ""
    broken: str = ""
    seconds: float = 0.0
    results: str = ""  # the session's results file
    max_pairs: int = 0

    @property
    def change_pct(self) -> "float | None":
        """head against base in percent (None without a ratio)."""
        return None if self.ratio is None else 100.0 * (self.ratio - 1.0)

    def figures(self) -> str:
        """``REGRESSION -23.4% (interval -26.0% to -21.1%), 4 pairs`` (or why it failed)."""
        if self.status == FAILED:
            return f"FAILED ({self.reason})"
        text = self.status.upper()
        if self.change_pct is not None:
            text += f" {self.change_pct:+.1f}%"
        if self.ci_low is not None and self.ci_high is not None:
            text += f" (interval {100 * (self.ci_low - 1):+.1f}% to {100 * (self.ci_high - 1):+.1f}%)"
        return text + f", {self.pairs} pair{'s' if self.pairs != 1 else ''}"

    def as_dict(self) -> dict:
        """JSON view."""
        return {
            "status": self.status,
            "ratio": self.ratio,
            "change_pct": self.change_pct,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "pairs": self.pairs,
            "looks": self.looks,
            "nodeid": self.nodeid,
            "breakdown": dict(self.breakdown) if self.breakdown else None,
            "where": self.where,
            "reason": self.reason,
            "broken": self.broken,
            "seconds": self.seconds,
            "results": self.results,
            "max_pairs": self.max_pairs,
        }


@dataclass(frozen=True)
class Step:
    """A comparison that was asked, and its outcome; ``index`` counts midpoints (0: the ends), ``about`` how
    many midpoints the bisect expected in all when this one was picked (``log2`` of the range left)."""

    index: int
    comparison: Comparison
    outcome: Outcome
    about: int = 0


@dataclass(frozen=True)
class BisectResult:
    """How a bisect ended: a culprit, none beyond the tolerance, a range it could not narrow, or an error.

    ``lo``/``hi`` bound the range ``(lo, hi]`` that holds the change (for a
    culprit ``hi`` is the culprit and ``lo`` its parent); ``verdict`` is the
    comparison of ``lo`` with ``hi`` when the gate decided one.
    """

    kind: str
    lo: int
    hi: int
    reason: str
    verdict: "Outcome | None" = None
    skipped: "tuple[int, ...]" = ()

    @property
    def culprit(self) -> "int | None":
        """The culprit's position (None unless one was found)."""
        return self.hi if self.kind == CULPRIT else None


class Bisection:
    """The state of a bisect over positions ``0..n`` (0: GOOD, ``n``: BAD); see the module.

    Ask :meth:`next` for the comparison to run (None once finished), run it,
    give its outcome to :meth:`record`; :attr:`result` says how it ended.
    """

    def __init__(self, n: int, *, retries: int = 1) -> None:
        if n < 1:
            raise ValueError(f"a bisect needs at least one commit after GOOD, got {n}")
        self.n = n
        self.retries = max(0, int(retries))
        self.lo, self.hi = 0, n
        self.skipped: "set[int]" = set()
        self.steps: "list[Step]" = []
        self.result: "BisectResult | None" = None
        self.midpoints = 0
        self._decided: "Outcome | None" = None  # the comparison of lo with hi
        self._pending: "Comparison | None" = Comparison(0, n, "ends")
        self._mid: "int | None" = None
        self._about = self.expected_steps

    @property
    def expected_steps(self) -> int:
        """About how many midpoints the bisect will test in all (``log2`` of the range left, plus those done)."""
        left = self.hi - self.lo
        return self.midpoints + (math.ceil(math.log2(left)) if left > 1 else 0)

    def next(self) -> "Comparison | None":
        """The comparison to run now (None: finished, see :attr:`result`)."""
        return self._pending

    def record(self, comparison: Comparison, outcome: Outcome) -> None:
        """Take the outcome of ``comparison`` (the one :meth:`next` gave) and decide what comes next."""
        if comparison != self._pending:
            raise ValueError(f"{comparison} is not the comparison asked for ({self._pending})")
        index = 0 if comparison.why == "ends" else self.midpoints
        self.steps.append(Step(index, comparison, outcome, self._about))
        self._pending = None
        if outcome.status == INCONCLUSIVE and comparison.attempt <= self.retries:
            self._pending = replace(comparison, attempt=comparison.attempt + 1)  # more pairs
            return
        {"ends": self._after_ends, "lower half": self._after_lower, "upper half": self._after_upper}[comparison.why](
            comparison, outcome
        )

    # -- the rules --------------------------------------------------------------------------------
    def _finish(self, kind: str, lo: int, hi: int, reason: str, verdict: "Outcome | None" = None) -> None:
        inside = tuple(sorted(i for i in self.skipped if lo < i <= hi))
        self.result = BisectResult(kind, lo, hi, reason, verdict, inside)
        self._pending = None

    def _after_ends(self, c: Comparison, o: Outcome) -> None:
        if o.status == REGRESSION:
            self._decided = o
            self._narrow()
        elif o.status in (OK, IMPROVEMENT):
            self._finish(
                NONE, 0, self.n, f"BAD against GOOD is {o.status}: no drop beyond the tolerance in the range", o
            )
        elif o.status == INCONCLUSIVE:
            self._finish(
                RANGE,
                0,
                self.n,
                "BAD against GOOD stays inconclusive with more pairs: the data cannot "
                "tell whether the range holds a drop beyond the tolerance",
                o,
            )
        else:
            self._finish(ERROR, 0, self.n, f"the ends could not be compared: {o.reason}", o)

    def _narrow(self) -> None:
        """The next midpoint between ``lo`` and ``hi`` not skipped, or the end of the bisect."""
        if self.hi - self.lo == 1:
            self._finish(CULPRIT, self.lo, self.hi, "its comparison against its parent is a regression", self._decided)
            return
        candidates = [i for i in range(self.lo + 1, self.hi) if i not in self.skipped]
        if not candidates:
            self._finish(
                RANGE,
                self.lo,
                self.hi,
                "every commit between the last good and the first bad one was "
                "skipped (it does not import or run): one of them or the bad one "
                "is the culprit",
                self._decided,
            )
            return
        middle = (self.lo + self.hi) / 2
        self._about = self.expected_steps  # this midpoint and those after it: log2 of the range left
        self._mid = min(candidates, key=lambda i: (abs(i - middle), i))
        self.midpoints += 1
        self._pending = Comparison(self.lo, self._mid, "lower half")

    def _after_lower(self, c: Comparison, o: Outcome) -> None:
        m = c.head
        if o.status == REGRESSION:
            self.hi, self._decided = m, o
            self._narrow()
        elif o.status in (OK, IMPROVEMENT):
            self._pending = Comparison(m, self.hi, "upper half")
        elif o.status == INCONCLUSIVE:
            self._finish(
                RANGE,
                self.lo,
                self.hi,
                f"the lower half ({self.lo}..{m}) stays inconclusive with more "
                "pairs: the first drop may be in either half",
                self._decided,
            )
        elif o.broken in ("head", ""):
            self.skipped.add(m)  # as git bisect skip: the commit cannot be measured
            self._narrow()
        else:
            self._finish(ERROR, self.lo, self.hi, f"the last good commit failed as the base: {o.reason}", o)

    def _after_upper(self, c: Comparison, o: Outcome) -> None:
        m = c.base
        if o.status == REGRESSION:
            self.lo, self._decided = m, o
            self._narrow()
        elif o.status in (OK, IMPROVEMENT):
            self._finish(
                RANGE,
                self.lo,
                self.hi,
                f"neither half drops beyond the tolerance alone ({self.lo}..{m} "
                f"and {m}..{self.hi} are not regressions): the drop is spread "
                "over more than one commit",
                self._decided,
            )
        elif o.status == INCONCLUSIVE:
            self._finish(
                RANGE,
                m,
                self.hi,
                f"the lower half ({self.lo}..{m}) is no regression and the upper half "
                "stays inconclusive with more pairs",
                self._decided,
            )
        else:
            self._finish(
                RANGE,
                m,
                self.hi,
                f"the lower half ({self.lo}..{m}) is no regression, and the upper half "
                f"could not be compared: {o.reason}",
                self._decided,
            )
