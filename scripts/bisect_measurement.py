"""Measure ``bpsperf bisect`` on this machine: a throwaway history with two known culprits, bisected for real.

Makes a git repository outside this checkout, as a user's repository would be:
an entry module (a small MLP through the harness's entry-point protocol), a
perf test and a pytest.ini, and ``--commits`` commits after GOOD. Commit
``--comm-at`` gives the model a larger layer whose gradients travel but whose
compute is small (``PAD`` floats, pushed and pulled every step: a
communication regression); commit ``--compute-at`` adds ``EXTRA`` matrix
products to every step's forward pass (a compute regression, sized to make a
step about 25% slower: ``--extra auto`` times one local step and one product
first). Every other commit changes a text file only.

Then, per try: ``bpsperf bisect GOOD BAD`` over the whole range (its first
culprit is the communication one), ``bpsperf bisect <that culprit> BAD`` (the
compute one), and one bisect per size in ``--ranges`` around the compute
culprit (how the time grows with the range). Each bisect's steps, sessions,
pairs, time, culprit (right or not) and the part its breakdown says grew go to
``--out`` (JSON lines) and a summary at the end. Real sessions: run it on an
idle machine (nothing else measuring), with the venv of this checkout.

    .venv/bin/python scripts/bisect_measurement.py --tries 3 --out bisect-runs.jsonl
    .venv/bin/python scripts/bisect_measurement.py --commits 2 --comm-at 1 --compute-at 2 --extra 40 \
        --ranges ''    # small: three sessions, both culprits (about 5 minutes on two cores)

(``--comm-at 0``: no communication regression; pytest arguments the script does
not know go to every session.) ``tests/e2e/test_e2e_bisect.py`` bisects a small
repository made by :func:`build_repository` in every ``make test``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENTRY = '''"""A user's training step: a small MLP; PAD floats of a layer that only travels; EXTRA products per step."""
EXTRA = {extra}
PAD = {pad}


def build(ctx):
    import mxnet as mx
    from mxnet import autograd, gluon

    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(256, activation="relu"), gluon.nn.Dense(256, activation="relu"),
            gluon.nn.Dense(ctx.classes))
    params = net.collect_params()
    if PAD:
        # a larger layer whose gradients travel every step (pushed, updated on the server, pulled) but
        # that takes no part in forward or backward: more bytes, no more compute
        holder = gluon.nn.Block(prefix="pad_")
        holder.params.get("weight", shape=(PAD,), init=mx.init.Zero())
        holder.initialize(ctx=ctx.device)
        params.update(holder.collect_params())
    net.initialize(mx.init.Xavier(), ctx=ctx.device)
    net.hybridize()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    data, _ = ctx.next_batch()
    net(data)
    trainer = ctx.make_trainer(params, "sgd", {{"learning_rate": 0.01}})
    extra = mx.nd.ones((192, 192), ctx=ctx.device)

    def step():
        data, label = ctx.next_batch()
        with autograd.record():
            loss = loss_fn(net(data), label)
            for _ in range(EXTRA):  # forward work that does not change the loss
                mx.nd.dot(extra, extra)
        loss.backward()
        ctx.split()
        # the pad's gradient is never written by backward (zeros): gluon pushes and pulls it anyway
        trainer.step(ctx.step_scale, ignore_stale_grad=bool(PAD))

    return step
