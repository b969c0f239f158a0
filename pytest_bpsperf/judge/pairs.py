"""Base-vs-head jobs: pairs of runs in one session, and their verdict.

With ``base`` set, a job (test, trick, topology, workload) is a sequence of
*pairs*: one run of the base arm and one of the head arm, back to back, the
order alternating from pair to pair (A B, B A, ...) from a start drawn from
the session's seed. :class:`PairedJob` adds pairs while its verdict is not
decided, up to ``max_pairs``, and :class:`PairedVerdict` is a pure function of
the pairs' ratios (:func:`pytest_bpsperf.stats.sequential.paired_compare`).

A failed base run drops its pair; a head run that fails where the base run of
its pair did not is a failure of the test (never "slower"); a pair where both
failed is dropped. Plain Python, like :mod:`.job`.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ..config.arms import BASE, HEAD
from ..runs.spec import RunSpec
from ..stats import rule, summarize
from ..stats.sequential import PairedComparison, PairRuns, paired_compare
from .breakdown import breakdown_view, change_phrase, combine
from .job import RunResult
from .verdict import INCONCLUSIVE, REGRESSION, VerdictSettings

__all__ = ["FOREIGN", "INCONCLUSIVE", "Pair", "PairedJob", "PairedVerdict", "decide_pairs", "first_arm", "pair_runs"]

#: how a pair dropped for foreign load says so (``dropped`` starts with it)
FOREIGN = "foreign load differed"


def first_arm(seed: int, key: str, index: int) -> str:
    """Which arm runs first in pair ``index`` of job ``key``: a seeded start, then alternating."""
    start = random.Random(f"{seed}:{key}").randrange(2)
    return (BASE, HEAD)[(start + index) % 2]


@dataclass
class Pair:
    """One base run and one head run of a job, in the order they ran; ``dropped`` says why it is left out."""

    index: int
    first: str
    base: "RunResult | None" = None
    head: "RunResult | None" = None
    dropped: "str | None" = None

    @property
    def order(self) -> "tuple[str, str]":
        return (BASE, HEAD) if self.first == BASE else (HEAD, BASE)

    @property
    def valid(self) -> bool:
        return self.dropped is None and self.base is not None and self.head is not None

    @property
    def log_ratio(self) -> float:
        """log(head img/s / base img/s)."""
        return math.log(self.head.img_per_sec / self.base.img_per_sec)  # type: ignore[union-attr]

    def foreign(self, arm: str) -> "float | None":
        """Cores that processes outside the roles of ``arm``'s run used on its nodes while it was timed."""
        run = self.base if arm == BASE else self.head
        return run.foreign_cores if run is not None else None

    def foreign_gap(self) -> "float | None":
        """How much more foreign load one run of the pair saw than the other (cores), None unless both say."""
        a, b = self.foreign(BASE), self.foreign(HEAD)
        return abs(a - b) if a is not None and b is not None else None

    def as_dict(self) -> dict:
        """A row of the per-pair table (JSON, Markdown)."""
        row: dict = {
            "pair": self.index + 1,
            "order": "-".join(self.order),
            "base_img_per_sec": self.base.img_per_sec if self.base is not None else None,
            "head_img_per_sec": self.head.img_per_sec if self.head is not None else None,
            "ratio": math.exp(self.log_ratio) if self.valid else None,
        }
        for arm in (BASE, HEAD):
            cores = self.foreign(arm)
            if cores is not None:
                row[f"{arm}_foreign_cores"] = round(cores, 3)
        for name, run in ((BASE, self.base), (HEAD, self.head)):  # where each run's step time went
            found = run.measurement.breakdown if run is not None else None
            if found is not None:
                row[f"{name}_breakdown"] = found.as_dict()
        if self.dropped is not None:
            row["dropped"] = self.dropped
        return row


