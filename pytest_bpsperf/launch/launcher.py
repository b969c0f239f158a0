"""One run of a role plan on the connected Ray cluster (driver side).

:func:`run_roles` starts one actor per role, pinned to the role's node; each
actor starts its role as a child process (see :mod:`.remote.roles`). The
scheduler's port is picked on the scheduler's node. The run has a hard
timeout; whatever happens, every role's process group is killed and every
actor is removed before it returns. After the run, the backend collects what
it measured itself from the nodes (e.g. BytePS's timeline).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from .. import backends
from ..runs.output import CommWindow, RoleOutcome, RunOutput, WorkerRecords
from ..runs.plan import Node, Plan
from . import local_roles
from .diagnose import failure_message
from .load import LoadWatch
from .reservation import Reservation, ReservationError, reserve
from .watchdog import StallWatch, progress_line

#: how often the driver asks the actors whether their roles still run; each ask costs
#: a little CPU on every node, which a 2-core machine feels during training.
POLL_SECONDS = 0.5
#: how often a live progress line reads the workers' latest step (only when asked for).
PROGRESS_SECONDS = 10.0
#: how long one poll may take before the roles' actors count as not answering
POLL_TIMEOUT_S = 20.0


def pdeathsig_notes(infos: Mapping[str, Mapping], where: Mapping[str, Mapping]) -> "tuple[str, ...]":
    """A note per node whose roles do not die with their actor (no ``setpriv`` there), naming them.

    ``infos`` are the roles' :meth:`~.remote.roles.RoleProcess.info`, ``where``
    where their actors ran; roles whose info does not say (never started, actor
    gone) are left out.
    """
    by_node: "dict[str, list[str]]" = {}
    for name, info in infos.items():
        if info.get("pdeathsig") is False:
            place = where.get(name, {})
            by_node.setdefault(place.get("hostname") or place.get("ip") or "?", []).append(name)
    return tuple(
        f"setpriv not found on {node}: {', '.join(names)} "
        f"{'does not die with its actor' if len(names) == 1 else 'do not die with their actor'} "
        "(no PR_SET_PDEATHSIG; install util-linux there)"
        for node, names in by_node.items()
    )


class RoleFailed(RuntimeError):
    """A role died or the run timed out; the message names the role, node, status and log tail."""

    def __init__(self, message: str, output: "RunOutput | None" = None) -> None:
        super().__init__(message)
        self.output = output


def _remote_role_class():
    import ray

    from ..remote.roles import RoleProcess

    return ray.remote(num_cpus=0, max_restarts=0)(RoleProcess)


def _node_strategy(node: Node):
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(node_id=node.node_id, soft=False)


def _gather(refs: list, timeout: float) -> list:
    """``ray.get`` of each ref; an actor that died or does not answer gives its exception, not a raise."""
    import ray

    out = []
    for ref in refs:
        try:
            out.append(ray.get(ref, timeout=timeout))
        except (ray.exceptions.RayError, ray.exceptions.GetTimeoutError) as exc:
            out.append(exc)
    return out


#: ``replan(gpu_ids)``: the same plan with the GPU ids Ray assigned on each worker node.
Replan = Callable[[Mapping[int, Sequence[int]]], Plan]


@dataclass
class Harvest:
    """What a run of the roles left. Its :class:`RoleGroup` alone writes it, as the run goes and at teardown;
    everyone else only reads it (``group.harvest``)."""

    #: role -> what its actor said at teardown (exit code, killed, log path, environment)
    infos: "dict[str, dict]" = field(default_factory=dict)
    tails: "dict[str, str]" = field(default_factory=dict)  # role -> the end of its log
    records: "list[WorkerRecords]" = field(default_factory=list)  # each training process's records
    comm: "tuple[CommWindow, ...]" = ()  # the backend's own measurements (e.g. BytePS's PUSH/PULL windows)
    gone: "set[str]" = field(default_factory=set)  # roles whose actor stopped answering: not asked again
    culprits: "tuple[str, ...]" = ()  # the roles a failure is about (their log tails are shown)
    exit_notes: "list[str]" = field(default_factory=list)  # exit errors after training finished (not failures)


class RoleGroup:
    """The roles of a plan, each a process owned by an actor on its node, inside the run's reservation.

    Use as a context manager: leaving the block kills every role's process
    group, removes every actor and releases the reservation, whatever happened inside.
    What the run left is in :attr:`harvest`.
    """

    def __init__(self, plan: Plan, log_dir: str) -> None:
        self.plan = plan
        self.log_dir = log_dir
        self.actors: dict = {}
        self.where: "dict[str, dict]" = {}  # role -> node_id, ip, hostname, gpu_ids as the actor reported
        self.root: dict = {}  # the rendezvous variables every role got (the listener's address and port)
        self.rendezvous: "tuple[str, str, str] | None" = None  # (listener, address variable, port variable)
        self.bringup_s = 0.0
        self.teardown_s = 0.0
        self.pids: "dict[str, int]" = {}  # role -> its process's pid (its group's id), as the actor started it
        self.status: "dict[str, dict]" = {}  # role -> its last status (exit code, process state, progress)
        self._harvest = Harvest()
        self._reservation: "Reservation | None" = None
        #: the CPU of the roles' nodes while training, from every poll (the run's foreign load)
        self.load = LoadWatch({r.name: r.node.name for r in plan.roles})

    @property
    def harvest(self) -> Harvest:
        """What the run left so far (complete after :meth:`stop`); read it, the group writes it."""
        return self._harvest

    @property
    def records(self) -> "list[WorkerRecords]":
        """Each training process's records, after :meth:`stop`."""
        return list(self._harvest.records)

    def blame(self, roles: Sequence[str]) -> None:
        """``roles`` are what the run's failure is about: their log tails are shown first."""
        self._harvest.culprits = tuple(roles)

    def note_exit(self, note: str) -> None:
        """Keep ``note`` (once): an exit error after training finished, not a failure."""
        if note not in self._harvest.exit_notes:
            self._harvest.exit_notes.append(note)

    @property
    def roles(self) -> list:
        """The role plans (after :meth:`start`, with the GPU ids Ray assigned)."""
        return list(self.plan.roles)

    def __enter__(self) -> "RoleGroup":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, timeout: float, *, placement_timeout: float = 60.0, replan: "Replan | None" = None) -> float:
        """Reserve the nodes, create the actors there, learn where they run, start every role."""
        import ray

        t0 = time.perf_counter()
        self._reservation = reserve(self.plan, placement_timeout)
        actor_cls = _remote_role_class()
        shipping = {"runtime_env": dict(self.plan.runtime_env)} if self.plan.runtime_env else {}
        for role in self.plan.roles:
            # the actor holds its role's CPUs in the run's bundle: no other Ray work lands on them
            self.actors[role.name] = actor_cls.options(
                scheduling_strategy=self._reservation.strategy(role.bundle),
                num_gpus=role.gpus,
                num_cpus=role.cpus,
                **shipping,
            ).remote(role.name, self.log_dir, self.plan.tree)
        names = list(self.actors)
        found = _gather([self.actors[n].where.remote() for n in names], timeout)
        failed = [n for n, w in zip(names, found) if isinstance(w, Exception)]
        if failed:
            raise RoleFailed(f"the actors of {', '.join(failed)} did not come up: {found[names.index(failed[0])]}")
        self.where = dict(zip(names, found))
        if replan is not None and any(r.gpus for r in self.plan.roles):
            self._assign_gpus(replan)
        misplaced = [
            f"{r.name} on {self.where[r.name]['ip']}, planned {r.node.ip}"
            for r in self.plan.roles
            if self.where[r.name]["node_id"] != r.node.node_id
        ]
        if misplaced:
            raise RoleFailed("Ray placed roles elsewhere than reserved: " + "; ".join(misplaced))
        hosts = self._interface_hosts(timeout)
        meet = self.plan.rendezvous
        if meet is None and self.plan.by_role("scheduler"):  # a plan made without the planner
            meet = ("scheduler", *backends.PS_RENDEZVOUS)
        self.rendezvous = meet
        if meet is not None:  # a plan without one (a process alone) meets nobody
            # the port is chosen and held on the listener's own node until it listens there
            listener, host_var, port_var = meet
            node = next(r.node for r in self.plan.roles if r.name == listener)
            host = hosts.get(listener, {}).get("DMLC_NODE_HOST", node.ip)
            port = ray.get(self.actors[listener].pick_port.remote(host), timeout=timeout)
            self.root = {host_var: host, port_var: str(port)}
        pids = ray.get(
            [
                self.actors[r.name].start.remote(list(r.command), {**r.env, **hosts.get(r.name, {}), **self.root})
                for r in self.plan.roles
            ],
            timeout=timeout,
        )
        self.pids = {r.name: pid for r, pid in zip(self.plan.roles, pids)}
        self.bringup_s = time.perf_counter() - t0
        return self.bringup_s

    def _interface_hosts(self, timeout: float) -> "dict[str, dict[str, str]]":
        """Role -> its ``DMLC_NODE_HOST``, for the roles whose environment chooses a network interface
        (``DMLC_INTERFACE``, from ``role_env`` or a trick): that interface's address on the role's node,
        read there. ps-lite binds to ``DMLC_NODE_HOST`` when it is set, whatever the interface says; the
        plan's value is the address Ray knows the node by. Raises :class:`RoleFailed` naming the role,
        the node and its interfaces where the interface is not there."""
        asked = [r for r in self.plan.roles if r.env.get("DMLC_INTERFACE")]
        if not asked:
            return {}
        found = _gather([self.actors[r.name].address_of.remote(r.env["DMLC_INTERFACE"]) for r in asked], timeout)
        out, problems = {}, []
        for role, got in zip(asked, found):
            if isinstance(got, dict) and got.get("ip"):
                out[role.name] = {"DMLC_NODE_HOST": got["ip"]}
            else:
                problems.append(
                    f"{role.name} on {role.node.describe()}: {got.get('error') if isinstance(got, dict) else got}"
                )
        if problems:
            raise RoleFailed(
                "the network interface the roles were given (DMLC_INTERFACE, from setting 'role_env' "
                "or the trick) is not usable: " + "; ".join(problems)
            )
        return out

    def _assign_gpus(self, replan: Replan) -> None:
        """Give each worker process the local rank of the GPU Ray assigned to its actor."""
        by_node: dict = {}
        for role in self.plan.roles:
            if role.gpus:
                by_node.setdefault(role.worker_node, []).append(role.name)
        gpu_ids = {
            wid: sorted(int(g) for n in names for g in self.where[n]["gpu_ids"]) for wid, names in by_node.items()
        }
        self.plan = replan(gpu_ids)
        actors, where = dict(self.actors), dict(self.where)
        for wid, names in by_node.items():
            # the actor holding the k-th smallest GPU id runs local rank k
            ranked = sorted(names, key=lambda n: min(int(g) for g in where[n]["gpu_ids"]))
            planned = [r.name for r in self.plan.roles if r.gpus and r.worker_node == wid]
            for role_name, actor_name in zip(planned, ranked):
                self.actors[role_name], self.where[role_name] = actors[actor_name], where[actor_name]
        import ray

        ray.get([self.actors[r.name].rename.remote(r.name) for r in self.plan.roles if r.gpus], timeout=60)

    def poll(self, timeout: float = POLL_TIMEOUT_S) -> dict:
        """Role name -> exit status (None while running); raises when an actor is gone or does not answer.

        Keeps each role's whole status (process state, a worker's progress) in :attr:`status`.
        """
        import ray

        names = list(self.actors)
        self.status = dict(zip(names, ray.get([self.actors[n].status.remote() for n in names], timeout=timeout)))
        self.load.observe(self.status, [r.name for r in self.plan.roles if r.role == "worker"])
        return {n: st["code"] for n, st in self.status.items()}

    def unreachable(self, timeout: float = 5.0) -> "dict[str, str]":
        """Role name -> why its actor does not answer (dead, its node gone, or stalled)."""
        names = list(self.actors)
        answers = _gather([self.actors[n].poll.remote() for n in names], timeout)
        return {
            n: f"{type(a).__name__}: {str(a).splitlines()[0] if str(a) else ''}"
            for n, a in zip(names, answers)
            if isinstance(a, Exception)
        }

    def lost(self) -> str:
        """Why the roles' actors stopped answering: the nodes that died and the roles on them.

        Marks those roles gone (teardown does not ask them again) and the culprits of the failure.
        """
        import ray

        gone = self.unreachable()
        if not gone:
            return "a role's actor stopped answering, then answered again"
        self._harvest.gone.update(gone)
        self.blame(tuple(gone))
        dead = {n["NodeID"]: n for n in ray.nodes() if not n.get("Alive")}
        by_node: dict = {}
        for name in gone:
            by_node.setdefault(self.where.get(name, {}).get("node_id", ""), []).append(name)
        parts = []
        for node_id, names in by_node.items():
            planned = next(r.node for r in self.plan.roles if r.name == names[0])
            if node_id in dead:
                reason = dead[node_id].get("DeathReasonMessage") or "dead"
                parts.append(f"node {planned.name} ({planned.ip}) was lost ({reason}); roles on it: {', '.join(names)}")
            else:
                states = "".join(local_roles.actor_state(self.where.get(n, {})) for n in names[:1])
                parts.append(
                    f"the actors of {', '.join(names)} on node {planned.name} ({planned.ip}) do not answer"
                    f"{states}: {gone[names[0]]}"
                )
        return "; ".join(parts)

    def latest_steps(self) -> dict:
        """Worker name -> its latest record so far (None before its first), read on its node."""
        import ray

        names = [r.name for r in self.roles if r.role == "worker" and r.name in self.actors]
        return dict(zip(names, ray.get([self.actors[n].latest_record.remote() for n in names], timeout=30)))

    def log_tails(self, lines: int = 30) -> dict:
        """Role name -> the end of its log, read on its node (empty where the actor is gone)."""
        names = [n for n in self.actors if n not in self._harvest.gone]
        tails = _gather([self.actors[n].log_tail.remote(lines) for n in names], 30)
        return {n: t for n, t in zip(names, tails) if isinstance(t, str)}

    def stop(self) -> None:
        """Kill every role's group, collect what it left, remove the actors, release the nodes (idempotent)."""
        if not self.actors:
            if self._reservation is not None:
                self._reservation.release()
            return
        import ray

        t0 = time.perf_counter()
        harvest = self._harvest
        try:
            # Each actor on its own: one lost node must not cost the other roles' logs and records;
            # an actor known not to answer is not asked again (each ask would wait its timeout).
            names = [n for n in self.actors if n not in harvest.gone]
            stopped = _gather([self.actors[n].stop.remote() for n in names], 60)
            harvest.gone.update(n for n, s in zip(names, stopped) if isinstance(s, Exception))
            names = [n for n in names if n not in harvest.gone]
            infos = _gather([self.actors[n].info.remote() for n in names], 30)
            harvest.infos = {n: i for n, i in zip(names, infos) if isinstance(i, dict)}
            harvest.tails = self.log_tails()
            asked = [r for r in self.plan.roles if r.role == "worker" and r.name not in harvest.gone]
            # one role may run several training processes (bpslaunch spawns one per GPU)
            found = _gather([self.actors[r.name].process_records.remote() for r in asked], 30)
            per_process = {r.name: recs for r, recs in zip(asked, found) if isinstance(recs, list)}
            leftovers: dict = {}
            self._leftovers(leftovers)
            harvest.records = []
            for r in self.plan.roles:
                if r.role != "worker":
                    continue
                if r.name in per_process:
                    harvest.records += [
                        WorkerRecords(name=r.name + suffix, node=r.node.name, records=tuple(recs))
                        for suffix, recs in per_process[r.name]
                    ]
                else:  # its actor is gone: what could be read from its files on this machine, or nothing
                    harvest.records.append(
                        WorkerRecords(name=r.name, node=r.node.name, records=tuple(leftovers.get(r.name, ())))
                    )
            harvest.comm = self._collect() if not harvest.gone else ()
        finally:
            # Killing the actor also kills any role it still owns (pdeathsig).
            for actor in self.actors.values():
                try:
                    ray.kill(actor, no_restart=True)
                except Exception:  # noqa: BLE001 - already gone
                    pass
            self.actors = {}
            if self._reservation is not None:
                self._reservation.release()
            self.teardown_s = time.perf_counter() - t0

    def _leftovers(self, records: dict) -> None:
        """Roles whose actor is gone: on this machine, kill them by pid and read their files directly."""
        run_id = next((r.env.get("BPSPERF_RUN_ID", "") for r in self.plan.roles), "")
        for role in self.plan.roles:
            name = role.name
            if name not in self._harvest.gone or not local_roles.on_this_machine(self.where.get(name, {})):
                continue
            killed = local_roles.kill_role(self.pids.get(name), run_id)
            tail, recs = local_roles.read_leftovers(name, self.log_dir)
            self._harvest.tails[name] = tail
            if role.role == "worker":
                records[name] = recs
            self._harvest.infos[name] = {
                "exit_code": None,
                "killed": killed,
                "log_path": os.path.join(self.log_dir, f"{name}.log"),
                "environ": {},
            }

    def _collect(self) -> "tuple[CommWindow, ...]":
        """The backend's own measurements, from the directories it names on each role's node."""
        backend = backends.get(self.plan.backend)
        asks = [(r.name, d) for r in self.plan.roles for d in backend.artifact_dirs(r)]
        if not asks:
            return ()
        found = _gather([self.actors[name].read_files.remote(d) for name, d in asks], 60)
        files: dict = {}
        for (name, _d), texts in zip(asks, found):
            if isinstance(texts, dict):
                files.setdefault(name, {}).update(texts)
        return tuple(backend.collect(self.plan, files))

    def outcomes(self) -> "tuple[RoleOutcome, ...]":
        """Each role's fate and where it ran, after :meth:`stop`."""
        out = []
        for r in self.plan.roles:
            info, where = self._harvest.infos.get(r.name, {}), self.where.get(r.name, {})
            out.append(
                RoleOutcome(
                    name=r.name,
                    role=r.role,
                    node=r.node.name,
                    exit_code=info.get("exit_code"),
                    log_path=info.get("log_path", ""),
                    killed=bool(info.get("killed")),
                    environ=info.get("environ", {}),
                    node_id=where.get("node_id", ""),
                    ip=where.get("ip", ""),
                    hostname=where.get("hostname", ""),
                    gpu_ids=tuple(int(g) for g in where.get("gpu_ids", ())),
                    cpus=r.cpus,
                )
            )
        return tuple(out)

    def output(self, wall_s: float) -> RunOutput:
        """What the run produced, after :meth:`stop`: records, outcomes, timings, notes (``wall_s`` its length)."""
        harvest = self._harvest
        return RunOutput(
            workers=tuple(harvest.records),
            roles=self.outcomes(),
            bringup_s=self.bringup_s,
            teardown_s=self.teardown_s,
            wall_s=wall_s,
            log_dir=self.log_dir,
            backend=self.plan.backend,
            topology=self.plan.topology(),
            comm=harvest.comm,
            notes=tuple(harvest.exit_notes) + pdeathsig_notes(harvest.infos, self.where),
            load=self.load.loads(),
        )


