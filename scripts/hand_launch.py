"""Launch the perf workload by hand (no Ray, no plugin), as a user would with DMLC_* variables.

The reference for the harness's overhead: the same scheduler, server and
worker commands, started with plain subprocesses on 127.0.0.1. Prints one JSON
line with the aggregate steady-state img/s measured the same way as the plugin.

    .venv/bin/python scripts/hand_launch.py --workers 2 --steps 20 --batch-size 8 --image-size 32 \
        --omp-threads 2 [--passive]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from pytest_bpsperf.judge.measurement import measure_worker
from pytest_bpsperf.remote.roles import hold_port
from pytest_bpsperf.runs.output import WorkerRecords


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--omp-threads", type=int, default=2)
    p.add_argument("--passive", action="store_true", help="OMP_WAIT_POLICY=PASSIVE on server and workers")
    args = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="bpsperf-hand-")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "DMLC_"))}
    held = hold_port("127.0.0.1")  # held (SO_REUSEADDR) for this script's life: the scheduler binds beside it
    base.update(
        DMLC_PS_ROOT_URI="127.0.0.1",
        DMLC_PS_ROOT_PORT=str(held.getsockname()[1]),
        DMLC_NODE_HOST="127.0.0.1",
        DMLC_NUM_WORKER=str(args.workers),
        DMLC_NUM_SERVER="1",
        OMP_NUM_THREADS=str(args.omp_threads),
    )
    passive = {"OMP_WAIT_POLICY": "PASSIVE"} if args.passive else {}
    t0 = time.perf_counter()
    procs = [
        subprocess.Popen([sys.executable, "-c", "import mxnet"], env={**base, "DMLC_ROLE": "scheduler"}),
        subprocess.Popen([sys.executable, "-c", "import mxnet"], env={**base, **passive, "DMLC_ROLE": "server"}),
    ]
    records = []
    for i in range(args.workers):
        path = os.path.join(tmp, f"worker-{i}.jsonl")
        records.append(path)
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "pytest_bpsperf.remote.workload",
                    "--backend",
                    "mxnet",
                    "--steps",
                    str(args.steps),
                    "--batch-size",
                    str(args.batch_size),
                    "--image-size",
                    str(args.image_size),
                    "--records",
                    path,
                ],
                env={**base, **passive, "DMLC_ROLE": "worker"},
            )
        )
    codes = [proc.wait() for proc in procs]
    wall = time.perf_counter() - t0
    workers = []
    for i, path in enumerate(records):
        with open(path) as fh:
            workers.append(
                measure_worker(WorkerRecords(f"worker-{i}", "local", tuple(json.loads(line) for line in fh)))
            )
    print(
        json.dumps(
            {
                "img_per_sec": sum(w.img_per_sec for w in workers),
                "exit_codes": codes,
                "wall_s": wall,
                "passive": args.passive,
            }
        )
    )
    return 0 if all(c == 0 for c in codes) else 1


if __name__ == "__main__":
    sys.exit(main())