@dataclass(frozen=True)
class PairedVerdict:
    """The outcome of one base-vs-head job: its status, the pairs it used and the interval of their ratio."""

    status: str
    nodeid: str
    test: str
    trick: str
    profile_id: str
    key: str
    tolerance: float
    comparison: PairedComparison
    pairs: "tuple[Mapping[str, Any], ...]" = ()
    arms: "Mapping[str, Mapping[str, Any]]" = field(default_factory=dict, hash=False)
    aa: bool = False  # both arms resolved to the same commit and interpreter
    note: str = ""
    kind: str = "pairs"
    #: where the step time went on each side: ``{"base": ..., "head": ...}`` (medians over the pairs used)
    breakdown: "Mapping[str, Any]" = field(default_factory=dict, hash=False)

    @property
    def samples(self) -> tuple:
        """Head img/s of the pairs used (what ``measured`` summarizes)."""
        return tuple(float(p["head_img_per_sec"]) for p in self.pairs if p.get("ratio") is not None)

    @property
    def base_samples(self) -> tuple:
        return tuple(float(p["base_img_per_sec"]) for p in self.pairs if p.get("ratio") is not None)

    @property
    def runs(self) -> int:
        return self.comparison.pairs

    @property
    def measured(self) -> float:
        """Median head img/s over the pairs used."""
        return summarize(self.samples).median if self.samples else float("nan")

    @property
    def baseline_median(self) -> "float | None":
        """Median base img/s over the pairs used (the reference, in the reports' columns)."""
        return summarize(self.base_samples).median if self.base_samples else None

    @property
    def base_ref(self) -> str:
        base = self.arms.get(BASE, {})
        commit = base.get("commit")
        ref = str(base.get("ref") or "")
        return f"{ref} = {str(commit)[:12]}" if commit and ref else (str(commit)[:12] if commit else ref or "base")

    def figures(self) -> str:
        """Head against base against tolerance in one phrase; why; how many pairs and looks."""
        c = self.comparison
        n = c.pairs
        text = (
            f"head {self.measured:.1f} img/s vs base {self.baseline_median or float('nan'):.1f} img/s "
            f"(medians of {n} pair{'s' if n != 1 else ''}, base {self.base_ref}): "
        )
        if c.ci_low is None or c.ci_high is None or c.tol_low is None or c.tol_high is None:
            text += f"{c.change_pct:+.1f}%, no interval before {c.first_look} pairs, {rule.meaning(self.tolerance)}"
        else:
            level = f"{1 - 2 * rule.TOLERANCE_LEVEL:.0%}"
            text += (
                f"{c.change_pct:+.1f}% ({c.confidence:.0%} interval over all looks {100 * (c.ci_low - 1):+.1f}% "
                f"to {100 * (c.ci_high - 1):+.1f}%, {level} {100 * (c.tol_low - 1):+.1f}% to "
                f"{100 * (c.tol_high - 1):+.1f}%), {rule.meaning(self.tolerance)}: "
                f"{rule.reason(self.status, self.tolerance, c.confidence)}"
            )
        text += f"; verdict after {n} pair{'s' if n != 1 else ''}, {c.looks} look{'s' if c.looks != 1 else ''}"
        failed = sum(1 for p in self.pairs if p.get("dropped") and not str(p["dropped"]).startswith(FOREIGN))
        foreign = sum(1 for p in self.pairs if str(p.get("dropped") or "").startswith(FOREIGN))
        if failed:
            text += f" ({failed} pair{'s' if failed != 1 else ''} dropped: a base run failed)"
        if foreign:
            text += (
                f" ({foreign} pair{'s' if foreign != 1 else ''} run again: {'their' if foreign != 1 else 'its'} "
                "two runs saw different foreign load)"
            )
        if self.status == INCONCLUSIVE and n >= c.last_look:
            text += f" (inconclusive after {c.last_look} pairs, the most max_pairs allows)"
        if self.aa:
            text += "; A/A run: both arms are the same commit and interpreter"
        where = change_phrase(self.breakdown, c.change_pct) if self.status == REGRESSION else ""
        if where:
            text += f"; {where}"
        if self.note:
            text += f"; {self.note}"
        return text

    def message(self, **_ignored: str) -> str:
        """The text for a failure, a skip or a report line."""
        return (
            f"{self.nodeid} [profile {self.profile_id}, trick {self.trick}, base vs head]: "
            f"{self.status.upper()}: {self.figures()}"
        )

    def as_dict(self) -> dict:
        """JSON view (also the JUnit properties)."""
        c = self.comparison
        return {
            "kind": "pairs",
            "status": self.status,
            "profile": self.profile_id,
            "key": self.key,
            "tolerance": self.tolerance,
            "measured_img_per_sec": self.measured,
            "base_img_per_sec": self.baseline_median,
            "change_pct": c.change_pct,
            "ratio": c.ratio,
            "ci_low": c.ci_low,
            "ci_high": c.ci_high,
            "pairs": c.pairs,
            "looks": c.looks,
            "confidence": c.confidence,
            "decided": c.decided,
            "aa": self.aa,
            "base": self.base_ref,
            "comparison": c.as_dict(),
            "pair_table": [dict(p) for p in self.pairs],
            "note": self.note,
            "breakdown": breakdown_view(self.breakdown),
        }


