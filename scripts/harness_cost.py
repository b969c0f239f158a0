"""What the harness costs: the plugin's img/s against the same ranks launched by hand, interleaved.

Each pair runs one perf session of the plugin (backend torch, trick default, embedded Ray) and one
hand launch of the same workload with ``torchrun`` (``scripts/hand_launch.py --backend torch``), in
an order that alternates from pair to pair. Both measure steady-state img/s the same way (the
plugin's measurement). Prints one JSON line per run and a last one with the medians, each side's
spread (stdev/mean) and the ratio plugin/hand of the medians (1.0: the harness costs nothing).

    .venv/bin/python scripts/harness_cost.py --pairs 5                   # CPU: two gloo ranks
    python3 scripts/harness_cost.py --pairs 3 --device gpu --workers 1   # a GPU: NCCL

Run it alone on an idle machine: it is a measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

PERF_TEST = """import pytest


@pytest.mark.perf
def test_cost(bpsperf_train):
    bpsperf_train()
"""


def sizes(args: argparse.Namespace) -> "dict[str, int]":
    """The workload both sides train: the device's defaults unless given."""
    gpu = args.device == "gpu"
    return {
        "steps": args.steps or (100 if gpu else 30),
        "batch_size": args.batch_size or (64 if gpu else 8),
        "image_size": args.image_size or (224 if gpu else 32),
        "sync_every": 10 if gpu else 1,
    }


def plugin_run(args: argparse.Namespace, project: Path, k: int) -> float:
    """One perf session of the plugin; its img/s."""
    s = sizes(args)
    out = project / f"plugin-{k}.json"
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-m", "perf", *args.pytest_args]
    command += ["--bpsperf-backend=torch", f"--bpsperf-workers={args.workers}", f"--bpsperf-dtype={args.dtype}"]
    command += [f"--bpsperf-steps={s['steps']}", f"--bpsperf-batch-size={s['batch_size']}"]
    command += [f"--bpsperf-image-size={s['image_size']}", f"--bpsperf-omp-threads={args.omp_threads}"]
    command += ["--bpsperf-no-scaling", f"--bpsperf-json={out}", "--bpsperf-baselines-dir=baselines"]
    proc = subprocess.run(command, cwd=project, capture_output=True, text=True, check=False)
    if not out.exists():
        raise SystemExit(f"the plugin's session failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr}")
    (test,) = json.loads(out.read_text())["tests"]
    return float(test["img_per_sec"])


def hand_run(args: argparse.Namespace) -> float:
    """One hand launch (torchrun); its img/s."""
    s = sizes(args)
    command = [sys.executable, str(HERE / "hand_launch.py"), "--backend", "torch", "--device", args.device]
    command += ["--workers", str(args.workers), "--steps", str(s["steps"]), "--batch-size", str(s["batch_size"])]
    command += ["--image-size", str(s["image_size"]), "--sync-every", str(s["sync_every"])]
    command += ["--omp-threads", str(args.omp_threads), "--dtype", args.dtype]
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(
            f"the hand launch failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-3000:]}"
        )
    return float(json.loads(proc.stdout.strip().splitlines()[-1])["img_per_sec"])


def spread(values: "list[float]") -> float:
    """stdev/mean in percent (0 for one value)."""
    return 100 * statistics.stdev(values) / statistics.mean(values) if len(values) > 1 else 0.0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    p.add_argument("--workers", type=int, default=2, help="ranks (on one GPU machine: its GPUs)")
    p.add_argument("--steps", type=int, default=0)
    p.add_argument("--batch-size", type=int, default=0)
    p.add_argument("--image-size", type=int, default=0)
    p.add_argument("--omp-threads", type=int, default=1)
    p.add_argument("--dtype", default="float32")
    p.add_argument(
        "pytest_args", nargs="*", help="more arguments of the plugin's sessions (e.g. -p pytest_bpsperf.plugin)"
    )
    args = p.parse_args()
    project = Path(tempfile.mkdtemp(prefix="bpsperf-cost-"))
    (project / "test_cost.py").write_text(PERF_TEST)
    (project / "pytest.ini").write_text("[pytest]\nmarkers =\n    perf: performance tests\n")
    env_note = {k: os.environ[k] for k in ("CUDA_VISIBLE_DEVICES",) if k in os.environ}
    plugin, hand = [], []
    for k in range(args.pairs):
        order = ("plugin", "hand") if k % 2 == 0 else ("hand", "plugin")
        for side in order:
            value = plugin_run(args, project, k) if side == "plugin" else hand_run(args)
            (plugin if side == "plugin" else hand).append(value)
            print(json.dumps({"pair": k + 1, "side": side, "img_per_sec": round(value, 2)}), flush=True)
    summary = {
        "device": args.device,
        "workers": args.workers,
        "dtype": args.dtype,
        **sizes(args),
        "pairs": args.pairs,
        "plugin_median": round(statistics.median(plugin), 2),
        "hand_median": round(statistics.median(hand), 2),
        "plugin_spread_pct": round(spread(plugin), 2),
        "hand_spread_pct": round(spread(hand), 2),
        "ratio": round(statistics.median(plugin) / statistics.median(hand), 4),
        "pair_ratios": [round(a / b, 4) for a, b in zip(plugin, hand)],
        **({"env": env_note} if env_note else {}),
    }
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
