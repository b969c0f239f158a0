"""BytePS: servers as ``bpslaunch`` starts them, workers with BytePS's MXNet plugin on GPUs."""

from __future__ import annotations

import os
from typing import Mapping, Sequence

from ..config.settings import Settings
from ..remote.environ import PYTHON
from ..runs.output import CommWindow
from ..runs.plan import Node, Plan, PlanError, RolePlan
from .base import BackendBase, WorkerProcess, workload_command
from .byteps_env import BytePSEnvError, TraceWindow, bpslaunch_node_env, server_env, worker_env


def _trace_window(settings: Settings, directory: str) -> "TraceWindow | None":
    """The trace window of one worker node (its directory relative to the role's log dir)."""
    if settings.trace is None:
        return None
    try:
        window = TraceWindow(settings.trace[0], settings.trace[1], directory)
        window.check_for_trainer(settings.steps)
    except BytePSEnvError as exc:
        raise PlanError(f"setting 'trace' from {settings.origins.get('trace')}: {exc}") from None
    return window


class BytePSBackend(BackendBase):
    """Scheduler and servers import ``byteps.server`` (builds without CUDA); each worker node runs
    one process per GPU with BytePS's ``DistributedTrainer``, the variables ``bpslaunch`` gives."""

    name = "byteps"
    needs_gpu_workers = True

    def check(self, settings: Settings) -> None:
        self.check_dtype(settings)
        _trace_window(settings, "trace")

    def server_command(self) -> Sequence[str]:
        return (PYTHON, "-c", "import byteps.server")

    def server_env(self, settings: Settings) -> Mapping[str, str]:
        # omp_threads sets a server's summation threads too (BytePS's cpu_reducer, default 4),
        # so the key's omp_threads is what every role got; a trick may still set its own
        return {**server_env(num_workers=settings.workers), "BYTEPS_OMP_THREAD_PER_GPU": str(settings.omp_threads)}

    def worker_command(self, settings: Settings) -> Sequence[str]:
        """The workload; with ``launch=bpslaunch``, bpslaunch running it once per GPU of the node."""
        if settings.launch == "bpslaunch":
            return (
                PYTHON,
                "-m",
                "pytest_bpsperf.remote.bpslaunch",
                *workload_command(settings, self.name, per_rank_records=True),
            )
        return workload_command(settings, self.name)

    def worker_processes(
        self, settings: Settings, worker_id: int, node: "Node", gpus: Sequence[int]
    ) -> Sequence[WorkerProcess]:
        """One process per GPU (``direct``), or one bpslaunch per node that spawns them (``bpslaunch``)."""
        trace = _trace_window(settings, f"trace/worker-{worker_id}")
        ids = sorted(gpus)
        if settings.launch == "bpslaunch":
            # one actor holds every GPU of the node; bpslaunch spawns a process per id
            return (
                WorkerProcess(
                    "",
                    bpslaunch_node_env(
                        worker_id=worker_id, local_size=len(ids), num_workers=settings.workers, gpus=ids, trace=trace
                    ),
                    processes=len(ids),
                    gpus=len(ids),
                ),
            )
        return tuple(
            WorkerProcess(
                f".{rank}",
                worker_env(
                    worker_id=worker_id,
                    local_rank=rank,
                    local_size=len(ids),
                    num_workers=settings.workers,
                    gpus=ids,
                    trace=trace,
                ),
                gpus=1,
            )
            for rank in range(len(ids))
        )

    def probe(self) -> "str | None":
        """Why BytePS cannot train on this node: its MXNet plugin does not import, or the node's MXNet build
        cannot run on its GPUs (:func:`pytest_bpsperf.remote.gpu_stack.stack_problem`); None when it can."""
        try:
            import byteps.mxnet  # noqa: F401
        except Exception as exc:  # noqa: BLE001 - any import failure means "not usable"
            from ..remote.preflight import mxnet_missing_reason

            reason = mxnet_missing_reason()  # this node's Python has no MXNet wheels
            return f"byteps.mxnet does not import: {type(exc).__name__}: {exc}" + (f" ({reason})" if reason else "")
        from ..remote.gpu_stack import stack_problem

        return stack_problem()

    @staticmethod
    def _local(role: "RolePlan") -> "tuple[int | None, int]":
        """(local rank, local size) of a worker role; the rank is None for a bpslaunch role (all ranks)."""
        env = role.env
        devices = [g for g in str(env.get("NVIDIA_VISIBLE_DEVICES", "")).split(",") if g]
        size = int(env.get("BYTEPS_LOCAL_SIZE") or len(devices) or 1)
        rank = env.get("BYTEPS_LOCAL_RANK")
        return (int(rank) if rank is not None else None), size

    def artifact_dirs(self, role: "RolePlan") -> Sequence[str]:
        """The trace of a node's root local rank (the last one): only it pushes and pulls.

        With ``launch=direct`` only that rank's role fetches it; a bpslaunch role
        (all the node's ranks) fetches that rank's directory alone.
        """
        if role.env.get("BYTEPS_TRACE_ON") != "1":
            return ()
        rank, size = self._local(role)
        if rank is not None and rank != size - 1:
            return ()
        return (f"{role.env['BYTEPS_TRACE_DIR']}/{size - 1}",)

    def collect(self, plan: "Plan", files: Mapping[str, Mapping[str, str]]) -> "tuple[CommWindow, ...]":
        """PUSH/PULL per step of each traced worker node, from its root local rank's comm.json."""
        from .byteps_timeline import TRACE_FILE, TraceError, tensor_times, timeline_from_files

        windows: dict = {}
        for role in plan.roles:
            for rank_dir in self.artifact_dirs(role):
                start = int(role.env["BYTEPS_TRACE_START_STEP"])
                found = {
                    p: t
                    for p, t in files.get(role.name, {}).items()
                    if p.replace(os.sep, "/").endswith(f"{rank_dir}/{TRACE_FILE}")
                }
                windows.setdefault(role.env["BYTEPS_TRACE_DIR"], (start, {}))[1].update(found)
        out = []
        for trace_dir, (start, found) in sorted(windows.items()):
            try:
                summary = timeline_from_files(found, start).summary()
            except TraceError as exc:
                out.append(CommWindow(name=trace_dir, error=str(exc)))
                continue
            # per tensor too: which layer's gradients a slower push/pull wait is made of (judge/breakdown.py)
            out.append(
                CommWindow(
                    name=trace_dir,
                    steps=summary.steps,
                    push_s=summary.mean_push_s,
                    pull_s=summary.mean_pull_s,
                    detail={**summary.as_dict(), "tensors": tensor_times(found)},
                )
            )
        return tuple(out)


class PushPullProbe(BytePSBackend):
    """The preflight of a BytePS session: a scheduler, one server and one worker process on one GPU,
    which checks the node's shared memory and push_pulls one small tensor through them (what every
    training step does first): :mod:`pytest_bpsperf.remote.byteps_preflight`."""

    def worker_command(self, settings: Settings) -> Sequence[str]:
        from ..remote.environ import RECORDS

        return (PYTHON, "-m", "pytest_bpsperf.remote.byteps_preflight", RECORDS)

    def worker_processes(
        self, settings: Settings, worker_id: int, node: "Node", gpus: Sequence[int]
    ) -> Sequence[WorkerProcess]:
        return super().worker_processes(
            settings.with_values(launch="direct", trace=None), worker_id, node, sorted(gpus)[:1]
        )
