"""The backend interface: what differs between parameter-server implementations.

A backend says how its scheduler and servers start, what each worker process
of a worker node gets, which module the workers run, whether it can run on a
node (a probe that runs there), what it collects from the nodes after a run,
and its default workload sizes for a device kind. Everything else (placement,
tricks, Ray, measurement, verdicts) is the same for every backend.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ..config.settings import DEVICE_DEFAULTS, Settings
from ..planning.model import Backend, CommWindow, Plan, PlanError, RolePlan, WorkerProcess
from ..planning.plan import workload_command

__all__ = ["Backend", "BackendBase", "PlanError", "WorkerProcess", "workload_command"]


class BackendBase:
    """Defaults shared by the shipped backends: the shipped workload, nothing to collect."""

    name = ""
    needs_gpu_workers = False

    def check(self, settings: Settings) -> None:
        if settings.trace is not None:
            raise PlanError(
                f"setting 'trace' ({settings.trace[0]}:{settings.trace[1]}, from {settings.origins.get('trace')}) "
                f"traces BytePS's push/pull and needs backend byteps, not {self.name}"
            )
        if settings.launch != "direct":
            raise PlanError(
                f"setting 'launch' ({settings.launch}, from {settings.origins.get('launch')}) starts BytePS "
                f"workers through bpslaunch and needs backend byteps, not {self.name}"
            )
        if settings.dtype == "float16" and not self.needs_gpu_workers:
            raise PlanError(
                f"setting 'dtype' (float16, from {settings.origins.get('dtype')}) needs GPU workers: backend "
                f"{self.name} trains on CPU, where MXNet has no FP16 gemm; use float32 or backend byteps"
            )

    def server_env(self, settings: Settings) -> Mapping[str, str]:
        return {}

    def worker_command(self, settings: Settings) -> Sequence[str]:
        return workload_command(settings, self.name)

    def probe(self) -> "str | None":
        return None

    def artifact_dirs(self, role: "RolePlan") -> Sequence[str]:
        return ()

    def collect(self, plan: "Plan", files: Mapping[str, Mapping[str, str]]) -> "tuple[CommWindow, ...]":
        return ()

    def workload_defaults(self, device: str) -> Mapping[str, int]:
        return DEVICE_DEFAULTS[device]
