"""Placement: which node each role of a run goes to, and what Ray must reserve there.

A :class:`PlacementStrategy` turns the cluster's nodes and the topology
settings into a :class:`Placement`: the scheduler's node, one node per server
node, one per worker node, and the GPUs each worker node contributes. The
launcher then reserves exactly that through a Ray placement group, so Ray holds
the GPUs and CPUs of a run while it trains. :class:`NodeKindPlacement` is
parameter-server practice:

- workers of a GPU backend on GPU nodes, one node each, holding their GPUs; a
  CPU backend's workers on GPU nodes where there are any (else on the nodes the
  servers do not need), sharing nodes when there are more workers than nodes;
- servers and the scheduler on server nodes: the nodes that carry the
  ``server_resource`` custom resource when any node does (so a head node stays
  out), else the CPU-only nodes that have CPUs, Ray's head node last (it runs the
  GCS and often the driver: a server there would share their cores, so it hosts
  one only where no other node can); one distinct node per server node;
- servers share nodes with workers only on a single machine (the embedded
  default) or when ``colocate`` is on;
- mixed GPU counts on worker nodes are an error unless ``gpus_per_worker`` says
  how many to use on each (BytePS assumes one local size everywhere);
- a backend without servers (PyTorch DDP) gets worker nodes alone: on GPU
  nodes holding their GPUs where the cluster has any, else on CPU nodes.
"""

from __future__ import annotations

from typing import Protocol, Sequence

from ..backends.base import Backend, gpu_when_present, has_servers
from ..config.settings import Settings
from ..runs.plan import Node, Placement, PlanError


class PlacementStrategy(Protocol):
    """Turns nodes and topology settings into a :class:`Placement`."""

    def place(
        self, nodes: Sequence[Node], settings: Settings, backend: Backend, *, with_workers: bool = True
    ) -> Placement:
        """Place one run; raise :class:`PlanError` naming what is missing when it cannot."""


#: The resource Ray gives its head node alone.
HEAD_RESOURCE = "node:__internal_head__"


def is_head(node: Node) -> bool:
    """Whether ``node`` is the Ray cluster's head (its ``node:__internal_head__`` resource)."""
    return node.resources.get(HEAD_RESOURCE, 0) > 0


def server_candidates(
    nodes: Sequence[Node], marker: str, busy: "set[str] | frozenset[str]" = frozenset()
) -> "tuple[list[Node], str]":
    """(the nodes that may host servers, in the order they are taken; what kind they are).

    The nodes with the custom resource ``marker`` when any node has it; else the CPU-only nodes with
    CPUs that host no worker (``busy``: node ids), the head node last.
    """
    marked = [n for n in nodes if n.resources.get(marker, 0) > 0 and n.cpus > 0]
    if marked:
        return marked, f"nodes with the custom resource {marker!r}"
    pool = [n for n in nodes if n.cpus > 0 and n.gpus == 0 and n.node_id not in busy]
    return sorted(pool, key=is_head), f"CPU-only nodes with CPUs (no node has the resource {marker!r})"


def _listing(nodes: Sequence[Node]) -> str:
    return "; ".join(n.describe() for n in nodes) or "no nodes"


class NodeKindPlacement:
    """Workers on GPU nodes, servers and the scheduler on server nodes (see the module docstring)."""

    def place(
        self, nodes: Sequence[Node], settings: Settings, backend: Backend, *, with_workers: bool = True
    ) -> Placement:
        usable = [n for n in nodes if n.cpus > 0 or n.gpus > 0]
        if not usable:
            raise PlanError("the Ray cluster has no alive nodes with CPUs or GPUs: " + _listing(nodes))
        single = len(usable) == 1
        workers, gpus = self._workers(usable, settings, backend) if with_workers else ([], 0)
        if not has_servers(backend):  # DDP: the workers meet among themselves
            return Placement(scheduler=workers[0], servers=(), workers=tuple(workers), gpus_per_worker=gpus)
        servers = self._servers(usable, workers, settings, single)
        return Placement(scheduler=servers[0], servers=tuple(servers), workers=tuple(workers), gpus_per_worker=gpus)

    @staticmethod
    def _workers(usable: "list[Node]", settings: Settings, backend: Backend) -> "tuple[list[Node], int]":
        gpu_nodes = [n for n in usable if n.gpus > 0]
        if not backend.needs_gpu_workers and not (gpu_when_present(backend) and gpu_nodes):
            # A CPU backend still leaves the server nodes' cores to the servers: workers go
            # on GPU nodes where there are any, else on the nodes the servers do not need;
            # more workers than nodes share them. Its bundles reserve no GPU.
            candidates, _kind = server_candidates(usable, settings.server_resource)
            taken = {n.node_id for n in candidates[: settings.server_nodes]} if has_servers(backend) else set()
            spare = [n for n in usable if n.node_id not in taken]
            pool = gpu_nodes or spare or usable
            return [pool[i % len(pool)] for i in range(settings.workers)], 0
        want = settings.gpus_per_worker
        pool = [n for n in gpu_nodes if n.gpus >= want]
        if len(pool) < settings.workers:
            what = f"with at least {want} GPU(s) (setting 'gpus_per_worker')" if want else "with GPUs"
            raise PlanError(
                f"backend {backend.name} needs {settings.workers} GPU worker node(s) (setting 'workers') "
                f"{what}, the cluster has {len(pool)}: {_listing(usable)}"
            )
        chosen = pool[: settings.workers]
        counts = sorted({n.gpus for n in chosen})
        if not want and len(counts) > 1:
            raise PlanError(
                f"worker nodes have different GPU counts ({', '.join(f'{n.name}: {n.gpus}' for n in chosen)}); "
                "BytePS assumes one local size on every node: set 'gpus_per_worker' to the number to use on each"
            )
        return chosen, want or counts[0]

    @staticmethod
    def _servers(usable: "list[Node]", workers: "list[Node]", settings: Settings, single: bool) -> "list[Node]":
        pool, kind = server_candidates(usable, settings.server_resource, {n.node_id for n in workers})
        if single:
            return [usable[0]] * settings.server_nodes
        if len(pool) < settings.server_nodes:
            if not settings.colocate:
                raise PlanError(
                    f"{settings.server_nodes} server node(s) (setting 'server_nodes') need as many {kind}; the "
                    f"cluster has {len(pool)}: {_listing(usable)}. Mark server nodes with the resource, or let "
                    "servers share the worker nodes with setting 'colocate'"
                )
            pool = pool + [n for n in workers if n not in pool]
            if not pool:
                raise PlanError(f"no node can host servers: {_listing(usable)}")
            return [pool[i % len(pool)] for i in range(settings.server_nodes)]
        return pool[: settings.server_nodes]
