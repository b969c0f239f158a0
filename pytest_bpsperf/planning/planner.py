"""Role plan: which process runs where, with which environment and command.

The plan is placement + backend + trick: a :class:`~pytest_bpsperf.planning.placement.PlacementStrategy`
chooses the nodes, the :class:`~pytest_bpsperf.backends.Backend` says what each
process runs and which variables it needs, the trick changes environments and
server counts. Output: one :class:`RolePlan` per process. Nothing here starts
anything; the launcher turns the plan into processes.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace
from typing import TYPE_CHECKING, Mapping, Sequence

from ..backends.base import PS_RENDEZVOUS, Backend, gpu_when_present, has_servers, workload_command
from ..config.settings import Settings
from ..config.tricks import Trick
from ..remote.environ import CHOSEN_VARS, IMPORT_PATH, PYTHON, planner_owned
from ..runs.plan import Bundle, Node, Placement, Plan, PlanError, RolePlan
from .placement import NodeKindPlacement, PlacementStrategy

if TYPE_CHECKING:  # pragma: no cover
    from ..config.arms import Arm

__all__ = ["base_env", "check_trick", "for_arm", "local_command", "make_plan", "reference_plan"]


def base_env(settings: Settings) -> dict:
    """What every process of a run gets before tricks and the backend: its OpenMP threads
    (never Ray's silent OMP_NUM_THREADS=1)."""
    return {"OMP_NUM_THREADS": str(settings.omp_threads)}


def local_command(settings: Settings, device: str = "cpu") -> tuple:
    """One process training alone on ``device`` (the workers' ``cpu`` or ``gpu``), no parameter server:
    the reference for scaling efficiency."""
    return workload_command(settings, "local") + ("--device", device)


def _reference_command(backend: Backend, settings: Settings, device: str) -> tuple:
    """The backend's one-process reference command (:meth:`BackendBase.reference_command`), else
    :func:`local_command` (a backend written before it trains MXNet's workload)."""
    own = getattr(backend, "reference_command", None)
    return tuple(own(settings, device)) if own is not None else local_command(settings, device)


#: A bundle must ask for something: a sliver of CPU marks a node as used by the run (and is what
#: the scheduler, which mostly waits, holds).
_PRESENCE = 0.01


def _amount(cpus: float) -> float:
    """``cpus`` as Ray takes it: to the hundredth below, at least :data:`_PRESENCE`."""
    return max(_PRESENCE, math.floor(cpus * 100 + 1e-9) / 100)


def _share(node: Node, on_node: "Sequence[RolePlan]", gpu_workers: bool) -> float:
    """The CPUs of ``node`` a run holds: all of them, or on a worker node where the run uses only some
    of the GPUs, that part (the rest is for whoever gets the other GPUs)."""
    if gpu_workers and node.gpus > 0 and all(r.role == "worker" for r in on_node):
        used = sum(r.gpus for r in on_node)
        return node.cpus * min(1.0, used / node.gpus)
    return node.cpus


def hold_cpus(roles: "Sequence[RolePlan]", settings: Settings, gpu_workers: bool) -> "list[RolePlan]":
    """``roles`` with the CPUs each one's actor holds (``RolePlan.cpus``), so that Ray lets no other work
    onto the cores a run trains on (as horovod.ray's ``cpus_per_worker``).

    Per node: ``cpus_per_worker`` for each worker process and ``cpus_per_server`` for each server where
    set; what ``auto`` leaves of the run's share of the node (:func:`_share`) split evenly among the
    other processes; a sliver for the scheduler. Raises :class:`PlanError` when what was set does not
    fit the node.
    """
    by_node: "dict[str, list[RolePlan]]" = {}
    for r in roles:
        by_node.setdefault(r.node.node_id, []).append(r)
    cpus: "dict[str, float]" = {}
    for on_node in by_node.values():
        node = on_node[0].node
        fixed = {"worker": settings.cpus_per_worker, "server": settings.cpus_per_server}
        held = sum(_PRESENCE for r in on_node if r.role == "scheduler")
        held += sum(fixed[r.role] * r.processes for r in on_node if fixed.get(r.role))
        if held > node.cpus + 1e-9:
            o = settings.origins
            raise PlanError(
                f"settings 'cpus_per_worker' ({format_cpus(settings.cpus_per_worker)}, from "
                f"{o.get('cpus_per_worker')}) and 'cpus_per_server' ({format_cpus(settings.cpus_per_server)}, from "
                f"{o.get('cpus_per_server')}) hold {held:g} CPUs for the run's roles on node {node.describe()}: "
                f"{', '.join(r.name for r in on_node)}; expected at most its {node.cpus:g}"
            )
        rest = [r for r in on_node if r.role != "scheduler" and not fixed.get(r.role)]
        each = (_share(node, on_node, gpu_workers) - held) / max(1, sum(r.processes for r in rest))
        for r in on_node:
            if node.cpus <= 0:
                cpus[r.name] = 0.0  # a node without CPUs (a GPU-only node Ray was told of): nothing to hold
            elif r.role == "scheduler":
                cpus[r.name] = _PRESENCE
            else:
                cpus[r.name] = _amount((fixed.get(r.role) or each) * r.processes)
    return [replace(r, cpus=cpus[r.name]) for r in roles]


def format_cpus(value: float) -> str:
    """A ``cpus_per_*`` setting as written: ``auto`` or the number."""
    return "auto" if not value else f"{value:g}"


def _bundles(where: Placement, roles: "Sequence[RolePlan]") -> "list[Bundle]":
    """One bundle per worker node (its GPUs), then one per server node, each with its roles' CPUs."""
    nodes = list(where.workers) + list(where.servers)
    out = []
    for index, node in enumerate(nodes):
        resources = (
            {"GPU": float(where.gpus_per_worker)} if index < len(where.workers) and where.gpus_per_worker else {}
        )
        held = sum(r.cpus for r in roles if r.bundle == index)
        if held or not resources:
            resources["CPU"] = _amount(held)
        out.append(Bundle(node, resources))
    return out


def make_plan(
    settings: Settings,
    trick: Trick,
    nodes: Sequence[Node],
    *,
    backend: Backend,
    run_id: str,
    verbose_ps: "bool | int" = False,
    with_workers: bool = True,
    placement: "PlacementStrategy | None" = None,
    gpu_ids: "Mapping[int, Sequence[int]] | None" = None,
) -> Plan:
    """Place every role of one run on ``nodes`` and give each its full environment.

    ``backend`` is the resolved backend object (``pytest_bpsperf.backends.get(name)``, never ``auto``).
    The scheduler's URI and port are not known yet: the launcher adds
    ``DMLC_PS_ROOT_URI``/``DMLC_PS_ROOT_PORT`` once the scheduler's node chose a port.
    ``verbose_ps``: ``True``/``1`` sets ``PS_VERBOSE=1`` (ps-lite's connection
    lines), ``2`` also logs every message (e.g. a server's ADD_NODE).
    ``with_workers=False`` plans only the scheduler and the servers (they still
    wait for ``settings.workers`` workers), e.g. to bring up BytePS's server
    side on a machine without GPUs. ``gpu_ids`` maps a worker node's index to the GPU
    ids Ray assigned there (default ``0..gpus_per_worker-1``, before Ray assigned any).
    """
    backend.check(settings)
    check_trick(trick, backend)
    where = (placement or NodeKindPlacement()).place(nodes, settings, backend, with_workers=with_workers)
    servers = has_servers(backend)
    servers_per_node = settings.servers_per_node + trick.extra_servers_per_node if servers else 0
    num_servers = settings.server_nodes * servers_per_node
    env = _RoleEnv(settings, trick, _run_env(settings, num_servers, run_id, verbose_ps))
    roles = _server_roles(settings, backend, where, servers_per_node, env) if servers else []
    workers, rank = _worker_roles(settings, backend, where, env, gpu_ids)
    roles = hold_cpus(roles + workers, settings, where.gpus_per_worker > 0)
    return Plan(
        backend=backend.name,
        trick=trick,
        roles=tuple(roles),
        bundles=tuple(_bundles(where, roles)),
        num_workers=settings.workers,
        num_servers=num_servers,
        worker_processes=rank,
        server_nodes=settings.server_nodes if servers else 0,
        servers_per_node=servers_per_node,
        rendezvous=_rendezvous(backend, roles),
    )


def check_trick(trick: Trick, backend: Backend) -> None:
    """Raise :class:`PlanError` when ``trick`` asks for what ``backend`` does not have: servers."""
    if trick.extra_servers_per_node and not has_servers(backend):
        raise PlanError(
            f"trick {trick.name!r} adds {trick.extra_servers_per_node} server(s) per server node, and backend "
            f"{backend.name} has no servers (its workers average gradients among themselves); accepted with "
            f"{backend.name}: tricks that only set variables"
        )


def _rendezvous(backend: Backend, roles: "Sequence[RolePlan]") -> "tuple[str, str, str] | None":
    """Who the roles meet: the scheduler where there is one, else the first worker where there are
    several training processes of a backend that names its rendezvous variables."""
    if any(r.name == "scheduler" for r in roles):
        return ("scheduler", *PS_RENDEZVOUS)
    workers = [r for r in roles if r.role == "worker"]
    variables = getattr(backend, "rendezvous", PS_RENDEZVOUS)
    if has_servers(backend) or not workers or tuple(variables) == PS_RENDEZVOUS:
        return None
    first = min(workers, key=lambda r: r.worker_rank or 0)
    return (first.name, variables[0], variables[1])


def _run_env(settings: Settings, num_servers: int, run_id: str, verbose_ps: "bool | int") -> "dict[str, str]":
    """What every role of the run gets from the planner: the counts, the run id, ps-lite's verbosity."""
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
    return common


class _RoleEnv:
    """The full environment of each role of one run, from its layers (see :meth:`for_role`)."""

    def __init__(self, settings: Settings, trick: Trick, common: "Mapping[str, str]") -> None:
        self.settings = settings
        self.trick = trick
        self.common = common
        self.role_env: "dict[str, dict[str, str]]" = {}
        for role, var, value in settings.role_env or ():
            self.role_env.setdefault(role, {})[var] = value

    def for_role(self, role: str, node: Node, backend_env: Mapping[str, str]) -> dict:
        """``role``'s environment on ``node``, ``backend_env`` being what the backend gives it."""
        # Later wins: the backend's defaults, then the user's role_env and trick, then
        # what the planner owns (counts, ranks, addresses, GPU ids).
        env = base_env(self.settings)
        env.update(backend_env)
        env.update(self.role_env.get(role, {}))
        env.update(self.trick.env_for(role))
        # every variable the user's trick or role_env set is echoed in records and reports
        chosen = sorted(set(self.role_env.get(role, {})) | set(self.trick.env_for(role)))
        if chosen:
            env[CHOSEN_VARS] = ",".join(chosen)
        env.update({k: v for k, v in backend_env.items() if planner_owned(k)})
        env.update(self.common)
        env["DMLC_ROLE"] = role
        env["DMLC_NODE_HOST"] = node.ip
        return env


def _server_roles(
    settings: Settings, backend: Backend, where: Placement, servers_per_node: int, env: _RoleEnv
) -> "list[RolePlan]":
    """The scheduler, then ``servers_per_node`` servers on each server node (their bundles after the workers')."""
    first_server_bundle = len(where.workers)
    server_command = tuple(backend.server_command())
    roles = [
        RolePlan(
            "scheduler",
            "scheduler",
            where.scheduler,
            env.for_role("scheduler", where.scheduler, {}),
            server_command,
            bundle=first_server_bundle,
        )
    ]
    server_extra = backend.server_env(settings)
    index = 0
    for k, node in enumerate(where.servers):
        for _ in range(servers_per_node):
            roles.append(
                RolePlan(
                    f"server-{index}",
                    "server",
                    node,
                    env.for_role("server", node, server_extra),
                    server_command,
                    bundle=first_server_bundle + k,
                )
            )
            index += 1
    return roles


def _worker_roles(
    settings: Settings, backend: Backend, where: Placement, env: _RoleEnv, gpu_ids: "Mapping[int, Sequence[int]] | None"
) -> "tuple[list[RolePlan], int]":
    """The worker processes of every worker node, ranked in order; and how many training processes they run."""
    worker_command = tuple(backend.worker_command(settings))
    roles = []
    rank = 0
    for wid, node in enumerate(where.workers):
        ids = list(gpu_ids[wid]) if gpu_ids and wid in gpu_ids else list(range(where.gpus_per_worker))
        for process in backend.worker_processes(settings, wid, node, ids):
            roles.append(
                RolePlan(
                    f"worker-{wid}{process.suffix}",
                    "worker",
                    node,
                    env.for_role("worker", node, process.env),
                    worker_command,
                    worker_rank=rank,
                    bundle=wid,
                    gpus=process.gpus,
                    worker_node=wid,
                )
            )
            rank += process.processes
    return roles, rank


def arm_command(command: Sequence[str], python: "str | None", entry_path: "str | None") -> tuple:
    """``command`` for an arm: its interpreter for ``PYTHON``, its entry point directory for ``--entry-path``."""
    out = [python if python and a == PYTHON else a for a in command]
    if entry_path is not None:
        for i, a in enumerate(out[:-1]):
            if a == "--entry-path":
                out[i + 1] = entry_path
    return tuple(out)


def for_arm(plan: Plan, arm: "Arm", *, runtime_env: "Mapping[str, object] | None" = None) -> Plan:
    """``plan`` as one arm of a base-vs-head pair runs it.

    Every role (scheduler, servers, workers) runs under the arm's interpreter,
    with the arm's tree first on its import path (after the harness) and the
    entry point imported from the arm's tree. ``runtime_env``: on an existing
    cluster the tree travels as the role actors' ``working_dir`` (uploaded
    once, unpacked by Ray on each node); without it (the embedded Ray) the
    actors read the tree where it is.
    """
    from ..remote.roles import SHIPPED_TREE

    roles = tuple(
        replace(
            r,
            command=arm_command(r.command, arm.python, arm.entry_path),
            env={**r.env, IMPORT_PATH: os.pathsep.join(arm.paths), "BPSPERF_ARM": arm.name},
        )
        for r in plan.roles
    )
    return replace(
        plan,
        roles=roles,
        arm=arm.name,
        tree=SHIPPED_TREE if runtime_env else arm.tree,
        runtime_env=dict(runtime_env) if runtime_env else None,
    )


def reference_plan(
    settings: Settings,
    trick: Trick,
    node: Node,
    *,
    backend: Backend,
    run_id: str,
    gpus: int = 0,
    one_gpu: bool = False,
    gpu_ids: "Mapping[int, Sequence[int]] | None" = None,
) -> Plan:
    """The scaling reference as a plan the launcher runs: one worker node alone, no parameter server.

    The BytePS report's reference is one worker node with all its GPUs under the
    same trick (8478 img/s over 4 x 2800 of one node alone): with ``gpus`` and a
    GPU backend, every GPU of ``node`` trains as one BytePS worker node
    (``DMLC_NUM_WORKER=1`` without ``BYTEPS_FORCE_DISTRIBUTED``: BytePS reduces
    on the node and starts no servers). ``one_gpu``: one process on one GPU of
    ``node`` alone (the per-GPU figure). On CPUs a worker node runs one worker
    process, so the node reference is one process training without a kvstore.
    Every process gets the trick's worker variables and the run's OpenMP threads.
    """
    env = _reference_env(settings, trick, node, run_id)
    on_gpus = bool(gpus) and (backend.needs_gpu_workers or gpu_when_present(backend))
    if not on_gpus or one_gpu:
        return _single_process_plan(settings, trick, node, backend, env, "gpu" if on_gpus else "cpu", gpu_ids)
    return _node_plan(settings, trick, node, backend, env, gpus, gpu_ids)


def _reference_env(settings: Settings, trick: Trick, node: Node, run_id: str) -> "dict[str, str]":
    """What every process of a scaling reference gets: the run's base, the trick's worker variables."""
    env = {
        **base_env(settings),
        **trick.env_for("worker"),
        "BPSPERF_RUN_ID": run_id,
        "DMLC_ROLE": "worker",
        "DMLC_NODE_HOST": node.ip,
    }
    chosen = sorted(set(trick.env_for("worker")))
    if chosen:
        env[CHOSEN_VARS] = ",".join(chosen)
    return env


def _single_process_plan(
    settings: Settings,
    trick: Trick,
    node: Node,
    backend: Backend,
    env: "dict[str, str]",
    device: str,
    gpu_ids: "Mapping[int, Sequence[int]] | None",
) -> Plan:
    """One process alone on ``node`` (on one GPU with ``device`` gpu), training without a kvstore."""
    if device == "gpu":
        # the one GPU Ray reserved (the role actor drops Ray's own variable): the process's
        # mx.gpu(0) is that GPU, not physical GPU 0
        gpu = str((list(gpu_ids[0]) if gpu_ids and 0 in gpu_ids and gpu_ids[0] else [0])[0])
        env = {**env, "CUDA_VISIBLE_DEVICES": gpu, "NVIDIA_VISIBLE_DEVICES": gpu}
    role = RolePlan(
        "single",
        "worker",
        node,
        env,
        _reference_command(backend, settings, device),
        worker_rank=0,
        bundle=0,
        gpus=1 if device == "gpu" else 0,
        worker_node=0,
    )
    (role,) = hold_cpus([role], settings, device == "gpu")
    bundle = Bundle(
        node,
        {**({"GPU": 1.0} if device == "gpu" else {}), **({"CPU": role.cpus} if role.cpus else {})}
        or {"CPU": _PRESENCE},
    )
    return Plan(
        backend=backend.name,
        trick=trick,
        roles=(role,),
        bundles=(bundle,),
        num_workers=1,
        num_servers=0,
        worker_processes=1,
        server_nodes=0,
        servers_per_node=0,
    )


def _node_plan(
    settings: Settings,
    trick: Trick,
    node: Node,
    backend: Backend,
    env: "dict[str, str]",
    gpus: int,
    gpu_ids: "Mapping[int, Sequence[int]] | None",
) -> Plan:
    """Every GPU of ``node`` as one BytePS worker node alone: no servers, BytePS reduces on the node."""
    alone = settings.with_values(workers=1)
    ids = list(gpu_ids[0]) if gpu_ids and 0 in gpu_ids else list(range(gpus))
    roles: "list[RolePlan]" = []
    for process in backend.worker_processes(alone, 0, node, ids):
        penv = {
            **env,
            **{k: v for k, v in process.env.items() if k != "BYTEPS_FORCE_DISTRIBUTED"},
            "DMLC_NUM_WORKER": "1",
            "DMLC_NUM_SERVER": "0",
        }
        roles.append(
            RolePlan(
                f"node{process.suffix}",
                "worker",
                node,
                penv,
                tuple(backend.worker_command(alone)),
                worker_rank=len(roles),
                bundle=0,
                gpus=process.gpus,
                worker_node=0,
            )
        )
    roles = hold_cpus(roles, settings, True)
    held = sum(r.cpus for r in roles)
    bundle = Bundle(node, {"GPU": float(gpus), **({"CPU": _amount(held)} if held else {})})
    return Plan(
        backend=backend.name,
        trick=trick,
        roles=tuple(roles),
        bundles=(bundle,),
        num_workers=1,
        num_servers=0,
        worker_processes=len(ids),
        server_nodes=0,
        servers_per_node=0,
        rendezvous=_rendezvous(backend, roles),
    )