def pair_runs(pairs: Sequence[Mapping[str, Any]]) -> "list[PairRuns]":
    """The valid rows of a pair table (rows of :meth:`Pair.as_dict`) as the estimators take them:
    each pair's place in the job (dropped pairs keep theirs), both arms' log img/s and their order."""
    out = []
    for k, p in enumerate(pairs):
        if p.get("ratio") is None or p.get("dropped"):
            continue
        index = int(p.get("pair") or k + 1) - 1
        out.append(
            PairRuns(
                index,
                math.log(float(p["base_img_per_sec"])),
                math.log(float(p["head_img_per_sec"])),
                str(p.get("order", "base-head")).startswith(BASE),
            )
        )
    return out


def decide_pairs(
    *,
    nodeid: str,
    test: str,
    trick: str,
    profile_id: str,
    key: str,
    pairs: Sequence[Mapping[str, Any]],
    tolerance: float,
    confidence: float,
    first_look: int,
    max_pairs: int,
    arms: "Mapping[str, Mapping[str, Any]] | None" = None,
    aa: bool = False,
    note: str = "",
) -> PairedVerdict:
    """The verdict of a job from its pair table (rows of :meth:`Pair.as_dict`): a pure function.

    Rows without a ratio (dropped pairs) are left out. An undecided verdict is
    ``inconclusive``: the job takes another pair while it may, and it is final
    when the job stops. The offline command calls this with the table of a
    results file, and so decides as the plugin did.
    """
    c = paired_compare(
        pair_runs(pairs), tolerance=tolerance, confidence=confidence, first_look=first_look, last_look=max_pairs
    )
    used = [p for p in pairs if p.get("ratio") is not None and not p.get("dropped")]
    sides = {name: combine(p.get(f"{name}_breakdown") for p in used) for name in (BASE, HEAD)}
    return PairedVerdict(
        status=c.verdict,
        nodeid=nodeid,
        test=test,
        trick=trick,
        profile_id=profile_id,
        key=key,
        tolerance=tolerance,
        comparison=c,
        pairs=tuple(dict(p) for p in pairs),
        arms=dict(arms or {}),
        aa=aa,
        note=note,
        breakdown={k: v.as_dict() for k, v in sides.items() if v is not None},
    )


#: ``run_pair(spec, index, first)``: run pair ``index`` of the job (``first`` arm first); the pair.
PairRunner = Callable[[RunSpec, int, str], Pair]
#: Called with the job, the head run that asked, and the verdict (None while repeats are pending).
PairCallback = Callable[["PairedJob", "RunResult | None", "PairedVerdict | None"], None]


