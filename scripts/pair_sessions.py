"""Measure the base-vs-head gate on this machine: real sessions of unchanged and slowed code, kinds interleaved.

Makes a throwaway git repository outside this checkout, as a user's repository
would be: an entry module that trains the shipped workload (gluoncv
``resnet50_v2`` through the harness, :func:`pytest_bpsperf.remote.entry.build_zoo_model`),
one commit per kind. The base commit is the workload as it is; each slowdown
kind's commit sets ``BPSPERF_FAULT=slowdown:P`` when its ``build`` runs, so
that every training process of the head arm burns ``P`` percent of each step's
time as extra CPU (the workload's own fault injection, remote/workload.py), and
the base arm does not. ``aa`` is the base itself (A/A). Then it runs pytest
sessions there, one at a time, kinds interleaved (``aa s10 s15 aa s10 s15 ...``):
``pytest -m perf --bpsperf-base=<base commit> --bpsperf-tricks=omp-passive``
with the kind's commit checked out as the head, and appends one JSON line per
session to ``--out``: its kind and slowdown, the gate's settings, every run
(arm, pair, img/s, foreign load, each worker's step times), the verdict with
its pair table, the pytest session's seconds, the CPU. The tables of
docs/method.md come from such a file: ``scripts/method_tables.py --data FILE --write``.

Size the slowdowns first: on a 2-core machine burnt CPU also slows the other
roles, so ``P`` percent is not ``1/(1+P)``. ``--size KIND=P`` runs one long
session per given ``P`` (``--size-pairs`` pairs, never stopping early) and
prints the measured head/base ratio (every pair a repeat, so that nothing
stops early); choose ``P`` for -10% and -15%.

    .venv/bin/python scripts/pair_sessions.py --size s10=9 s15=14 --size-pairs 16 --out sizing.jsonl
    .venv/bin/python scripts/pair_sessions.py --slowdown s10=9 s15=14 --sessions 20 --out sessions.jsonl
    .venv/bin/python scripts/method_tables.py --data sessions.jsonl --write

``--sessions N`` runs N sessions of each kind, interleaved (``--order`` gives
the order instead); ``--pause-file PATH`` holds the next session while PATH exists. Arguments after ``--``
go to every pytest session.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ENTRY = '''"""The shipped workload as an entry point{what}."""
import os

from pytest_bpsperf.remote.entry import build_zoo_model


def build(ctx):
{fault}    return build_zoo_model(ctx)
'''

# In build(), which only the training processes call (the preflight imports the module in
# pytest's own process, whose environment every role would inherit); the workload reads it
# once the step is built (remote/workload.py).
FAULT = """    os.environ["BPSPERF_FAULT"] = "slowdown:{percent}"
"""

PERF_TEST = """import pytest

pytestmark = pytest.mark.perf


def test_resnet50(bpsperf_train):
    bpsperf_train().assert_within_baseline()
"""


def git(repo: str, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=m", "-c", "user.email=m@m", "-c", "commit.gpgsign=false", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def make_repo(slowdowns: "dict[str, float]") -> "tuple[str, dict[str, str]]":
    """The repository and the commit of each kind (``aa``: the base itself)."""
    repo = tempfile.mkdtemp(prefix="bpsperf-measure-")
    with open(os.path.join(repo, "test_perf.py"), "w") as fh:
        fh.write(PERF_TEST)
    with open(os.path.join(repo, "pytest.ini"), "w") as fh:
        fh.write("[pytest]\nmarkers =\n    perf: perf\nbpsperf_entry = bench:build\n")
    git(repo, "init", "-q")
    git(repo, "symbolic-ref", "HEAD", "refs/heads/main")  # what `init -b main` does, before git 2.28 too
    commits = {}
    for kind, percent in [("aa", 0.0)] + sorted(slowdowns.items()):
        with open(os.path.join(repo, "bench.py"), "w") as fh:
            fh.write(
                ENTRY.format(
                    what=f", {percent:g}% slower per step" if percent else "",
                    fault=FAULT.format(percent=f"{percent:g}") if percent else "",
                )
            )
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", f"{kind}: slowdown {percent:g}%")
        commits[kind] = git(repo, "rev-parse", "HEAD")
    return repo, commits


def cpu() -> dict:
    """Vendor, family, model, stepping and model name of this machine's CPU (/proc/cpuinfo)."""
    out: dict = {"cores": os.cpu_count()}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("vendor_id", "cpu family", "model", "stepping", "model name") and key not in out:
                    out[key] = value.strip()
                if not line.strip() and "model name" in out:
                    break
    except OSError:
        pass
    return out


def session_line(doc: dict, kind: str, percent: float, index: int, seconds: float, exit_code: int) -> dict:
    """One session's JSON line from its results document."""
    section = doc.get("base_vs_head") or {}
    jobs = section.get("jobs", [])
    runs = []
    for t in doc.get("tests", []):
        runs.append(
            {
                "arm": t.get("arm"),
                "pair": t.get("pair"),
                "img_per_sec": t.get("img_per_sec"),
                "wall_s": t.get("wall_s"),
                "bringup_s": t.get("bringup_s"),
                "teardown_s": t.get("teardown_s"),
                "foreign_cores": (t.get("foreign_load") or {}).get("cores"),
                "step_s": [w.get("step_s") for w in t.get("workers", [])],
                "setup_s": [w.get("setup_s") for w in t.get("workers", [])],
                "warmup_steps": [w.get("warmup_steps") for w in t.get("workers", [])],
            }
        )
    settings = (doc.get("tests") or [{}])[0].get("settings", {})
    waited = float((doc.get("session_info") or {}).get("lock_waited_s") or 0.0)
    return {
        "index": index,
        "kind": kind,
        "slowdown_pct": percent,
        "exit": exit_code,
        # pytest time without the wait for another session's measurement (which is never timed)
        "seconds": round(seconds - waited, 1),
        "lock_waited_s": waited,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "seed": section.get("seed"),
        "gate": {
            k: settings.get(k) for k in ("tolerance", "confidence", "max_pairs", "repeats", "steps", "foreign_load")
        },
        "profile": (doc.get("profile") or {}).get("id"),
        "cpu": cpu(),
        "host": platform.node(),
        "runs": runs,
        "jobs": [
            {
                k: j.get(k)
                for k in ("status", "ratio", "ci_low", "ci_high", "pairs", "looks", "pair_table", "comparison")
            }
            for j in jobs
        ],
    }


