"""``bpsperf bisect GOOD BAD [-- PYTEST_ARGS]``: the first commit whose throughput drops, a pytest session a step.

Every question of the bisect (:class:`~pytest_bpsperf.judge.bisect.Bisection`)
is a real pytest session of the user's perf tests, in a subprocess, run where
the command runs: ``pytest PYTEST_ARGS --bpsperf-base=B --bpsperf-head=H
--bpsperf-json=FILE``. So each step is the pull-request gate itself (both
arms as worktrees, the harness from the working tree, pairs of runs, more
pairs while undecided), and each session has its own Ray, processes and
worktrees, all gone when it ends. This module only reads each session's
results file (:func:`outcome_of`), prints the progress, and writes the
reports: ``bisect.json``, ``bisect.md`` and ``bisect.png`` in ``--out``, with
every session's results and log under ``sessions/``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..judge.bisect import FAILED, INCONCLUSIVE, REGRESSION, Bisection, Comparison, Outcome, exit_status
from ..judge.breakdown import change_phrase
from ..report.bisect import bisect_document, bisect_pieces, duration, progress_line, summary_lines
from ..report.blocks import markdown
from ..report.markdown import verdicts_of
from ..store.files import atomic_write_text
from ..vcs.git import git_toplevel
from ..vcs.revisions import Commit, RangeError, commit_range

__all__ = ["BisectError", "bisect", "outcome_of"]

#: The order statuses rank in when a session has several jobs: the worst decides the step.
_RANK = {REGRESSION: 0, INCONCLUSIVE: 1, "ok": 2, "improvement": 3}


class BisectError(ValueError):
    """The bisect cannot start (a bad range, a bad option); the message names the value."""


def _worst(verdicts: "list[dict]") -> dict:
    return min(verdicts, key=lambda v: (_RANK.get(v["status"], 9), float(v.get("ratio") or 1.0)))


def _max_pairs(doc: Mapping[str, Any]) -> int:
    for run in doc.get("tests") or ():
        value = (run.get("settings") or {}).get("max_pairs")
        if value:
            return int(value)
    return 0


def _reason(doc: "Mapping[str, Any] | None", output: str, returncode: int) -> str:
    for failure in (doc or {}).get("failures") or ():
        first = str(failure.get("reason") or "").strip().splitlines()
        if first:
            return first[0][:300]
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower() or line.startswith(("E ", "FAILED", "bpsperf:"))]
    tail = (errors or lines or [f"pytest exited with status {returncode}"])[-1]
    return f"pytest exited with status {returncode}: {tail[:300]}"


def outcome_of(
    doc: "Mapping[str, Any] | None", returncode: int, output: str, *, seconds: float = 0.0, results: str = ""
) -> Outcome:
    """What one session said: the worst of its base-vs-head verdicts, or ``failed`` with the reason.

    A session without a verdict failed: its commit under test does not import
    (a usage error of the arm's preflight, which names the arm) or does not run
    (a failure of the head arm only); ``broken`` names the arm the output blames.
    """
    verdicts = [v for v in verdicts_of(doc) if v.get("kind") == "pairs"] if doc else []
    if verdicts:
        v = _worst(verdicts)
        where = change_phrase(v.get("breakdown"), v.get("change_pct")) if v.get("breakdown") else ""
        return Outcome(
            status=str(v["status"]),
            ratio=v.get("ratio"),
            ci_low=v.get("ci_low"),
            ci_high=v.get("ci_high"),
            pairs=int(v.get("pairs") or 0),
            looks=int(v.get("looks") or 0),
            nodeid=str(v.get("nodeid", "")),
            breakdown=v.get("breakdown"),
            where=where,
            seconds=seconds,
            results=results,
            max_pairs=_max_pairs(doc or {}),
        )
    text = output + "\n".join(str(f.get("reason", "")) for f in (doc or {}).get("failures") or ())
    broken = "head" if re.search(r"\bhead arm\b", text) else "base" if re.search(r"\bbase arm\b", text) else ""
    return Outcome(
        status=FAILED,
        reason=_reason(doc, output, returncode),
        broken=broken,
        seconds=seconds,
        results=results,
        max_pairs=_max_pairs(doc or {}),
    )


class Sessions:
    """Runs the pytest session of each comparison in ``cwd`` and keeps its results and log under ``out``."""

    def __init__(
        self, *, python: str, cwd: str, pytest_args: Sequence[str], out: Path, retry_pairs: "int | None" = None
    ) -> None:
        self.python, self.cwd, self.pytest_args = python, cwd, list(pytest_args)
        self.dir = out / "sessions"
        self.retry_pairs = retry_pairs
        self.first_max_pairs: "dict[tuple, int]" = {}

    def command(self, base: Commit, head: Commit, results: Path, max_pairs: "int | None") -> "list[str]":
        """The session's command line: the user's arguments, then the arms and the results file."""
        cmd = [
            self.python,
            "-m",
            "pytest",
            *self.pytest_args,
            f"--bpsperf-base={base.sha}",
            f"--bpsperf-head={head.sha}",
            f"--bpsperf-json={results}",
        ]
        return cmd + ([f"--bpsperf-max-pairs={max_pairs}"] if max_pairs else [])

    def run(self, step: int, c: Comparison, base: Commit, head: Commit) -> Outcome:
        """One session for comparison ``c``; an attempt after an inconclusive one gets more pairs."""
        self.dir.mkdir(parents=True, exist_ok=True)
        name = f"step{step:02d}-{c.why.split()[0]}-{head.short}-vs-{base.short}" + (
            f"-attempt{c.attempt}" if c.attempt > 1 else ""
        )
        results, log = self.dir / f"{name}.json", self.dir / f"{name}.log"
        max_pairs = None
        if c.attempt > 1:
            first = self.first_max_pairs.get((c.base, c.head)) or 0
            max_pairs = self.retry_pairs or (2 * first if first else None)
        started = time.monotonic()
        with open(log, "w", encoding="utf-8") as fh:
            proc = subprocess.Popen(
                self.command(base, head, results, max_pairs),
                cwd=self.cwd,
                stdout=fh,
                stderr=subprocess.STDOUT,
                text=True,
            )
            try:
                proc.wait()
            except KeyboardInterrupt:
                _let_it_end(proc)
                raise
        seconds = time.monotonic() - started
        output = log.read_text(encoding="utf-8", errors="replace")
        try:
            doc = json.loads(results.read_text(encoding="utf-8")) if results.is_file() else None
        except (OSError, ValueError):
            doc = None
        outcome = outcome_of(doc, proc.returncode, output, seconds=seconds, results=str(results))
        if c.attempt == 1:
            self.first_max_pairs[(c.base, c.head)] = outcome.max_pairs
        return outcome


def _let_it_end(proc: "subprocess.Popen[str]", grace: float = 120.0) -> None:
    """After Ctrl-C: the session got the same SIGINT and tears itself down (its Ray, its roles, its
    worktrees); wait for that, and only past ``grace`` seconds stop it (SIGTERM, which it also cleans up
    after; a later session removes what a SIGKILL would leave)."""
    for signal_it in (None, proc.terminate, proc.kill):
        if signal_it is not None:
            signal_it()
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue
        except KeyboardInterrupt:  # a second Ctrl-C: stop waiting politely
            continue


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path.absolute(), text)


def _tolerance(bisection: Bisection) -> "float | None":
    for step in bisection.steps:
        if step.outcome.results and os.path.isfile(step.outcome.results):
            try:
                doc = json.loads(Path(step.outcome.results).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            for run in doc.get("tests") or ():
                if (run.get("settings") or {}).get("tolerance") is not None:
                    return float(run["settings"]["tolerance"])
    return None


def write_reports(
    bisection: Bisection, positions: Sequence[Commit], args: argparse.Namespace, out: Path, total_s: float
) -> dict:
    """``bisect.json``, ``bisect.png`` and ``bisect.md`` in ``out``; the document."""
    from ..report.plots import bisect_picture

    tolerance = _tolerance(bisection)
    doc = bisect_document(
        bisection,
        positions,
        good=args.good,
        bad=args.bad,
        pytest_args=args.pytest_args,
        total_s=total_s,
        tolerance=tolerance,
    )
    pictures: "list[str]" = []
    try:
        bisect_picture(doc, out / "bisect.png")
        pictures.append("bisect.png")
    except ImportError as exc:  # matplotlib missing: the report still says everything in words
        print(f"bpsperf bisect: no picture ({exc})", file=sys.stderr)
    doc["pictures"] = pictures
    _write(out / "bisect.json", json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n")
    _write(out / "bisect.md", markdown(bisect_pieces(doc)))
    return doc


def bisect(args: argparse.Namespace, say: "Callable[[str], None]" = print) -> int:
    """Run the bisect ``args`` describes; its exit status (0 culprit, 1 none, 2 bad input, 4 a range)."""
    cwd = os.path.abspath(args.directory or os.getcwd())
    repository = git_toplevel(cwd)
    if repository is None:
        raise BisectError(
            f"{cwd} is in no git repository: bpsperf bisect walks the history of the repository "
            "that holds the perf tests (run it there, or name it with -C DIR)"
        )
    try:
        good, commits = commit_range(repository, args.good, args.bad)
    except RangeError as exc:
        raise BisectError(str(exc)) from None
    positions = [good, *commits]
    out = Path(args.out)
    bisection = Bisection(len(commits), retries=args.retries)
    sessions = Sessions(
        python=args.python or sys.executable,
        cwd=cwd,
        pytest_args=args.pytest_args,
        out=out,
        retry_pairs=args.retry_pairs,
    )
    say(
        f"bpsperf bisect: GOOD {args.good} = {good.short} .. BAD {args.bad} = {commits[-1].short}: "
        f"{len(commits)} commit(s) along BAD's first parents, about {bisection.expected_steps} step(s) after "
        f"the ends; reports in {out}"
    )
    started = time.monotonic()
    while True:
        c = bisection.next()
        if c is None:
            break
        outcome = sessions.run(len(bisection.steps), c, positions[c.base], positions[c.head])
        bisection.record(c, outcome)
        say(progress_line(bisection, positions, time.monotonic() - started))
    doc = write_reports(bisection, positions, args, out, time.monotonic() - started)
    for line in summary_lines(doc):
        say(line)
    say(
        f"wrote {out / 'bisect.md'}, {out / 'bisect.json'}"
        + (f", {out / 'bisect.png'}" if doc["pictures"] else "")
        + f" (every session's results and log in {out / 'sessions'}); {duration(doc['total_s'])} in all"
    )
    assert bisection.result is not None
    return exit_status(bisection.result.kind)