class PairedJob:
    """The pairs of one configuration; decides its verdict, running pairs until it is decided.

    The job's first ``repeats`` pairs are the test's parametrized items
    (interleaved with other tricks); then it adds pairs while the verdict is
    undecided and it has fewer than ``max_pairs`` valid ones. A dropped pair
    does not count: at most :attr:`MAX_DROPPED` pairs of failed base runs and
    :attr:`MAX_FOREIGN` pairs of unequal foreign load are replaced.
    """

    #: dropped pairs (failed base runs) a job replaces before it stops
    MAX_DROPPED = 2
    #: pairs run again for unequal foreign load, at most, per job (later ones are kept and said)
    MAX_FOREIGN = 3

    def __init__(
        self,
        key: str,
        *,
        profile_id: str,
        seed: int,
        run_pair: "PairRunner | None" = None,
        arms: "Mapping[str, Mapping[str, Any]] | None" = None,
        aa: bool = False,
        on_verdict: "PairCallback | None" = None,
        say: "Callable[[str], None] | None" = None,
    ) -> None:
        self.key = key
        #: what the pair order is drawn from (fixed: ``key`` becomes the key of the backend that ran)
        self.order_key = key
        self.profile_id = profile_id
        self.seed = seed
        self.pairs: "list[Pair]" = []
        self.verdict: "PairedVerdict | None" = None
        self.arms = dict(arms or {})
        self.aa = aa
        self._run_pair = run_pair
        self._on_verdict = on_verdict
        self._say = say or (lambda _message: None)
        self.adaptive_pairs = 0
        #: pairs kept although their runs' foreign load differed (the job ran out of re-runs)
        self.foreign_kept = 0

    def first_arm(self, index: int) -> str:
        """Which arm runs first in pair ``index`` of this job."""
        return first_arm(self.seed, self.order_key, index)

    def add(self, pair: Pair, *, foreign_limit: "float | None" = None) -> Pair:
        """Make ``pair`` one of this job's pairs (its head run then belongs to this job).

        With ``foreign_limit`` (cores), a valid pair whose runs' foreign load differs by more is
        dropped, to be run again, while the job has re-runs left (:attr:`MAX_FOREIGN`).
        """
        for run in (pair.base, pair.head):
            if run is not None:
                run.job = self  # type: ignore[assignment]
        gap = pair.foreign_gap()
        if pair.valid and foreign_limit is not None and gap is not None and gap > foreign_limit:
            if self.foreign_dropped < self.MAX_FOREIGN:
                pair.dropped = (
                    f"{FOREIGN}: base {pair.foreign(BASE):.2f}, head {pair.foreign(HEAD):.2f} cores of "
                    f"other processes (more than {foreign_limit:g} apart)"
                )
            else:
                self.foreign_kept += 1
        self.pairs.append(pair)
        return pair

    @property
    def runs(self) -> "list[RunResult]":
        """The head runs of the job's pairs (the job's measurements of the code under test)."""
        return [p.head for p in self.pairs if p.head is not None]

    @property
    def samples(self) -> "list[float]":
        return [r.img_per_sec for r in self.runs]

    @property
    def valid_pairs(self) -> int:
        return sum(1 for p in self.pairs if p.valid)

    @property
    def foreign_dropped(self) -> int:
        """Pairs dropped (and run again) because their runs saw different foreign load."""
        return sum(1 for p in self.pairs if (p.dropped or "").startswith(FOREIGN))

    @property
    def dropped(self) -> int:
        """Pairs dropped because a base run failed."""
        return sum(1 for p in self.pairs if p.dropped is not None and not p.dropped.startswith(FOREIGN))

    def decide(self, spec: RunSpec) -> PairedVerdict:
        """The verdict over every pair so far (a pure function of the pairs and the settings)."""
        s = VerdictSettings.of(spec.settings)
        notes = []
        if self.dropped > self.MAX_DROPPED:
            notes.append(f"stopped after {self.dropped} failed base runs (see the failures)")
        if self.foreign_kept:
            notes.append(
                f"{self.foreign_kept} pair{'s' if self.foreign_kept != 1 else ''} kept although "
                f"{'their' if self.foreign_kept != 1 else 'its'} runs saw different foreign load "
                f"(after {self.MAX_FOREIGN} re-runs)"
            )
        return decide_pairs(
            nodeid=spec.nodeid,
            test=spec.test,
            trick=spec.trick.name,
            profile_id=self.profile_id,
            key=self.key,
            pairs=[p.as_dict() for p in self.pairs],
            tolerance=s.tolerance,
            confidence=s.confidence,
            first_look=s.first_look,
            max_pairs=s.max_pairs,
            arms=self.arms,
            aa=self.aa,
            note="; ".join(notes),
        )

    def progress(self, verdict: PairedVerdict, confidence: float, max_pairs: int) -> str:
        """Why the job takes another pair, and which of at most how many valid ones it is."""
        c = verdict.comparison
        valid = self.valid_pairs
        if valid >= c.first_look:
            why = f"not decided at {confidence:.0%}"
        else:
            why = f"{c.first_look} pairs before the first look"
        again = []
        if self.dropped:
            again.append(f"{self.dropped} dropped for a failed base run")
        if self.foreign_dropped:
            again.append(f"{self.foreign_dropped} run again for foreign load")
        extra = f" ({', '.join(again)})" if again else ""
        return f"{verdict.figures()}; {why}: pair {valid + 1} of at most {max_pairs}{extra}"

    def assert_within_baseline(self, run: RunResult) -> None:
        """Decide once every repeat ran; add pairs until decided; report the verdict."""
        settings = run.spec.settings
        if run.spec.repeat + 1 < settings.repeats:
            self._report(run, None)
            return
        verdict = self.decide(run.spec)
        while (
            self._run_pair is not None
            and not verdict.comparison.decided
            and self.valid_pairs < settings.max_pairs
            and self.dropped <= self.MAX_DROPPED
        ):
            index = len(self.pairs)
            self.adaptive_pairs += 1
            self._say(f"{run.spec.nodeid}: {self.progress(verdict, settings.confidence, settings.max_pairs)}")
            self._run_pair(run.spec, index, self.first_arm(index))
            verdict = self.decide(run.spec)
        self.verdict = verdict
        self._report(run, verdict)

    def _report(self, run: RunResult, verdict: "PairedVerdict | None") -> None:
        if self._on_verdict is not None:
            self._on_verdict(self, run, verdict)
        elif verdict is not None and verdict.status == REGRESSION:
            raise AssertionError(verdict.message())
