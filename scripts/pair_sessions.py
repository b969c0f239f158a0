"""Measure the base-vs-head gate on this machine: real sessions of unchanged and slowed code.

Makes a throwaway git repository outside this checkout, as a user's
repository would be: an entry module that trains gluoncv's ``resnet50_v2``
through the harness (the default workload) and does ``EXTRA`` additional
matrix products after every step, one commit per slowdown (``EXTRA = 0`` is
the base). Then runs pytest sessions there, one at a time, in the order given
(interleave the kinds: ``aa s15 s25 aa s15 s25 ...``), each
``pytest -m perf --bpsperf-base=<base commit> --bpsperf-tricks=omp-passive``
with the commit of its kind checked out as the head, and appends each
session's results (pairs, verdict, seconds) to ``--out`` as JSON lines.

    .venv/bin/python scripts/pair_sessions.py --extra s15=40 s25=90 --order aa s15 s25 aa ... \\
        --out sessions.jsonl [-- extra pytest arguments]

``--extra KIND=N`` sets the products per step of a slowdown; size them first
with long sessions (``--order s15 --max-pairs 12 --tolerance 1%`` gives the
ratio of 12 pairs). Figures go in docs/method.md's "What the verdicts can detect";
``tests/data/pair_sessions.json`` keeps the sessions the simulation uses.
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

ENTRY = '''"""ResNet-50 v2 (gluoncv) as the shipped workload trains it, plus EXTRA products per step."""
EXTRA = {extra}


def build(ctx):
    import mxnet as mx
    from mxnet import autograd, gluon
    from gluoncv.model_zoo import get_model

    net = get_model("resnet50_v2", classes=ctx.classes, pretrained=False)
    net.initialize(mx.init.Xavier(), ctx=ctx.device)
    net.hybridize(static_alloc=True, static_shape=True)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    data, _ = ctx.next_batch()
    net(data)
    mx.nd.waitall()
    trainer = ctx.make_trainer(net.collect_params(), "sgd", {{"learning_rate": ctx.lr, "momentum": 0.9, "wd": 1e-4}})
    extra = mx.nd.ones((256, 256), ctx=ctx.device)

    def step():
        data, label = ctx.next_batch()
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(ctx.step_scale)
        for _ in range(EXTRA):
            mx.nd.dot(extra, extra)

    return step
'''

PERF_TEST = '''import pytest

pytestmark = pytest.mark.perf


def test_resnet50(bpsperf_train):
    bpsperf_train().assert_within_baseline()
'''


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=m", "-c", "user.email=m@m", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout.strip()


def make_repo(extra: "dict[str, int]") -> "tuple[str, dict[str, str]]":
    """The repository and the commit of each kind (``aa`` and the base: EXTRA = 0)."""
    repo = tempfile.mkdtemp(prefix="bpsperf-measure-")
    with open(os.path.join(repo, "test_perf.py"), "w") as fh:
        fh.write(PERF_TEST)
    with open(os.path.join(repo, "pytest.ini"), "w") as fh:
        fh.write("[pytest]\nmarkers =\n    perf: perf\nbpsperf_entry = bench:build\n")
    git(repo, "init", "-q", "-b", "main")
    commits = {}
    for kind, n in [("aa", 0)] + sorted(extra.items()):
        with open(os.path.join(repo, "bench.py"), "w") as fh:
            fh.write(ENTRY.format(extra=n))
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", f"{kind}: EXTRA={n}")
        commits[kind] = git(repo, "rev-parse", "HEAD")
    return repo, commits


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--extra", nargs="*", default=[], metavar="KIND=N")
    p.add_argument("--order", nargs="+", required=True, metavar="KIND")
    p.add_argument("--out", required=True)
    p.add_argument("--max-pairs", type=int, default=None)
    p.add_argument("--tolerance", default=None)
    p.add_argument("pytest_args", nargs="*")
    args = p.parse_args()
    extra = {k: int(v) for k, v in (item.split("=", 1) for item in args.extra)}
    repo, commits = make_repo(extra)
    base = commits["aa"]
    try:
        for i, kind in enumerate(args.order):
            git(repo, "checkout", "-q", "--detach", commits[kind])
            result = os.path.join(repo, f"session-{i}.json")
            cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "perf", f"--bpsperf-base={base}",
                   "--bpsperf-tricks=omp-passive", f"--bpsperf-json={result}", "-q", *args.pytest_args]
            if args.max_pairs:
                cmd.append(f"--bpsperf-max-pairs={args.max_pairs}")
            if args.tolerance:
                cmd.append(f"--bpsperf-tolerance={args.tolerance}")
            env = {k: v for k, v in os.environ.items() if not k.startswith("BPSPERF_")}
            t0 = time.monotonic()
            proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True)
            seconds = time.monotonic() - t0
            doc = json.load(open(result)) if os.path.exists(result) else {}
            jobs = (doc.get("base_vs_head") or {}).get("jobs", [])
            runs = [{"arm": t["arm"], "pair": t["pair"], "img_per_sec": t["img_per_sec"],
                     "wall_s": t.get("wall_s")} for t in doc.get("tests", [])]
            line = {"index": i, "kind": kind, "extra": extra.get(kind, 0), "exit": proc.returncode,
                    "seconds": round(seconds, 1), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "seed": (doc.get("base_vs_head") or {}).get("seed"), "runs": runs,
                    "jobs": [{k: j.get(k) for k in ("status", "ratio", "ci_low", "ci_high", "pairs", "looks",
                                                   "pair_table")} for j in jobs]}
            with open(args.out, "a") as fh:
                fh.write(json.dumps(line, sort_keys=True) + "\n")
            status = jobs[0]["status"] if jobs else f"no verdict (exit {proc.returncode})"
            ratio = f"{jobs[0]['ratio']:.3f}" if jobs else "-"
            print(f"{i:3d} {kind:5s} {status:13s} ratio {ratio} pairs {jobs[0]['pairs'] if jobs else '-'} "
                  f"{seconds:.0f}s", flush=True)
            if not jobs:
                print(proc.stdout[-3000:], proc.stderr[-2000:], flush=True)
    finally:
        shutil.rmtree(repo, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