def _watch(
    group: RoleGroup,
    deadline: float,
    timeout: float,
    exit_grace: float,
    progress: "Callable[[], None] | None" = None,
    clock: Callable[[], float] = time.perf_counter,
    stall: "StallWatch | None" = None,
) -> "str | None":
    """Poll until every role exited 0; the reason it went wrong otherwise.

    ``progress`` is called about every :data:`PROGRESS_SECONDS` while the roles run.
    """
    import ray

    stall = stall or StallWatch()
    workers = [r.name for r in group.roles if r.role == "worker"]
    t_workers_done = None
    next_progress = clock() + PROGRESS_SECONDS
    while True:
        if progress is not None and clock() >= next_progress:
            next_progress = clock() + PROGRESS_SECONDS
            progress()
        try:
            codes = group.poll()
        except (ray.exceptions.RayError, ray.exceptions.GetTimeoutError):
            return group.lost()
        trained = all(group.status.get(w, {}).get("finished") for w in workers)
        bad = []
        for n, c in codes.items():
            if c in (None, 0):
                continue
            if trained:
                # Training is over and every worker wrote its end record: an exit error now
                # (BytePS shuts down in an atexit barrier) is noted, not a failed measurement.
                group.note_exit(f"{n} exited {c} after training finished (shutdown)")
                continue
            bad.append(n)
        if bad:
            group.blame(bad)
            return "role(s) exited with an error: " + ", ".join(f"{n} (exit {codes[n]})" for n in bad)
        if all(c is not None for c in codes.values()):
            return None
        now = time.perf_counter()
        stuck = stall.check(group.status, workers, now)
        if stuck is not None:
            group.blame(stuck.culprits)
            return stuck.message
        if t_workers_done is None and all(codes[w] is not None for w in workers):
            t_workers_done = now
        if t_workers_done is not None and now - t_workers_done > exit_grace:
            hung = [n for n, c in codes.items() if c is None]
            return (
                f"workers finished but {', '.join(hung)} did not exit within {exit_grace:.0f}s (ps-lite shutdown hangs)"
            )
        if now > deadline:
            running = [n for n, c in codes.items() if c is None]
            return f"run timed out after {timeout:.0f}s (setting 'timeout'); still running: {', '.join(running)}"
        time.sleep(POLL_SECONDS)


