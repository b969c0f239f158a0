"""Where a run's processes go: nodes, placements, bundles, role plans, plans, and the error of a plan.

Every later step speaks it: the placement strategy and the planner produce
these objects, backends (:class:`pytest_bpsperf.backends.Backend`) are called
with them, and the launcher runs a :class:`Plan`. Pure data; it imports only
the settings it is typed over.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ..config.tricks import Trick

#: Ray resource prefix that names a node's accelerator model (``accelerator_type:V100``).
ACCELERATOR_PREFIX = "accelerator_type:"


@dataclass(frozen=True)
class Node:
    """One machine of the cluster as the planner sees it."""

    node_id: str
    ip: str
    cpus: float
    gpus: int = 0
    label: str = ""
    resources: Mapping[str, float] = field(default_factory=dict, hash=False, compare=False)

    @property
    def name(self) -> str:
        """Short readable name for logs and reports."""
        return self.label or self.node_id[:8]

    @property
    def accelerator(self) -> "str | None":
        """The GPU model Ray knows for this node (its ``accelerator_type:*`` resource), if any."""
        return next(
            (k[len(ACCELERATOR_PREFIX) :] for k in sorted(self.resources) if k.startswith(ACCELERATOR_PREFIX)), None
        )

    def describe(self) -> str:
        """``name ip (N CPU, M GPU, resources)`` for messages."""
        extra = sorted(
            k
            for k in self.resources
            if k not in ("CPU", "GPU", "memory", "object_store_memory") and not k.startswith("node:")
        )
        return (
            f"{self.name} {self.ip} ({self.cpus:g} CPU, {self.gpus} GPU"
            + (f", {', '.join(extra)}" if extra else "")
            + ")"
        )


@dataclass(frozen=True)
class Placement:
    """A node for every role of one run (before tricks add servers or GPUs add processes)."""

    scheduler: Node
    servers: "tuple[Node, ...]"  # one per server node
    workers: "tuple[Node, ...]"  # one per worker node
    gpus_per_worker: int = 0  # GPUs each worker node contributes (0: the backend trains on CPU)


@dataclass(frozen=True)
class Bundle:
    """What Ray reserves on one node for a run (one bundle of the run's placement group)."""

    node: Node
    resources: Mapping[str, float] = field(hash=False)


@dataclass(frozen=True)
class RolePlan:
    """One process to start: role, placement, complete environment, command."""

    name: str  # scheduler, server-0, worker-1, worker-1.0 (node 1, local rank 0)
    role: str  # scheduler | server | worker
    node: Node
    env: Mapping[str, str] = field(hash=False)
    command: "tuple[str, ...]" = ()
    worker_rank: "int | None" = None
    bundle: int = 0  # index into Plan.bundles: the reservation its actor runs in
    gpus: int = 0  # GPUs its actor asks Ray for (inside the bundle)
    worker_node: "int | None" = None  # the worker node (DMLC_WORKER_ID) a worker process belongs to
    cpus: float = 0.0  # CPUs its actor holds (inside the bundle) while the role runs

    @property
    def processes(self) -> int:
        """Training processes of a worker role: one per GPU it holds where a launcher spawns them (bpslaunch)."""
        return max(1, self.gpus) if self.role == "worker" else 1


@dataclass(frozen=True)
class Plan:
    """Every process of one run, plus the counts that ps-lite is told."""

    backend: str
    trick: Trick
    roles: "tuple[RolePlan, ...]"
    bundles: "tuple[Bundle, ...]"
    num_workers: int  # DMLC_NUM_WORKER (worker nodes)
    num_servers: int  # DMLC_NUM_SERVER (server processes)
    worker_processes: int
    server_nodes: int
    servers_per_node: int
    #: base-vs-head runs: the arm (``base``/``head``), what its role actors get as their tree
    #: (a local path, or ``shipped`` where Ray unpacks it), and the actors' runtime_env that ships it
    arm: str = ""
    tree: "str | None" = None
    runtime_env: "Mapping[str, object] | None" = field(default=None, hash=False)
    #: who listens for the others, and the variables that tell every role where: (role name, address
    #: variable, port variable); ps-lite's scheduler, or the first rank of a torch.distributed group.
    #: None where the roles meet nobody (one process alone, BytePS reducing on one node).
    rendezvous: "tuple[str, str, str] | None" = None

    def by_role(self, role: str) -> "list[RolePlan]":
        """The role plans of one kind, in plan order."""
        return [r for r in self.roles if r.role == role]

    @property
    def scheduler(self) -> RolePlan:
        """The single scheduler."""
        return self.by_role("scheduler")[0]

    def topology(self) -> "dict[str, Any]":
        """Counts after the trick (what actually ran)."""
        return {
            "workers": self.num_workers,
            "worker_processes": self.worker_processes,
            "server_nodes": self.server_nodes,
            "servers_per_node": self.servers_per_node,
            "servers": self.num_servers,
            "machines": len({r.node.node_id for r in self.roles}),
        }


class PlanError(ValueError):
    """The settings cannot be planned on the cluster or with the backend; the message says why."""
