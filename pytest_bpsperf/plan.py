"""Role plan: which process runs where, with which environment and command.

Input: resolved settings, one (possibly composed) trick and the cluster's nodes.
Output: one :class:`RolePlan` per process. Nothing here starts anything; the
launcher turns the plan into processes. Placement follows parameter-server
practice: workers on GPU nodes (every node when the backend trains on CPU),
servers and the scheduler on CPU-only nodes, sharing nodes where there are none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from .settings import Settings
from .tricks import Trick

#: Stands for the Python interpreter of the environment on the role's node; the
#: launcher replaces it there (so no node runs "whatever python3 is on PATH").
PYTHON = "{python}"
#: Stands for the worker's per-step records file, chosen by the launcher.
RECORDS = "{records}"

#: Inherited variables that would change what a role does; every role gets only
#: the values its plan sets. Ray puts OMP_NUM_THREADS=1 into each actor's env.
SCRUBBED_PREFIXES = ("OMP_", "KMP_", "GOMP_", "DMLC_", "BYTEPS_", "PS_", "MXNET_", "NVIDIA_VISIBLE_DEVICES")
SCRUBBED_NAMES = ("MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "CUDA_VISIBLE_DEVICES")


class PlanError(ValueError):
    """The settings cannot be placed on the cluster; the message says why."""


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
class RolePlan:
    """One process to start: role, placement, complete environment, command."""

    name: str  # scheduler, server-0, worker-1, worker-1.0 (node 1, local rank 0)
    role: str  # scheduler | server | worker
    node: Node
    env: Mapping[str, str] = field(hash=False)
    command: tuple = ()
    worker_rank: "int | None" = None


@dataclass(frozen=True)
class Plan:
    """Every process of one run, plus the counts that ps-lite is told."""

    backend: str
    trick: Trick
    roles: tuple
    num_workers: int  # DMLC_NUM_WORKER (worker nodes)
    num_servers: int  # DMLC_NUM_SERVER (server processes)
    worker_processes: int
    server_nodes: int
    servers_per_node: int

    def by_role(self, role: str) -> list:
        """The role plans of one kind, in plan order."""
        return [r for r in self.roles if r.role == role]

    @property
    def scheduler(self) -> RolePlan:
        """The single scheduler."""
        return self.by_role("scheduler")[0]

    def topology(self) -> dict:
        """Counts after the trick (what actually ran)."""
        return {
            "workers": self.num_workers,
            "worker_processes": self.worker_processes,
            "server_nodes": self.server_nodes,
            "servers_per_node": self.servers_per_node,
            "servers": self.num_servers,
            "machines": len({r.node.node_id for r in self.roles}),
        }


def clean_env(inherited: Mapping[str, str]) -> dict:
    """``inherited`` minus everything that configures OpenMP, ps-lite, BytePS or MXNet."""
    return {
        k: v
        for k, v in inherited.items()
        if not k.startswith(SCRUBBED_PREFIXES) and k not in SCRUBBED_NAMES
    }


def workload_command(settings: Settings, backend: str, extra: Sequence[str] = ()) -> tuple:
    """The worker's command line: the workload module with this run's parameters."""
    return (
        PYTHON,
        "-m",
        "pytest_bpsperf.workload",
        "--backend",
        backend,
        "--model",
        settings.model,
        "--steps",
        str(settings.steps),
        "--batch-size",
        str(settings.batch_size),
        "--image-size",
        str(settings.image_size),
        "--records",
        RECORDS,
        *extra,
    )


def _server_command(backend: str) -> tuple:
    # Both backends start scheduler and servers by importing the module whose
    # import runs the ps-lite node for DMLC_ROLE (that is what bpslaunch does).
    return (PYTHON, "-c", "import byteps.server" if backend == "byteps" else "import mxnet")


def _split_nodes(nodes: Sequence[Node]) -> tuple:
    gpu_nodes = [n for n in nodes if n.gpus > 0]
    cpu_nodes = [n for n in nodes if n.gpus == 0]
    return gpu_nodes, cpu_nodes


def _check_trick(trick: Trick) -> None:
    for role, variables in trick.env.items():
        for var in variables:
            if var.startswith("DMLC_"):
                raise PlanError(
                    f"trick {trick.name!r} sets {var} for the {role}: DMLC_* variables are the "
                    "ps-lite protocol and come from the topology settings (workers, server_nodes, "
                    "servers_per_node, or a trick's extra servers)"
                )


def _trace_window(settings: Settings, directory: str):
    """The BytePS trace window of a worker node (its directory relative to the role's log dir)."""
    if settings.trace is None:
        return None
    from .byteps_env import BytePSEnvError, TraceWindow

    try:
        window = TraceWindow(settings.trace[0], settings.trace[1], directory)
        window.check_for_trainer(settings.steps)
    except BytePSEnvError as exc:
        raise PlanError(f"setting 'trace' from {settings.origins.get('trace')}: {exc}") from None
    return window


def make_plan(
    settings: Settings,
    trick: Trick,
    nodes: Sequence[Node],
    *,
    backend: str,
    run_id: str,
    verbose_ps: "bool | int" = False,
    with_workers: bool = True,
) -> Plan:
    """Place every role of one run on ``nodes`` and give each its full environment.

    ``backend`` is the resolved backend (``mxnet`` or ``byteps``, never ``auto``).
    The scheduler's URI and port are not known yet: the launcher adds
    ``DMLC_PS_ROOT_URI``/``DMLC_PS_ROOT_PORT`` once the scheduler's node chose a port.
    ``verbose_ps``: ``True``/``1`` sets ``PS_VERBOSE=1`` (ps-lite's connection
    lines), ``2`` also logs every message (e.g. a server's ADD_NODE).
    ``with_workers=False`` plans only the scheduler and the servers (they still
    wait for ``settings.workers`` workers), e.g. to bring up BytePS's server
    side on a machine without GPUs.
    """
    if backend not in ("mxnet", "byteps"):
        raise PlanError(f"backend must be resolved to mxnet or byteps before planning, not {backend!r}")
    if not nodes:
        raise PlanError("the Ray cluster has no alive nodes")
    _check_trick(trick)
    gpu_nodes, cpu_nodes = _split_nodes(nodes)

    if settings.trace is not None and backend != "byteps":
        raise PlanError(
            f"setting 'trace' ({settings.trace[0]}:{settings.trace[1]}, from {settings.origins.get('trace')}) "
            f"traces BytePS's push/pull and needs backend byteps, not {backend}"
        )
    if not with_workers:
        worker_nodes = []
    elif backend == "byteps":
        if len(gpu_nodes) < settings.workers:
            raise PlanError(
                f"backend byteps needs {settings.workers} GPU worker node(s) (setting 'workers'), "
                f"the cluster has {len(gpu_nodes)}: "
                + ", ".join(f"{n.name} ({n.gpus} GPU)" for n in nodes)
            )
        worker_nodes = gpu_nodes[: settings.workers]
    else:
        # Workers belong on GPU nodes (servers need the CPU nodes' cores); with
        # no GPU in the cluster, MXNet's dist_sync trains on any node.
        pool = gpu_nodes or cpu_nodes
        worker_nodes = [pool[i % len(pool)] for i in range(settings.workers)]

    server_pool = cpu_nodes or list(nodes)
    server_nodes = [server_pool[i % len(server_pool)] for i in range(settings.server_nodes)]
    servers_per_node = settings.servers_per_node + trick.extra_servers_per_node
    num_servers = settings.server_nodes * servers_per_node
    scheduler_node = server_pool[0]

    common = {
        "DMLC_NUM_WORKER": str(settings.workers),
        "DMLC_NUM_SERVER": str(num_servers),
        "BPSPERF_RUN_ID": run_id,
    }
    if verbose_ps:
        level = int(verbose_ps)
        if level not in (1, 2):
            raise PlanError(f"verbose_ps must be False, True, 1 or 2 (ps-lite's PS_VERBOSE), not {verbose_ps!r}")
        common["PS_VERBOSE"] = str(level)
    omp = {"OMP_NUM_THREADS": str(settings.omp_threads)}

    def env_for(role: str, node: Node, extra: Mapping[str, str]) -> dict:
        env = dict(omp)
        env.update(trick.env_for(role))
        env.update(common)
        env["DMLC_ROLE"] = role
        env["DMLC_NODE_HOST"] = node.ip
        env.update(extra)
        return env

    roles = [
        RolePlan("scheduler", "scheduler", scheduler_node, env_for("scheduler", scheduler_node, {}),
                 _server_command(backend)),
    ]
    byteps_server_env: dict = {}
    if backend == "byteps":
        from .byteps_env import server_env

        byteps_server_env = server_env(num_workers=settings.workers)
    index = 0
    for node in server_nodes:
        for _ in range(servers_per_node):
            roles.append(
                RolePlan(f"server-{index}", "server", node, env_for("server", node, byteps_server_env),
                         _server_command(backend))
            )
            index += 1

    worker_processes = 0
    for wid, node in enumerate(worker_nodes):
        if backend == "byteps":
            from .byteps_env import worker_env  # GPU path, only planned where GPUs exist

            trace = _trace_window(settings, f"trace/worker-{wid}")
            for local_rank in range(node.gpus):
                extra = worker_env(worker_id=wid, local_rank=local_rank, local_size=node.gpus,
                                   num_workers=settings.workers, trace=trace)
                roles.append(
                    RolePlan(f"worker-{wid}.{local_rank}", "worker", node, env_for("worker", node, extra),
                             workload_command(settings, backend), worker_rank=worker_processes)
                )
                worker_processes += 1
        else:
            roles.append(
                RolePlan(f"worker-{wid}", "worker", node, env_for("worker", node, {}),
                         workload_command(settings, backend), worker_rank=wid)
            )
            worker_processes += 1

    return Plan(
        backend=backend,
        trick=trick,
        roles=tuple(roles),
        num_workers=settings.workers,
        num_servers=num_servers,
        worker_processes=worker_processes,
        server_nodes=settings.server_nodes,
        servers_per_node=servers_per_node,
    )
