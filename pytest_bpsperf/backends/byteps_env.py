"""BytePS role environments: what ``bpslaunch`` would give each process.

The plugin starts BytePS roles itself (one process per role, under a Ray
actor) instead of through ``bpslaunch``; this module reproduces the variables
that ``bpslaunch`` (BytePS 0.2.5, ``launcher/launch.py``) and BytePS's C++ core
expect, so that a role started here behaves like one started by hand:

- a worker node runs one process per GPU listed in ``NVIDIA_VISIBLE_DEVICES``,
  each with ``BYTEPS_LOCAL_RANK`` (0..n-1) and ``BYTEPS_LOCAL_SIZE`` (n), and
  the node's ``DMLC_WORKER_ID``;
- a job with one worker node is only distributed (its worker talks to the
  servers) with ``BYTEPS_FORCE_DISTRIBUTED=1``; bpslaunch also starts no
  server for such a job without it;
- bpslaunch pins workers to NUMA cores unless ``BYTEPS_NUMA_ON=0``; here it is
  off unless asked for (its automatic split crashes on small machines);
- servers run ``BYTEPS_SERVER_ENGINE_THREAD`` engine threads (C++ default 4);
- tracing: ``BYTEPS_TRACE_ON=1`` plus the step window and the directory under
  which each worker writes ``<dir>/<local_rank>/comm.json``;
- ``BYTEPS_SOCKET_PATH``: the directory of the node's local ranks' Unix sockets, one
  per run and worker node. BytePS names them ``socket_send_<rank>``/``socket_recv_<rank>``
  there (``/tmp`` by default) and unlinks whatever it finds first
  (byteps/common/communicator.cc:99-110, 146-147), so two jobs on one node would take
  each other's sockets. (BytePS 0.2.5 has no such variable for its shared memory, whose
  names are fixed: the preflight refuses a node where another job holds them.)

DMLC_ROLE, the ps-lite counts, the scheduler's address and DMLC_NODE_HOST come
from the plan, not from here. Plain Python, no BytePS import.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence

from ..remote.environ import SCRATCH
from ..remote.preflight import server_library

#: C++ default of BYTEPS_SERVER_ENGINE_THREAD (byteps/server/server.cc).
DEFAULT_ENGINE_THREADS = 4

#: With gluon's DistributedTrainer every parameter is broadcast exactly once
#: (one push_pull of "parameter_<i>"), so its push_pull count is only ever 0 or
#: 1. BytePS registers a tensor for the trace when that count equals
#: start_step - 1 (checked at its first push_pull and after each one) and
#: writes comm.json once every registered tensor reached end_step. With
#: start_step 1 or 2 the parameters are registered and never get there: no
#: comm.json, silently. (Read from BytePS 0.2.5's global.cc/core_loops.cc.)
TRAINER_MIN_START_STEP = 3


class BytePSEnvError(ValueError):
    """Arguments that BytePS would reject (or silently misbehave with); the message says why."""


@dataclass(frozen=True)
class TraceWindow:
    """BytePS communication tracing for the push_pulls ``start_step``..``end_step``.

    BytePS counts completed push_pulls of each tensor from 1; one training step
    is one push_pull per gradient, so the window covers the training steps with
    0-based indices ``start_step - 1`` .. ``end_step - 1``, and comm.json is
    written once every traced tensor reached ``end_step``. ``dir`` is the
    trace root: each worker process writes ``<dir>/<local_rank>/comm.json``;
    a relative path is relative to the role's working directory (its log dir).
    Give every worker node its own ``dir``: local ranks repeat across nodes.
    """

    start_step: int
    end_step: int
    dir: str

    def __post_init__(self) -> None:
        for name in ("start_step", "end_step"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise BytePSEnvError(f"trace window {name} must be an integer, not {value!r}")
        # BytePS aborts the worker (BPS_CHECK in SetProfileFlag) unless
        # start >= 1 and end > start; check here, where the message is clear.
        if self.start_step < 1:
            raise BytePSEnvError(
                f"trace window start_step must be >= 1 (BytePS aborts the worker otherwise), not {self.start_step}"
            )
        if self.end_step <= self.start_step:
            raise BytePSEnvError(
                f"trace window end_step must be greater than start_step ({self.start_step}), not {self.end_step}"
            )
        if not isinstance(self.dir, str) or not self.dir.strip():
            # Without an explicit directory the C++ side writes to ./trace/<rank>,
            # which nobody creates, and the write fails silently.
            raise BytePSEnvError("trace window dir must be a non-empty path")

    @property
    def steps(self) -> int:
        """Number of traced steps (both ends included)."""
        return self.end_step - self.start_step + 1

    def check_for_trainer(self, training_steps: int) -> None:
        """Raise :class:`BytePSEnvError` if a DistributedTrainer run of ``training_steps`` writes no trace."""
        if self.start_step < TRAINER_MIN_START_STEP:
            raise BytePSEnvError(
                f"trace window starts at step {self.start_step}: with DistributedTrainer it must start at "
                f"step {TRAINER_MIN_START_STEP} or later, or the once-broadcast parameters keep BytePS "
                "from ever writing comm.json"
            )
        if training_steps < self.end_step:
            raise BytePSEnvError(
                f"trace window ends at step {self.end_step} but the run trains only {training_steps} "
                "steps: comm.json is written only after every tensor reached end_step"
            )

    def rank_dir(self, local_rank: int) -> str:
        """Directory the worker with ``local_rank`` writes ``comm.json`` into."""
        return os.path.join(self.dir, str(local_rank))

    def env(self) -> dict:
        """The BYTEPS_TRACE_* variables of this window."""
        return {
            "BYTEPS_TRACE_ON": "1",
            "BYTEPS_TRACE_START_STEP": str(self.start_step),
            "BYTEPS_TRACE_END_STEP": str(self.end_step),
            "BYTEPS_TRACE_DIR": self.dir,
        }


def socket_path(worker_id: int) -> str:
    """``BYTEPS_SOCKET_PATH`` of worker node ``worker_id``: a directory of its own in the run's scratch
    directory on the node (the role actor creates it), so no other job or worker node shares it."""
    return f"{SCRATCH}/byteps-w{worker_id}"


def _check_int(name: str, value: object, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise BytePSEnvError(f"{name} must be an integer >= {low}, not {value!r}")
    return value


def worker_env(
    *,
    worker_id: int,
    local_rank: int,
    local_size: int,
    num_workers: int,
    gpus: Sequence[int] | None = None,
    numa: bool = False,
    trace: TraceWindow | None = None,
) -> dict:
    """BytePS variables of one worker process (local rank ``local_rank`` of node ``worker_id``).

    ``gpus`` are the node's GPU ids, one per local rank (default
    ``0..local_size-1``); they become ``NVIDIA_VISIBLE_DEVICES`` (what
    bpslaunch counts local ranks from) and ``CUDA_VISIBLE_DEVICES`` (so that
    BytePS's ``cudaSetDevice(local_rank)`` lands on ``gpus[local_rank]``
    outside a container too). ``numa`` sets ``BYTEPS_NUMA_ON=1``, which only a
    command run through bpslaunch acts on. ``trace`` adds the tracing variables.
    """
    _check_int("num_workers", num_workers, 1)
    _check_int("worker_id", worker_id, 0)
    _check_int("local_size", local_size, 1)
    _check_int("local_rank", local_rank, 0)
    if worker_id >= num_workers:
        raise BytePSEnvError(f"worker_id {worker_id} is out of range for {num_workers} worker node(s)")
    if local_rank >= local_size:
        raise BytePSEnvError(f"local_rank {local_rank} is out of range for local_size {local_size}")
    if gpus is None:
        devices = list(range(local_size))
    else:
        devices = list(gpus)
        for gpu in devices:
            _check_int("every GPU id", gpu, 0)
        if len(set(devices)) != len(devices):
            raise BytePSEnvError(f"GPU ids must be distinct, not {devices}")
        if len(devices) != local_size:
            # bpslaunch derives the local size from this list; they must agree.
            raise BytePSEnvError(
                f"{len(devices)} GPU id(s) {devices} for local_size {local_size}: one GPU per local rank"
            )
    if trace is not None and not isinstance(trace, TraceWindow):
        raise BytePSEnvError(f"trace must be a TraceWindow, not {type(trace).__name__}")

    visible = ",".join(str(g) for g in devices)
    env = {
        "DMLC_WORKER_ID": str(worker_id),
        "BYTEPS_LOCAL_RANK": str(local_rank),
        "BYTEPS_LOCAL_SIZE": str(local_size),
        "NVIDIA_VISIBLE_DEVICES": visible,
        "CUDA_VISIBLE_DEVICES": visible,
        "BYTEPS_NUMA_ON": "1" if numa else "0",
        "BYTEPS_SOCKET_PATH": socket_path(worker_id),
    }
    if num_workers == 1:
        env["BYTEPS_FORCE_DISTRIBUTED"] = "1"
    if trace is not None:
        env.update(trace.env())
    return env


def bpslaunch_node_env(
    *,
    worker_id: int,
    local_size: int,
    num_workers: int,
    gpus: "Sequence[int] | None" = None,
    trace: "TraceWindow | None" = None,
) -> dict:
    """What a user exports for ``bpslaunch`` on a worker node: :func:`worker_env` without the per-rank part.

    bpslaunch adds ``BYTEPS_LOCAL_RANK``/``BYTEPS_LOCAL_SIZE`` per process and
    pins each to NUMA cores by default: ``BYTEPS_NUMA_ON`` is left unset, as a
    user leaves it (a trick may set it to 0, or set ``BYTEPS_VISIBLE_CPU_CORES``).
    """
    env = worker_env(
        worker_id=worker_id, local_rank=0, local_size=local_size, num_workers=num_workers, gpus=gpus, trace=trace
    )
    for per_rank in ("BYTEPS_LOCAL_RANK", "BYTEPS_LOCAL_SIZE", "BYTEPS_NUMA_ON"):
        del env[per_rank]
    return env


def server_env(*, num_workers: int, engine_threads: int = DEFAULT_ENGINE_THREADS) -> dict:
    """BytePS variables of one server process.

    ``BYTEPS_SERVER_ENGINE_THREAD`` is the number of engine threads (BytePS
    aborts below 1). bpslaunch starts a server only when
    ``BYTEPS_FORCE_DISTRIBUTED=1`` or ``num_workers > 1``; a one-worker job
    needs the variable. It is set for every job: the C++ server does not read
    it, so it only makes the server's environment valid for bpslaunch whatever
    ``num_workers`` is (checked to be >= 1).
    """
    _check_int("num_workers", num_workers, 1)
    _check_int("engine_threads", engine_threads, 1)
    return {
        "BYTEPS_SERVER_ENGINE_THREAD": str(engine_threads),
        "BYTEPS_FORCE_DISTRIBUTED": "1",
    }


__all__ = [
    "BytePSEnvError",
    "DEFAULT_ENGINE_THREADS",
    "TRAINER_MIN_START_STEP",
    "TraceWindow",
    "bpslaunch_node_env",
    "server_env",
    "server_library",
    "socket_path",
    "worker_env",
]
