"""MXNet's own parameter server: the ``dist_sync`` kvstore. Runs anywhere, CPU included."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from ..remote.environ import PYTHON
from ..settings import Settings
from .base import BackendBase, WorkerProcess

if TYPE_CHECKING:  # pragma: no cover
    from ..placement import Node


class MXNetBackend(BackendBase):
    """Scheduler and servers are a Python that imports mxnet with ``DMLC_ROLE`` set (its import
    runs the ps-lite node); one worker process per worker node trains on a ``dist_sync`` kvstore."""

    name = "mxnet"
    needs_gpu_workers = False

    def server_command(self) -> Sequence[str]:
        return (PYTHON, "-c", "import mxnet")

    def worker_processes(self, settings: Settings, worker_id: int, node: "Node",
                         gpus: Sequence[int]) -> Sequence[WorkerProcess]:
        return (WorkerProcess(""),)