'''

PERF_TEST = """import pytest

pytestmark = pytest.mark.perf


def test_bench(bpsperf_train):
    bpsperf_train().assert_within_baseline()
"""

INI = """[pytest]
markers =
    perf: performance tests
bpsperf_entry = bench:build
bpsperf_steps = {steps}
bpsperf_batch_size = 8
bpsperf_image_size = 16
bpsperf_omp_threads = 1
bpsperf_scaling = off
bpsperf_tolerance = {tolerance}
"""


#: Who commits in the throwaway repository: a fixed author, unsigned whatever the user's git config says.
GIT_CONFIG = ("-c", "user.name=bisect", "-c", "user.email=bisect@example.invalid", "-c", "commit.gpgsign=false")


def git(path: Path, *args: str) -> str:
    """``git ARGS`` in ``path`` as :data:`GIT_CONFIG` says; its stdout."""
    return subprocess.run(
        ["git", *GIT_CONFIG, *args],
        cwd=path,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def build_repository(
    path: Path,
    *,
    commits: int,
    comm_at: int,
    compute_at: int,
    extra: int,
    pad: int,
    steps: int = 10,
    tolerance: str = "10%",
) -> "list[str]":
    """The throwaway repository at ``path``: GOOD and ``commits`` commits after it; the shas, GOOD first.

    Commit ``comm_at`` (0: none) adds the ``pad`` floats that only travel, commit
    ``compute_at`` (0: none) the ``extra`` products per step; both stay in the
    commits after them. The others change NOTES.txt only.
    """
    path.mkdir(parents=True, exist_ok=True)
    (path / "test_perf.py").write_text(PERF_TEST)
    (path / "pytest.ini").write_text(INI.format(steps=steps, tolerance=tolerance))
    git(path, "init", "-q")
    git(path, "symbolic-ref", "HEAD", "refs/heads/main")  # what `init -b main` does, before git 2.28 too
    shas = []
    for k in range(commits + 1):
        has_pad = bool(comm_at) and k >= comm_at
        has_extra = bool(compute_at) and k >= compute_at
        (path / "bench.py").write_text(ENTRY.format(extra=extra if has_extra else 0, pad=pad if has_pad else 0))
        with open(path / "NOTES.txt", "a", encoding="utf-8") as fh:
            fh.write(f"change {k}\n")
        subject = (
            "good"
            if k == 0
            else "a larger layer (more gradient bytes)"
            if k == comm_at
            else "extra compute per step"
            if k == compute_at
            else f"change {k} (no speed change)"
        )
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", subject)
        shas.append(git(path, "rev-parse", "HEAD"))
    return shas


def _local_step_s(extra: int, work: Path) -> float:
    """Median seconds of a diagnostic step of bench.py with ``extra`` products, in one local process."""
    entry = work / f"calib{extra}"
    entry.mkdir(parents=True, exist_ok=True)
    (entry / "bench.py").write_text(ENTRY.format(extra=extra, pad=0))
    records = entry / "r.jsonl"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_bpsperf.remote.workload",
            "--backend",
            "local",
            "--entry",
            "bench:build",
            "--entry-path",
            str(entry),
            "--steps",
            "5",
            "--batch-size",
            "8",
            "--image-size",
            "16",
            "--records",
            str(records),
            "--diagnostic-steps",
            "7",
        ],
        check=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        capture_output=True,
        timeout=600,
    )
    totals = sorted(
        json.loads(line)["total_s"]
        for line in records.read_text().splitlines()
        if json.loads(line)["event"] == "diagnostic"
    )
    return totals[len(totals) // 2]


def _distributed_step_s(work: Path, steps: int, pad: int, pytest_args: "list[str]") -> float:
    """Median seconds per step of the code before the compute culprit (with ``pad`` floats that travel) in
    one real run of the roles (one pytest session, no base)."""
    repo = work / "calibration"
    shutil.rmtree(repo, ignore_errors=True)
    build_repository(repo, commits=1, comm_at=1 if pad else 0, compute_at=0, extra=0, pad=pad, steps=steps)
    results = repo / "calibration.json"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--bpsperf-json={results}", *pytest_args],
        cwd=repo,
        check=False,
        capture_output=True,
        timeout=1800,
    )
    runs = json.loads(results.read_text())["tests"]
    return sorted(r["step_s"] for r in runs)[len(runs) // 2]


def calibrate_extra(
    work: Path, steps: int, pad: int, pytest_args: "list[str]", slowdown: float = 0.25
) -> "tuple[int, dict]":
    """Products per step that make a distributed step of the compute culprit's parent (with ``pad``: after
    the communication culprit) about ``slowdown`` slower: the time of one product (one local process, with
    and without 40 of them), against one real run's step time."""
    plain, loaded = _local_step_s(0, work), _local_step_s(40, work)
    per_product = max(1e-6, (loaded - plain) / 40)
    step = _distributed_step_s(work, steps, pad, pytest_args)
    return max(1, round(slowdown * step / per_product)), {"product_s": per_product, "step_s": step}


def run_bisect(repo: Path, good: str, bad: str, out: Path, pytest_args: "list[str]") -> dict:
    """One ``bpsperf bisect`` in ``repo``; its document, with its exit status and wall seconds."""
    started = time.monotonic()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest_bpsperf.cli",
            "bisect",
            good,
            bad,
            "--out",
            str(out),
            "--",
            "-p",
            "no:cacheprovider",
            *pytest_args,
        ],
        cwd=repo,
        text=True,
    )
    try:
        proc.wait()
    except KeyboardInterrupt:  # the bisect got the same Ctrl-C: let it end its session and say so
        proc.wait()
        raise
    doc = json.loads((out / "bisect.json").read_text()) if (out / "bisect.json").is_file() else {}
    return {**doc, "exit_status": proc.returncode, "wall_s": time.monotonic() - started}


def summary(doc: dict, *, label: str, expected: str) -> dict:
    """The figures of one bisect: range, steps, sessions, pairs, time, culprit and whether it is right."""
    result = doc.get("result") or {}
    culprit = (result.get("culprit") or {}).get("sha")
    grew = (((result.get("verdict") or {}).get("breakdown") or {}).get("grew_most") or {}).get("label")
    return {
        "bisect": label,
        "commits": len(doc.get("commits") or []) - 1,
        "kind": result.get("kind"),
        "exit_status": doc.get("exit_status"),
        "midpoints": max([s["step"] for s in doc.get("steps") or [{"step": 0}]]),
        "sessions": doc.get("sessions"),
        "pairs": doc.get("pairs"),
        "seconds": doc.get("total_s"),
        "culprit": culprit,
        "expected": expected,
        "right": culprit == expected,
        "grew_most": grew,
        "where": (result.get("verdict") or {}).get("where"),
        "ratio": (result.get("verdict") or {}).get("ratio"),
    }


def main(argv: "list[str] | None" = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--commits", type=int, default=16, help="commits after GOOD (default: %(default)s)")
    p.add_argument("--comm-at", type=int, default=5, help="the commit that sends more bytes (0: none)")
    p.add_argument("--compute-at", type=int, default=11, help="the commit that computes more (0: none)")
    p.add_argument(
        "--extra", default="auto", help="products per step of the compute culprit ('auto': sized by --slowdown)"
    )
    p.add_argument(
        "--slowdown",
        type=float,
        default=0.25,
        help="how much slower the compute culprit makes a step (--extra auto; default: %(default)s)",
    )
    p.add_argument(
        "--pad",
        type=int,
        default=300_000,
        help="floats of the layer that only travels (the "
        "communication culprit; 1,000,000 made a step about 5x as long on the two-core machine)",
    )
    p.add_argument("--steps", type=int, default=12, help="training steps per run")
    p.add_argument("--tolerance", default="10%", help="the repository's tolerance")
    p.add_argument("--tries", type=int, default=1, help="repeat the whole measurement")
    p.add_argument("--ranges", default="4,8", help="extra bisects of these sizes around the compute culprit")
    p.add_argument("--work", help="where the repository and the reports go (default: a new temporary directory)")
    p.add_argument("--out", default="bisect-runs.jsonl", help="JSON lines, one per bisect")
    args, pytest_args = p.parse_known_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="bpsperf-bisect-measure-"))
    if args.extra == "auto":
        before = args.pad if args.comm_at and args.comm_at < args.compute_at else 0
        extra, facts = calibrate_extra(work, args.steps, before, pytest_args, args.slowdown)
        print(
            f"calibration: a distributed step of GOOD takes {facts['step_s'] * 1000:.1f} ms, one product "
            f"{facts['product_s'] * 1000:.2f} ms",
            flush=True,
        )
    else:
        extra = int(args.extra)
    print(f"EXTRA = {extra} products per step, PAD = {args.pad} floats; work in {work}", flush=True)
    rows = []
    for t in range(args.tries):
        repo = work / f"repo{t}"
        shutil.rmtree(repo, ignore_errors=True)
        shas = build_repository(
            repo,
            commits=args.commits,
            comm_at=args.comm_at,
            compute_at=args.compute_at,
            extra=extra,
            pad=args.pad,
            steps=args.steps,
            tolerance=args.tolerance,
        )
        plans = []
        first = args.comm_at or args.compute_at
        plans.append(("whole range", 0, args.commits, shas[first]))
        if args.comm_at and args.compute_at:
            plans.append(("after the first culprit", args.comm_at, args.commits, shas[args.compute_at]))
        for size in [int(x) for x in args.ranges.split(",") if x.strip()]:
            lo = max(args.comm_at, args.compute_at - size // 2)
            hi = min(args.commits, lo + size)
            plans.append((f"range of {hi - lo}", lo, hi, shas[args.compute_at]))
        for label, lo, hi, expected in plans:
            out = work / f"try{t}-{label.replace(' ', '-')}"
            doc = run_bisect(repo, shas[lo], shas[hi], out, pytest_args)
            row = {"try": t, **summary(doc, label=label, expected=expected), "reports": str(out)}
            rows.append(row)
            with open(args.out, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row, sort_keys=True) + "\n")
            print(
                f"try {t}, {label}: {row['kind']} in {row['sessions']} session(s), {row['pairs']} pairs, "
                f"{row['seconds']:.0f}s; right culprit: {row['right']}; grew most: {row['grew_most']}",
                flush=True,
            )
    right = sum(r["right"] for r in rows)
    print(f"{right} of {len(rows)} bisects named the right culprit; details in {args.out}")
    return 0 if right == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