def run_session(repo: str, commit: str, base: str, result: str, extra: "list[str]") -> "tuple[dict, float, int, str]":
    """One pytest session with ``commit`` checked out as head: (results document, seconds, exit, output tail)."""
    git(repo, "checkout", "-q", "--detach", commit)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-m",
        "perf",
        f"--bpsperf-base={base}",
        "--bpsperf-tricks=omp-passive",
        f"--bpsperf-json={result}",
        "-q",
        *extra,
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BPSPERF_", "PYTEST_"))}
    env.pop("PYTHONPATH", None)
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - t0
    try:
        with open(result, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        doc = {}
    return doc, seconds, proc.returncode, (proc.stdout[-3000:] + proc.stderr[-2000:])


def order_of(args: argparse.Namespace, kinds: "list[str]") -> "list[str]":
    """The sessions' kinds in the order they run: ``--order``, else ``--sessions`` rounds of every kind."""
    if args.order:
        return list(args.order)
    return [k for _ in range(args.sessions) for k in kinds]


def parse_kinds(items: "list[str]", option: str) -> "dict[str, float]":
    out = {}
    for item in items:
        kind, sep, value = item.partition("=")
        try:
            if not sep or kind == "aa" or float(value) <= 0:
                raise ValueError
            out[kind] = float(value)
        except ValueError:
            raise SystemExit(
                f"{option} {item!r}: expected KIND=PERCENT with a kind other than aa and a percentage > 0, e.g. s10=9"
            ) from None
    return out


def main(argv: "list[str] | None" = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--slowdown",
        nargs="*",
        default=[],
        metavar="KIND=P",
        help="the slowdown kinds and their BPSPERF_FAULT=slowdown:P percentages",
    )
    p.add_argument(
        "--size",
        nargs="*",
        default=[],
        metavar="KIND=P",
        help="instead of sessions: one long session per slowdown to measure what it does",
    )
    p.add_argument("--size-pairs", type=int, default=16, help="pairs of each sizing session (default 16)")
    p.add_argument("--sessions", type=int, default=1, help="sessions of each kind, interleaved (default 1)")
    p.add_argument("--order", nargs="+", default=None, metavar="KIND", help="the kinds in this order instead")
    p.add_argument("--out", required=True, help="JSON-lines file the sessions are appended to")
    p.add_argument(
        "--pause-file",
        default=None,
        metavar="PATH",
        help="while PATH exists, wait before starting the next session (other work on the machine "
        "can then run between sessions, never beside one)",
    )
    p.add_argument("pytest_args", nargs="*", help="after --: arguments for every pytest session")
    args = p.parse_args(argv)
    sizing = parse_kinds(args.size, "--size")
    slowdowns = sizing or parse_kinds(args.slowdown, "--slowdown")
    kinds = ["aa", *sorted(slowdowns)]
    order = list(sizing) if sizing else order_of(args, kinds)
    unknown = sorted(set(order) - set(kinds))
    if unknown:
        raise SystemExit(f"--order names {', '.join(unknown)}, which --slowdown does not define")
    extra = list(args.pytest_args)
    if sizing:  # never stop early: every pair is a repeat, the first look comes after the last
        extra += [f"--bpsperf-repeats={args.size_pairs}", f"--bpsperf-max-pairs={args.size_pairs}"]
    # a campaign is long and often stopped: SIGTERM and SIGHUP end it as Ctrl-C does, through the finally
    # below that removes its repository (SIGINT is ignored where a shell started it in the background)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda number, _frame: sys.exit(128 + number))
    repo, commits = make_repo(slowdowns)
    started = time.monotonic()
    try:
        for i, kind in enumerate(order):
            if args.pause_file and os.path.exists(args.pause_file):
                print(f"paused before session {i}: {args.pause_file} exists", flush=True)
                while os.path.exists(args.pause_file):
                    time.sleep(2)
            result = os.path.join(repo, f"session-{i}.json")
            doc, seconds, code, tail = run_session(repo, commits[kind], commits["aa"], result, extra)
            line = session_line(doc, kind, slowdowns.get(kind, 0.0), i, seconds, code)
            line["sizing"] = bool(sizing)
            with open(args.out, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(line, sort_keys=True) + "\n")
            job = (line["jobs"] or [{}])[0]
            ratio = f"{job['ratio']:.3f}" if job.get("ratio") else "-"
            print(
                f"{i:3d} {kind:5s} {job.get('status') or f'no verdict (exit {code})':13s} ratio {ratio} "
                f"pairs {job.get('pairs', '-')} {seconds:.0f}s (elapsed {time.monotonic() - started:.0f}s)",
                flush=True,
            )
            if not line["jobs"]:
                print(tail, flush=True)
    finally:
        shutil.rmtree(repo, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
