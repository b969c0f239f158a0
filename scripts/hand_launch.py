"""Launch the perf workload by hand (no Ray, no plugin), as a user would.

The reference for the harness's overhead: the same commands the plugin's roles
run, started without Ray on this machine. Prints one JSON line with the
aggregate steady-state img/s, measured the same way as the plugin.

- ``--backend mxnet`` (default): scheduler, server and workers with DMLC_* variables, plain subprocesses
  on 127.0.0.1.
- ``--backend torch``: ``torchrun --standalone --nproc-per-node WORKERS`` running the workload's DDP ranks
  (torchrun's own rendezvous; gloo on the CPU, NCCL with ``--device gpu``, one rank per GPU).

    .venv/bin/python scripts/hand_launch.py --workers 2 --steps 20 --batch-size 8 --image-size 32 \
        --omp-threads 2 [--passive] [--backend torch [--device gpu] [--dtype bfloat16]]
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
from pytest_bpsperf.remote.environ import rank_records_path
from pytest_bpsperf.remote.roles import hold_port
from pytest_bpsperf.runs.output import WorkerRecords


def workload(args: argparse.Namespace, records: str, backend: str) -> "list[str]":
    """The workload's command line, as the plugin's plan gives it to the workers."""
    command = ["-m", "pytest_bpsperf.remote.workload", "--backend", backend, "--records", records]
    command += ["--steps", str(args.steps), "--batch-size", str(args.batch_size)]
    command += ["--image-size", str(args.image_size), "--dtype", args.dtype]
    if args.sync_every != 1:
        command += ["--sync-every", str(args.sync_every)]
    return command


def launch_mxnet(args: argparse.Namespace, tmp: str, base: "dict[str, str]") -> "tuple[list[int], list[str]]":
    """Scheduler, server and workers of MXNet's parameter server; (exit codes, records files)."""
    held = hold_port("127.0.0.1")  # held (SO_REUSEADDR) for this script's life: the scheduler binds beside it
    base = {
        **base,
        "DMLC_PS_ROOT_URI": "127.0.0.1",
        "DMLC_PS_ROOT_PORT": str(held.getsockname()[1]),
        "DMLC_NODE_HOST": "127.0.0.1",
        "DMLC_NUM_WORKER": str(args.workers),
        "DMLC_NUM_SERVER": "1",
    }
    procs = [
        # as the omp-passive trick: the scheduler keeps the default wait policy
        subprocess.Popen(
            [sys.executable, "-c", "import mxnet"],
            env={**{k: v for k, v in base.items() if k != "OMP_WAIT_POLICY"}, "DMLC_ROLE": "scheduler"},
        ),
        subprocess.Popen([sys.executable, "-c", "import mxnet"], env={**base, "DMLC_ROLE": "server"}),
    ]
    records = [os.path.join(tmp, f"worker-{i}.jsonl") for i in range(args.workers)]
    for path in records:
        procs.append(
            subprocess.Popen([sys.executable, *workload(args, path, "mxnet")], env={**base, "DMLC_ROLE": "worker"})
        )
    return [proc.wait() for proc in procs], records


def launch_torch(args: argparse.Namespace, tmp: str, base: "dict[str, str]") -> "tuple[list[int], list[str]]":
    """The DDP ranks under torchrun on this machine; (exit codes, records files: one per local rank)."""
    path = os.path.join(tmp, "worker.jsonl")
    env = {**base, "GLOO_SOCKET_IFNAME": "lo", "NCCL_SOCKET_IFNAME": "lo"}
    if args.device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes", "1"]
    command += ["--nproc-per-node", str(args.workers)]
    command += [*workload(args, path, "torch"), "--records-per-rank"]
    code = subprocess.run(command, env=env, check=False).returncode
    return [code], [rank_records_path(path, str(k)) for k in range(args.workers)]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--backend", choices=("mxnet", "torch"), default="mxnet")
    p.add_argument("--device", choices=("cpu", "gpu"), default="cpu", help="torch: gloo on CPUs, NCCL on GPUs")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--sync-every", type=int, default=1)
    p.add_argument("--dtype", default="float32")
    p.add_argument("--omp-threads", type=int, default=2)
    p.add_argument("--passive", action="store_true", help="OMP_WAIT_POLICY=PASSIVE on every role")
    args = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="bpsperf-hand-")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "DMLC_"))}
    base["OMP_NUM_THREADS"] = str(args.omp_threads)
    if args.passive:
        base["OMP_WAIT_POLICY"] = "PASSIVE"
    t0 = time.perf_counter()
    codes, records = (launch_torch if args.backend == "torch" else launch_mxnet)(args, tmp, base)
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
                "backend": args.backend,
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
