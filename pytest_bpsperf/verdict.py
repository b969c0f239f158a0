"""Verdicts: a measurement against the baseline stored for this hardware profile.

``ok``, ``regression`` (the test fails), ``improvement`` (passes; the report
suggests updating) or ``no-baseline`` (skipped unless strict). The decision is
:func:`pytest_bpsperf.stats.compare`: beyond the tolerance *and* beyond the
noise of both the baseline's samples and the new ones.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from .stats import Comparison, compare, summarize

OK, REGRESSION, IMPROVEMENT, NO_BASELINE = "ok", "regression", "improvement", "no-baseline"


@dataclass(frozen=True)
class Verdict:
    """The outcome of one test (one trick) against its baseline."""

    status: str
    nodeid: str
    test: str
    trick: str
    profile_id: str
    key: str
    samples: tuple
    tolerance: float
    comparison: "Comparison | None" = None
    baseline: Mapping[str, object] = field(default_factory=dict, hash=False)

    @property
    def measured(self) -> float:
        """Median img/s of this session's samples."""
        return summarize(self.samples).median

    @property
    def baseline_median(self) -> "float | None":
        """Median img/s of the baseline's samples."""
        samples = self.baseline.get("samples") or []
        return summarize(samples).median if samples else None

    def figures(self) -> str:
        """Measured against baseline against tolerance, in one phrase."""
        if self.comparison is None:
            return f"measured {self.measured:.1f} img/s (n={len(self.samples)}), no baseline"
        c = self.comparison
        return (
            f"measured {self.measured:.1f} img/s (n={len(self.samples)}) vs baseline "
            f"{self.baseline_median:.1f} img/s (n={c.baseline_summary.n}): {c.change_pct:+.1f}%, "
            f"tolerance -{100 * self.tolerance:.0f}%, noise margin ±{c.margin_pct:.1f}%, "
            f"smallest detectable drop {c.min_detectable_change_pct:.1f}%"
        )

    def message(self, *, update_command: str = "", bisect: str = "") -> str:
        """The text for a failure, a skip or a report line."""
        head = f"{self.nodeid} [profile {self.profile_id}, trick {self.trick}]"
        if self.status == NO_BASELINE:
            return f"{head}: no baseline for this test, trick and workload; record one with: {update_command}"
        text = f"{head}: {self.status.upper()}: {self.figures()}"
        if self.status == REGRESSION and bisect:
            text += "\n" + bisect
        if self.status == IMPROVEMENT and update_command:
            text += f"\nconsider updating the baseline: {update_command}"
        return text

    def as_dict(self) -> dict:
        """JSON view (also the JUnit properties)."""
        out = {
            "status": self.status,
            "profile": self.profile_id,
            "key": self.key,
            "samples": list(self.samples),
            "measured_img_per_sec": self.measured,
            "baseline_img_per_sec": self.baseline_median,
            "baseline_commit": self.baseline.get("commit"),
            "baseline_date": self.baseline.get("date"),
            "tolerance": self.tolerance,
        }
        if self.comparison is not None:
            c = self.comparison
            out.update(
                change_pct=c.change_pct,
                margin_pct=c.margin_pct,
                min_detectable_change_pct=c.min_detectable_change_pct,
                ci_low=c.ci_low,
                ci_high=c.ci_high,
                p_value=c.p_value,
                method=c.method,
            )
        return out


def decide(
    *,
    nodeid: str,
    test: str,
    trick: str,
    profile_id: str,
    key: str,
    samples: Sequence[float],
    baseline: "Mapping[str, object] | None",
    tolerance: float,
    confidence: float = 0.95,
) -> Verdict:
    """Compare ``samples`` (img/s per run) with ``baseline`` (a stored entry or None)."""
    common = dict(nodeid=nodeid, test=test, trick=trick, profile_id=profile_id, key=key,
                  samples=tuple(float(s) for s in samples), tolerance=tolerance)
    if not baseline or not baseline.get("samples"):
        return Verdict(status=NO_BASELINE, **common)
    comparison = compare(baseline["samples"], samples, tolerance=tolerance, confidence=confidence)
    return Verdict(status=comparison.verdict, comparison=comparison, baseline=dict(baseline), **common)


def bisect_hint(baseline_commit: "str | None", head: "str | None", pytest_args: Sequence[str]) -> str:
    """Where to look for the change that regressed, and a command that bisects it."""
    if not baseline_commit:
        return "bisect: the baseline does not record its commit"
    short = baseline_commit[:12]
    test_cmd = " ".join(shlex.quote(a) for a in ["pytest", *pytest_args])
    return (
        f"bisect: the baseline was measured at {short}; the change is in {short}..{(head or 'HEAD')[:12]}:\n"
        f"    git bisect start HEAD {short} && git bisect run {test_cmd}"
    )