def run_roles(
    plan: Plan,
    log_dir: str,
    *,
    timeout: float,
    placement_timeout: float = 60.0,
    replan: "Replan | None" = None,
    on_progress: "Callable[[str], None] | None" = None,
    exit_grace: float = 30.0,
    live: "Callable[[str], None] | None" = None,
    label: str = "",
    steps: int = 0,
    stall: "StallWatch | None" = None,
) -> RunOutput:
    """Run every role of ``plan`` to completion on the connected Ray cluster.

    ``live`` hears a line when the roles are up and one about every
    :data:`PROGRESS_SECONDS` of training (``LABEL: step k/N, X img/s``);
    ``on_progress`` hears the details.

    Returns the workers' records and each role's fate and place. Raises
    :class:`RoleFailed` when the nodes cannot be reserved, a role exits
    non-zero, a node is lost, the workers do not all finish, or ``timeout``
    passes; the exception carries the partial :class:`RunOutput`. Teardown
    runs in every case, Ctrl-C included.
    """
    say = on_progress or (lambda _msg: None)
    t_start = time.perf_counter()
    with RoleGroup(plan, log_dir) as group:
        _bring_up(group, plan, timeout, placement_timeout, replan)
        meet = group.rendezvous
        where = (
            f"{meet[0]} listens on {group.root[meet[1]]}:{group.root[meet[2]]}"
            if meet and group.root
            else "no rendezvous"
        )
        say(f"{len(group.roles)} roles started in {group.bringup_s:.1f}s ({where})")
        tick = _live_progress(group, live, label, steps)
        failure = _watch(group, t_start + timeout, timeout, exit_grace, tick, stall=stall)
    output = group.output(wall_s=time.perf_counter() - t_start)
    if failure is None:
        unfinished = [w.name for w in output.workers if not w.finished]
        if unfinished:
            failure = "worker(s) exited 0 without finishing their steps: " + ", ".join(unfinished)
    if failure is not None:
        harvest = group.harvest
        raise RoleFailed(failure_message(failure, group.plan, output, harvest.tails, harvest.culprits), output)
    return output


