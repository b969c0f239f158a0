"""Terminal and GitHub lines: one per run, one per verdict, annotations."""

from __future__ import annotations

from typing import Mapping, Sequence

from ..judge.job import RunResult
from ..judge.measurement import Measurement
from ..judge.pairs import PairedVerdict
from ..judge.verdict import Verdict

__all__ = ["github_annotations", "result_line", "verdict_line"]


def result_line(result: RunResult) -> str:
    """One line per perf test: img/s, per worker, step split, warm-up, harness overhead."""
    m = result.measurement
    workers = ", ".join(f"{n} {v:.1f}" for n, v in m.per_worker_img_per_sec.items())
    warm = sorted({s for steps in m.warmup_steps.values() for s in steps})
    arm = f" ({result.spec.arm.name}, pair {(result.spec.pair or 0) + 1})" if result.spec.arm is not None else ""
    line = (
        f"{result.spec.nodeid}{arm}: {m.img_per_sec:.1f} img/s ({workers}); "
        f"{_step(m)}; "
        f"warm-up steps {_ranges(warm)}; bring-up {m.bringup_s:.1f}s, teardown {m.teardown_s:.1f}s"
    )
    if result.output.simulation:
        line += "; SIMULATION (a stand-in ran, never a baseline)"
    if result.output.load:
        line += f"; foreign load {result.output.foreign_cores:.2f} cores ({_nodes(result.output.load)})"
    for note in result.output.notes:
        line += f"; note: {note}"
    for window in result.output.comm:
        if window.error is not None:
            line += f"; {window.name}: no timeline ({window.error})"
        else:
            line += (
                f"; {window.name}: PUSH {window.push_s:.4f}s PULL {window.pull_s:.4f}s per step "
                f"({window.steps} traced steps)"
            )
    return line


def _nodes(load: Sequence) -> str:
    """``127.0.0.1 0.93 of 2 cores``, per node: the CPU others used while the run was timed."""
    return ", ".join(f"{n.node} {n.foreign_cores:.2f} of {n.cpus}" for n in load)


def _step(m: Measurement) -> str:
    if m.compute_s is None or m.sync_s is None:
        return f"step {m.step_s:.3f}s (timing {m.timing})"
    return (
        f"step {m.step_s:.3f}s = compute {m.compute_s:.3f}s + sync {m.sync_s:.3f}s "
        f"(timing {m.timing}: serialized steps)"
    )


def _ranges(values: Sequence[int]) -> str:
    if not values:
        return "none"
    out, start, prev = [], values[0], values[0]
    for v in list(values[1:]) + [None]:
        if v is not None and v == prev + 1:
            prev = v
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if v is not None:
            start = prev = v
    return ",".join(out)


def verdict_line(verdict: "Verdict | PairedVerdict") -> str:
    """One terminal line per verdict."""
    return f"{verdict.status.upper():12s} {verdict.nodeid}: {verdict.figures()}"


def _escape_data(text: str) -> str:
    """A workflow command's message, escaped as GitHub's toolkit does (``%``, CR, LF)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    """A workflow command's property value: the message's escapes plus ``:`` and ``,``."""
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotations(verdicts: Sequence[Verdict], lines: "Mapping[str, int] | None" = None) -> "list[str]":
    """GitHub Actions workflow commands: ::error for regressions, ::warning for the rest worth seeing.

    Each names the test's file and, where ``lines`` (node id -> line, as pytest located
    the test) knows it, its line, so that the annotation sits on the test in the pull request's diff.
    """
    out = []
    for v in verdicts:
        level = {
            "regression": "error",
            "improvement": "warning",
            "no-baseline": "warning",
            "inconclusive": "warning",
        }.get(v.status)
        if level is None:
            continue
        path = v.nodeid.split("::")[0]
        line = (lines or {}).get(v.nodeid)
        where = f"file={_escape_property(path)}" + (f",line={line}" if line else "")
        title = f"bpsperf {v.status}: {v.trick}"
        out.append(f"::{level} {where},title={_escape_property(title)}::{_escape_data(v.nodeid + ': ' + v.figures())}")
    return out
