"""MXNet's own parameter server: the ``dist_sync`` kvstore. Runs anywhere, CPU included."""

from __future__ import annotations

from typing import Mapping, Sequence

from ..config.settings import DEVICE_DEFAULTS, Settings
from ..remote.environ import PYTHON
from ..runs.plan import Node
from .base import BackendBase, WorkerProcess


class MXNetBackend(BackendBase):
    """Scheduler and servers are a Python that imports mxnet with ``DMLC_ROLE`` set (its import
    runs the ps-lite node); one worker process per worker node trains on a ``dist_sync`` kvstore."""

    name = "mxnet"
    needs_gpu_workers = False

    def server_command(self) -> Sequence[str]:
        return (PYTHON, "-c", "import mxnet")

    def worker_processes(
        self, settings: Settings, worker_id: int, node: "Node", gpus: Sequence[int]
    ) -> Sequence[WorkerProcess]:
        return (WorkerProcess(""),)

    def workload_defaults(self, device: str) -> Mapping[str, int]:
        """CPU sizes and two workers on any node: MXNet's dist_sync workers train on the CPU (GPU nodes
        included), several to a node where needed."""
        return {**DEVICE_DEFAULTS["cpu"], "workers": 2}