def _bring_up(group: RoleGroup, plan: Plan, timeout: float, placement_timeout: float, replan: "Replan | None") -> None:
    """Start ``group``'s roles; a reservation that cannot be had, or a node or actor lost, is a :class:`RoleFailed`."""
    from ray.exceptions import RayError

    try:
        group.start(timeout, placement_timeout=placement_timeout, replan=replan)
    except ReservationError as exc:
        raise RoleFailed(f"bpsperf run failed ({plan.backend}, trick {plan.trick.name}): {exc}") from None
    except RayError as exc:  # a node or actor lost during bring-up: still a role failure, by name
        reason = f"bring-up failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        if group.actors:
            reason += f"; {group.lost()}"
        raise RoleFailed(f"bpsperf run failed ({plan.backend}, trick {plan.trick.name}): {reason}") from None


def _live_progress(
    group: RoleGroup, live: "Callable[[str], None] | None", label: str, steps: int
) -> "Callable[[], None] | None":
    """Tell ``live`` the roles are up; the tick that tells it the workers' progress (None without ``live``)."""
    if live is None:
        return None
    live(f"{label}: {len(group.roles)} roles up in {group.bringup_s:.1f}s, training {steps} steps")

    def tick() -> None:
        try:
            line = progress_line(label, steps, group.latest_steps())
        except Exception as exc:  # noqa: BLE001 - progress must never break a run
            line = f"{label}: no progress ({type(exc).__name__})"
        if line:
            live(line)

    return tick
