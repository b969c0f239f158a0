"""One run of a role plan on the connected Ray cluster (driver side).

:func:`run_roles` starts one actor per role, pinned to the role's node; each
actor starts its role as a child process (see :mod:`.remote.roles`). The
scheduler's port is picked on the scheduler's node. The run has a hard
timeout; whatever happens, every role's process group is killed and every
actor is removed before it returns. After the run, the backend collects what
it measured itself from the nodes (e.g. BytePS's timeline).
"""

from __future__ import annotations

import time
from typing import Callable, Sequence

from . import backends
from .measurement import CommWindow, RoleOutcome, RunOutput, WorkerRecords
from .placement import Node
from .plan import Plan

#: how often the driver asks the actors whether their roles still run; each ask costs
#: a little CPU on every node, which a 2-core machine feels during training.
POLL_SECONDS = 0.5


class RoleFailed(RuntimeError):
    """A role died or the run timed out; the message names the role, node, status and log tail."""

    def __init__(self, message: str, output: "RunOutput | None" = None) -> None:
        super().__init__(message)
        self.output = output


def _remote_role_class():
    import ray

    from .remote.roles import RoleProcess

    return ray.remote(num_cpus=0, max_restarts=0)(RoleProcess)


def _node_strategy(node: Node):
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(node_id=node.node_id, soft=False)


class RoleGroup:
    """The roles of a plan, each a process owned by an actor on its node.

    Use as a context manager: leaving the block kills every role's process
    group and removes every actor, whatever happened inside.
    """

    def __init__(self, plan: Plan, log_dir: str) -> None:
        self.plan = plan
        self.log_dir = log_dir
        self.roles = list(plan.roles)
        self.actors: dict = {}
        self.root: dict = {}
        self.bringup_s = 0.0
        self.teardown_s = 0.0
        self.infos: dict = {}
        self.tails: dict = {}
        self.records: "list[WorkerRecords]" = []
        self.comm: "tuple[CommWindow, ...]" = ()

    def __enter__(self) -> "RoleGroup":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, timeout: float) -> float:
        """Create the actors, pick the scheduler's port on its node, start every role."""
        import ray

        t0 = time.perf_counter()
        actor_cls = _remote_role_class()
        for role in self.roles:
            self.actors[role.name] = actor_cls.options(scheduling_strategy=_node_strategy(role.node)).remote(
                role.name, self.log_dir
            )
        sched = self.plan.scheduler
        port = ray.get(self.actors[sched.name].pick_port.remote(sched.node.ip), timeout=timeout)
        self.root = {"DMLC_PS_ROOT_URI": sched.node.ip, "DMLC_PS_ROOT_PORT": str(port)}
        ray.get(
            [self.actors[r.name].start.remote(list(r.command), {**r.env, **self.root}) for r in self.roles],
            timeout=timeout,
        )
        self.bringup_s = time.perf_counter() - t0
        return self.bringup_s

    def poll(self) -> dict:
        """Role name -> exit status (None while running)."""
        import ray

        names = list(self.actors)
        return dict(zip(names, ray.get([self.actors[n].poll.remote() for n in names])))

    def log_tails(self, lines: int = 30) -> dict:
        """Role name -> the end of its log, read on its node."""
        import ray

        names = list(self.actors)
        return dict(zip(names, ray.get([self.actors[n].log_tail.remote(lines) for n in names], timeout=60)))

    def stop(self) -> None:
        """Kill every role's group, collect what it left, remove the actors (idempotent)."""
        if not self.actors:
            return
        import ray

        t0 = time.perf_counter()
        names = list(self.actors)
        try:
            ray.get([self.actors[n].stop.remote() for n in names], timeout=60)
            self.infos = dict(zip(names, ray.get([self.actors[n].info.remote() for n in names], timeout=60)))
            self.tails = self.log_tails()
            workers = [r for r in self.roles if r.role == "worker"]
            # one role may run several training processes (bpslaunch spawns one per GPU)
            records = ray.get([self.actors[r.name].process_records.remote() for r in workers], timeout=60)
            self.records = [WorkerRecords(name=r.name + suffix, node=r.node.name, records=tuple(recs))
                            for r, per_process in zip(workers, records) for suffix, recs in per_process]
            self.comm = self._collect()
        finally:
            # Killing the actor also kills any role it still owns (pdeathsig).
            for actor in self.actors.values():
                try:
                    ray.kill(actor, no_restart=True)
                except Exception:  # noqa: BLE001 - already gone
                    pass
            self.actors = {}
            self.teardown_s = time.perf_counter() - t0

    def _collect(self) -> "tuple[CommWindow, ...]":
        """The backend's own measurements, from the directories it names on each role's node."""
        import ray

        backend = backends.get(self.plan.backend)
        asks = [(r.name, d) for r in self.roles for d in backend.artifact_dirs(r)]
        if not asks:
            return ()
        found = ray.get([self.actors[name].read_files.remote(d) for name, d in asks], timeout=60)
        files: dict = {}
        for (name, _d), texts in zip(asks, found):
            files.setdefault(name, {}).update(texts)
        return tuple(backend.collect(self.plan, files))

    def outcomes(self) -> tuple:
        """Each role's fate, after :meth:`stop`."""
        return tuple(
            RoleOutcome(
                name=r.name,
                role=r.role,
                node=r.node.name,
                exit_code=self.infos.get(r.name, {}).get("exit_code"),
                log_path=self.infos.get(r.name, {}).get("log_path", ""),
                killed=bool(self.infos.get(r.name, {}).get("killed")),
                environ=self.infos.get(r.name, {}).get("environ", {}),
            )
            for r in self.roles
        )


