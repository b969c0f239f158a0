"""A complete backend of its own, written against the public face only (docs/writing-a-backend.md).

Its scheduler and servers are Python processes that say they are up and exit;
each worker node runs two worker processes that "train" by sleeping and write
the records format. Everything else is the plugin's: placement, the plan, Ray
actors, timeouts, teardown, measurement, verdicts and reports.

Use it from a conftest.py::

    import toy_backend  # registers the backend "toy"

and select it with ``bpsperf_backend = toy`` (or ``--bpsperf-backend=toy``).
``make test`` runs it (tests/e2e/test_e2e_backend_plugin.py).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import pytest_bpsperf
from pytest_bpsperf import PYTHON, RECORDS, BackendBase, Node, PlanError, Settings, WorkerProcess

#: The worker: argv[1] is its records file (the RECORDS placeholder), argv[2] the steps to train.
WORKER = r"""
import json, os, sys, time
out = open(sys.argv[1], "a")

def write(**record):
    out.write(json.dumps(record) + "\n")
    out.flush()  # the live progress and the stall watchdog read the file while the worker runs

write(event="start", batch_size=4, env={k: v for k, v in os.environ.items() if k.startswith(("DMLC_", "TOY_"))})
for step in range(int(sys.argv[2])):
    t0 = time.perf_counter()
    time.sleep(0.02)  # one "training step"
    write(event="step", step=step, total_s=time.perf_counter() - t0, images=4)
write(event="end", steps=int(sys.argv[2]))
"""


class ToyBackend(BackendBase):
    """Two worker processes per worker node, CPU only; servers that exit at once."""

    name = "toy"
    needs_gpu_workers = False

    def check(self, settings: Settings) -> None:
        super().check(settings)  # BytePS-only settings (trace, launch=bpslaunch, float16) are refused
        if settings.steps < 2:
            raise PlanError(f"backend toy needs at least 2 steps, not {settings.steps}")

    def server_command(self) -> Sequence[str]:
        return (PYTHON, "-c", "import os; print('toy', os.environ['DMLC_ROLE'], 'up')")

    def worker_command(self, settings: Settings) -> Sequence[str]:
        return (PYTHON, "-c", WORKER, RECORDS, str(settings.steps))

    def worker_processes(
        self, settings: Settings, worker_id: int, node: Node, gpus: Sequence[int]
    ) -> Sequence[WorkerProcess]:
        return tuple(WorkerProcess(f".{rank}", {"TOY_RANK": str(rank)}) for rank in range(2))

    def workload_defaults(self, device: str) -> Mapping[str, int]:
        return {"steps": 6, "batch_size": 4, "image_size": 32}


pytest_bpsperf.register(ToyBackend())
