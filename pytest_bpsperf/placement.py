"""Placement: which node each role of a run goes to.

A :class:`PlacementStrategy` turns the cluster's nodes and the topology
settings into a :class:`Placement` (the scheduler's node, one node per server
node, one per worker node). The plan then gives each role its processes and
environment. :class:`NodeKindPlacement` is parameter-server practice: workers
on GPU nodes (every node when the backend trains on CPU and there is no GPU),
servers and the scheduler on CPU-only nodes, sharing nodes where there are none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

from .backends import Backend, PlanError
from .settings import Settings


@dataclass(frozen=True)
class Node:
    """One machine of the cluster as the planner sees it."""

    node_id: str
    ip: str
    cpus: float
    gpus: int = 0
    label: str = ""

    @property
    def name(self) -> str:
        """Short readable name for logs and reports."""
        return self.label or self.node_id[:8]


@dataclass(frozen=True)
class Placement:
    """A node for every role of one run (before tricks add servers or GPUs add processes)."""

    scheduler: Node
    servers: "tuple[Node, ...]"  # one per server node
    workers: "tuple[Node, ...]"  # one per worker node


class PlacementStrategy(Protocol):
    """Turns nodes and topology settings into a :class:`Placement`."""

    def place(self, nodes: Sequence[Node], settings: Settings, backend: Backend, *,
              with_workers: bool = True) -> Placement:
        """Place one run; raise :class:`PlanError` naming what is missing when it cannot."""


class NodeKindPlacement:
    """Workers on GPU nodes, servers and the scheduler on CPU-only nodes (or shared where there are none)."""

    def place(self, nodes: Sequence[Node], settings: Settings, backend: Backend, *,
              with_workers: bool = True) -> Placement:
        if not nodes:
            raise PlanError("the Ray cluster has no alive nodes")
        gpu_nodes = [n for n in nodes if n.gpus > 0]
        cpu_nodes = [n for n in nodes if n.gpus == 0]
        if not with_workers:
            workers: list = []
        elif backend.needs_gpu_workers:
            if len(gpu_nodes) < settings.workers:
                raise PlanError(
                    f"backend {backend.name} needs {settings.workers} GPU worker node(s) (setting 'workers'), "
                    f"the cluster has {len(gpu_nodes)}: " + ", ".join(f"{n.name} ({n.gpus} GPU)" for n in nodes)
                )
            workers = gpu_nodes[: settings.workers]
        else:
            # Workers belong on GPU nodes (servers need the CPU nodes' cores); with
            # no GPU in the cluster, a CPU backend trains on any node.
            pool = gpu_nodes or cpu_nodes
            workers = [pool[i % len(pool)] for i in range(settings.workers)]
        server_pool = cpu_nodes or list(nodes)
        servers = tuple(server_pool[i % len(server_pool)] for i in range(settings.server_nodes))
        return Placement(scheduler=server_pool[0], servers=servers, workers=tuple(workers))