def _watch(group: RoleGroup, deadline: float, timeout: float, exit_grace: float) -> "str | None":
    """Poll until every role exited 0; the reason it went wrong otherwise."""
    workers = [r.name for r in group.roles if r.role == "worker"]
    t_workers_done = None
    while True:
        codes = group.poll()
        bad = [n for n, c in codes.items() if c not in (None, 0)]
        if bad:
            return "role(s) exited with an error: " + ", ".join(f"{n} (exit {codes[n]})" for n in bad)
        if all(c == 0 for c in codes.values()):
            return None
        now = time.perf_counter()
        if t_workers_done is None and all(codes[w] == 0 for w in workers):
            t_workers_done = now
        if t_workers_done is not None and now - t_workers_done > exit_grace:
            stuck = [n for n, c in codes.items() if c is None]
            return f"workers finished but {', '.join(stuck)} did not exit within {exit_grace:.0f}s (ps-lite shutdown hangs)"
        if now > deadline:
            running = [n for n, c in codes.items() if c is None]
            return f"run timed out after {timeout:.0f}s (setting 'timeout'); still running: {', '.join(running)}"
        time.sleep(POLL_SECONDS)


def run_roles(
    plan: Plan,
    log_dir: str,
    *,
    timeout: float,
    on_progress: "Callable[[str], None] | None" = None,
    exit_grace: float = 30.0,
) -> RunOutput:
    """Run every role of ``plan`` to completion on the connected Ray cluster.

    Returns the workers' records and each role's fate. Raises :class:`RoleFailed`
    when a role exits non-zero, the workers do not all finish, or ``timeout``
    passes; the exception carries the partial :class:`RunOutput`. Teardown runs
    in every case, Ctrl-C included.
    """
    say = on_progress or (lambda _msg: None)
    t_start = time.perf_counter()
    with RoleGroup(plan, log_dir) as group:
        group.start(timeout)
        say(f"{len(group.roles)} roles started in {group.bringup_s:.1f}s (scheduler "
            f"{group.root['DMLC_PS_ROOT_URI']}:{group.root['DMLC_PS_ROOT_PORT']})")
        failure = _watch(group, t_start + timeout, timeout, exit_grace)
    output = RunOutput(
        workers=tuple(group.records),
        roles=group.outcomes(),
        bringup_s=group.bringup_s,
        teardown_s=group.teardown_s,
        wall_s=time.perf_counter() - t_start,
        log_dir=log_dir,
        backend=plan.backend,
        topology=plan.topology(),
        comm=group.comm,
    )
    if failure is None:
        unfinished = [w.name for w in output.workers if not w.finished]
        if unfinished:
            failure = "worker(s) exited 0 without finishing their steps: " + ", ".join(unfinished)
    if failure is not None:
        raise RoleFailed(_failure_message(failure, plan, output, group.tails), output)
    return output


def _failure_message(reason: str, plan: Plan, output: RunOutput, tails: dict) -> str:
    lines = [f"bpsperf run failed ({plan.backend}, trick {plan.trick.name}): {reason}"]
    # The roles that failed first, then the others that did not end cleanly.
    outcomes = sorted(output.roles, key=lambda o: (o.exit_code in (None, 0), o.name))
    for o in outcomes:
        if o.clean:
            continue
        status = "killed by teardown" if o.killed else f"exit code {o.exit_code}"
        lines.append(f"--- role {o.name} on node {o.node}: {status}; log {o.log_path}")
        tail = tails.get(o.name, "").strip()
        if tail and (o.exit_code not in (None, 0) or not o.killed):
            lines.extend("    " + t for t in tail.splitlines()[-15:])
    return "\n".join(lines)


def run_single_process(node: Node, command: Sequence[str], env: dict, log_dir: str, *, timeout: float) -> WorkerRecords:
    """Run one workload process with no parameter server (reference for scaling efficiency)."""
    import ray

    actor = _remote_role_class().options(scheduling_strategy=_node_strategy(node)).remote("single", log_dir)
    try:
        ray.get(actor.start.remote(list(command), env), timeout=timeout)
        code = ray.get(actor.wait.remote(timeout), timeout=timeout + 30)
        if code != 0:
            tail = ray.get(actor.log_tail.remote())
            ray.get(actor.stop.remote())
            raise RoleFailed(f"single-process reference run failed (exit {code}):\n{tail}")
        return WorkerRecords("single", node.name, tuple(ray.get(actor.records.remote())))
    finally:
        try:
            ray.get(actor.stop.remote(), timeout=30)
        finally:
            ray.kill(actor, no_restart=True)

