"""PyTorch DistributedDataParallel: workers only, gloo on CPU nodes, NCCL on GPU nodes.

The stack that trains on the GPUs made since 2022 (Ada, Hopper, Blackwell),
where neither MXNet 1.9 nor BytePS 0.2.5's plugins build or run. There is no
parameter server: every worker process is a rank of one process group, the
first rank listens for the others (``MASTER_ADDR``/``MASTER_PORT``, as
``torchrun`` sets them, on the address Ray knows its node by) and gradients
are averaged by allreduce, overlapped with backward as DDP does. On a node
with GPUs each GPU Ray reserved is one rank (NCCL); elsewhere a worker node
is one rank on the CPU (gloo). The model is torchvision's (``resnet50``: v1.5,
another model than gluoncv's ``resnet50_v2``, so its baseline keys are its own).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..config.settings import DEVICE_DEFAULTS, Settings
from ..runs.plan import Node, PlanError
from .base import BackendBase, WorkerProcess

#: torch.distributed's rendezvous variables, set on every rank: the first rank's address and port.
TORCH_RENDEZVOUS = ("MASTER_ADDR", "MASTER_PORT")

#: What the torch backend trains when ``model`` is not set: torchvision's ResNet-50 (v1.5).
DEFAULT_MODEL = "resnet50"


class TorchBackend(BackendBase):
    """DDP ranks under Ray: one process per worker node on CPUs, one per reserved GPU on GPU nodes."""

    name = "torch"
    needs_gpu_workers = False
    has_servers = False
    gpu_when_present = True
    rendezvous = TORCH_RENDEZVOUS
    framework = "torch"

    def check(self, settings: Settings) -> None:
        super().check(settings)
        if settings.data != "synthetic":
            raise PlanError(
                f"setting 'data' ({settings.data}, from {settings.origins.get('data')}) is an MXNet .rec, which "
                "backend torch does not read; accepted: synthetic (or your own data in an entry point)"
            )
        if settings.model == "resnet50_v2" and settings.origins.get("model") not in (None, "default"):
            raise PlanError(
                f"setting 'model' (resnet50_v2, from {settings.origins.get('model')}) is gluoncv's ResNet-50 v2, "
                f"which backend torch does not have; accepted: a torchvision model such as {DEFAULT_MODEL} (v1.5)"
            )

    def server_command(self) -> Sequence[str]:
        return ()

    def worker_processes(
        self, settings: Settings, worker_id: int, node: "Node", gpus: Sequence[int]
    ) -> Sequence[WorkerProcess]:
        """One rank per GPU Ray reserved on the node (that GPU alone visible), or one rank on the CPU.

        Ranks are numbered worker node by worker node (every worker node has the same number of
        GPUs: the placement sees to it), as ``torchrun`` numbers them node by node.
        """
        ids = sorted(gpus)
        local = max(1, len(ids))
        world = settings.workers * local
        out = []
        for k in range(local):
            env = {
                "RANK": str(worker_id * local + k),
                "WORLD_SIZE": str(world),
                "LOCAL_RANK": str(k),
                "LOCAL_WORLD_SIZE": str(local),
            }
            if ids:
                # the process sees its GPU alone, as cuda:0 (the role actor drops Ray's own variable)
                env.update(CUDA_VISIBLE_DEVICES=str(ids[k]), NVIDIA_VISIBLE_DEVICES=str(ids[k]))
            out.append(WorkerProcess(f".{k}" if ids else "", env, gpus=1 if ids else 0))
        return tuple(out)

    def probe(self) -> "str | None":
        """Why torch cannot train on the GPUs of this node (it is probed on GPU nodes only): torch or
        torchvision does not import, or this torch build sees no CUDA device; None when it can."""
        try:
            import torch
            import torchvision  # noqa: F401
        except Exception as exc:  # noqa: BLE001 - any import failure means "not usable"
            return f"torch and torchvision do not import: {type(exc).__name__}: {exc}"
        if not torch.cuda.is_available():
            return f"torch {torch.__version__} sees no CUDA device here (torch.cuda.is_available() is False)"
        return None

    def workload_defaults(self, device: str) -> Mapping[str, Any]:
        """The device kind's sizes; two workers on CPUs (a distributed run on one machine), one worker
        node per GPU node on GPUs; torchvision's ResNet-50."""
        defaults: "dict[str, Any]" = {**DEVICE_DEFAULTS[device], "model": DEFAULT_MODEL}
        if device == "cpu":
            defaults["workers"] = 2
        return defaults
