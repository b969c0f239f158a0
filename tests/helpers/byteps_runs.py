"""BytePS runs: a bpslaunch plan of one worker node, and what GPU training needs (whether this machine has it)."""

from __future__ import annotations

import subprocess
import sys

from pytest_bpsperf import backends
from pytest_bpsperf.backends.byteps_env import server_library
from pytest_bpsperf.config.settings import Hardware, Source, resolve
from pytest_bpsperf.config.tricks import Trick
from pytest_bpsperf.planning.planner import make_plan
from pytest_bpsperf.runs.plan import Node


def bpslaunch_plan(gpus: int, launch: str = "bpslaunch", trick: "Trick | None" = None):
    """The plan of one worker node with ``gpus`` GPUs (and a CPU node), started by ``launch``."""
    values = {
        "backend": "byteps",
        "launch": launch,
        "workers": "1",
        "steps": "8",
        "batch_size": "4",
        "image_size": "32",
    }
    settings = resolve([Source("cli", "test", values)], Hardware(gpus=gpus, cores=2), backends.workload_defaults)
    nodes = [Node("cpu", "127.0.0.1", 2, 0, "cpu"), Node("gpu", "127.0.0.1", 2, gpus, "gpu")]
    return make_plan(
        settings, trick or Trick("default"), nodes, backend=backends.get("byteps"), run_id="bpslaunch-test"
    )


GPU_INI = """
[pytest]
bpsperf_backend = byteps
bpsperf_workers = 1
bpsperf_steps = 12
bpsperf_batch_size = 16
bpsperf_image_size = 64
bpsperf_omp_threads = 4
bpsperf_scaling = off
"""


def byteps_mxnet_problem() -> "str | None":
    """Why BytePS's MXNet worker cannot run here, or None."""
    if Hardware.detect().gpus == 0:
        return "no CUDA GPU"
    proc = subprocess.run(
        [sys.executable, "-c", "import byteps.mxnet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        universal_newlines=True,
        timeout=300,
    )
    if proc.returncode != 0:
        return "byteps.mxnet does not import: " + (proc.stdout.strip().splitlines() or ["?"])[-1]
    if server_library() is None:
        return "byteps.server is not installed"
    return None
