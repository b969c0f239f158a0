"""Ray: the cluster (embedded or existing) and one run of a role plan on it.

Embedded (the default): ``ray.init`` starts a local Ray on 127.0.0.1 owned by
this process, and :meth:`RayCluster.close` stops it. A reaper process watches
this process and kills what Ray left if it dies without closing (SIGKILL).
Existing (``ray_address`` set): connect, ship this package with ``py_modules``,
and on close disconnect without touching the cluster.

:func:`run_job` starts one actor per role, pinned to the role's node; each actor
starts its role as a child process (see :mod:`.roles`). The scheduler's port is
picked on the scheduler's node. The run has a hard timeout; whatever happens,
every role's process group is killed and every actor is removed before it returns.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from . import reaper
from .measurement import JobOutput, RoleOutcome, WorkerRecords
from .plan import Node, Plan

#: keeps every node of a local Ray on loopback (Ray otherwise picks the
#: machine's outward address); see Ray's node IP selection.
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
#: how often the driver asks the actors whether their roles still run; each ask costs
#: a little CPU on every node, which a 2-core machine feels during training.
POLL_SECONDS = 0.5


class RoleFailed(RuntimeError):
    """A role died or the run timed out; the message names the role, node, status and log tail."""

    def __init__(self, message: str, output: "JobOutput | None" = None) -> None:
        super().__init__(message)
        self.output = output


class ClusterError(RuntimeError):
    """Ray could not be started or reached."""


@dataclass
class RayCluster:
    """The Ray cluster of a session: embedded (started here) or existing."""

    address: str = ""
    num_cpus: "int | None" = None
    watch_dir: "str | None" = None
    started: bool = False
    owned: bool = False
    startup_s: float = 0.0
    shutdown_s: float = 0.0
    _reaper: "reaper.ReaperHandle | None" = None

    def start(self) -> "RayCluster":
        """Start (embedded) or connect (existing); idempotent."""
        if self.started:
            return self
        t0 = time.perf_counter()
        if not self.address:
            # Ray reads this at import, into a constant; the environment reaches its
            # child processes, the constant covers a Ray imported before us.
            os.environ.update(LOOPBACK_ENV)
        import ray

        if not self.address:
            try:
                from ray._private import ray_constants

                ray_constants.ENABLE_RAY_CLUSTER = False
            except (ImportError, AttributeError):  # pragma: no cover - other Ray versions
                pass

        if ray.is_initialized():
            raise ClusterError("Ray is already initialized in this process; bpsperf needs its own connection")
        kwargs = dict(log_to_driver=False, configure_logging=False, include_dashboard=False)
        if self.address:
            import pytest_bpsperf

            try:
                ray.init(
                    address=self.address,
                    runtime_env={"py_modules": [os.path.dirname(pytest_bpsperf.__file__)]},
                    **kwargs,
                )
            except Exception as exc:  # noqa: BLE001 - Ray raises many kinds
                raise ClusterError(f"cannot connect to the Ray cluster at {self.address!r}: {exc}") from exc
            self.owned = False
        else:
            before = set(reaper.children(os.getpid()))
            try:
                ray.init(num_cpus=self.num_cpus, _node_ip_address="127.0.0.1", **kwargs)
            except Exception as exc:  # noqa: BLE001
                raise ClusterError(f"cannot start an embedded Ray: {exc}") from exc
            self.owned = True
            address = ray.util.get_node_ip_address()
            if address != "127.0.0.1":
                ray.shutdown()
                raise ClusterError(f"the embedded Ray came up on {address}, not 127.0.0.1")
            # Ray's daemons are our children; should this process be killed,
            # the reaper kills the ones that do not die with it.
            spawned = [p for p in reaper.descendants(os.getpid()) if p not in before]
            self._reaper = reaper.spawn(os.getpid(), spawned, self.watch_dir)
        self.started = True
        self.startup_s = time.perf_counter() - t0
        return self

    def nodes(self) -> list:
        """The alive nodes, head first, as planner :class:`Node` values."""
        import ray

        nodes = []
        for i, raw in enumerate(n for n in ray.nodes() if n.get("Alive")):
            res = raw.get("Resources", {})
            nodes.append(
                Node(
                    node_id=raw["NodeID"],
                    ip=raw["NodeManagerAddress"],
                    cpus=float(res.get("CPU", 0)),
                    gpus=int(res.get("GPU", 0)),
                    label=f"node-{i}",
                )
            )
        return nodes

    def close(self) -> None:
        """Disconnect; an embedded Ray is stopped and checked gone."""
        if not self.started:
            return
        t0 = time.perf_counter()
        import ray

        ray.shutdown()
        if self._reaper is not None:
            self._reaper.finish()
            self._reaper = None
        self.started = False
        self.shutdown_s = time.perf_counter() - t0


def _remote_role_class():
    import ray

    from .roles import RoleProcess

    return ray.remote(num_cpus=0, max_restarts=0)(RoleProcess)


def _node_strategy(node: Node):
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(node_id=node.node_id, soft=False)


class RoleGroup:
    """Some or all roles of a plan, each a process owned by an actor on its node.

    Use as a context manager: leaving the block kills every role's process
    group and removes every actor, whatever happened inside.
    """

    def __init__(self, plan: Plan, log_dir: str, roles: "Sequence[str] | None" = None) -> None:
        self.plan = plan
        self.log_dir = log_dir
        self.roles = [r for r in plan.roles if roles is None or r.name in roles]
        self.actors: dict = {}
        self.root: dict = {}
        self.bringup_s = 0.0
        self.teardown_s = 0.0
        self.infos: dict = {}
        self.tails: dict = {}
        self.records: list = []
        self.traces: dict = {}  # BytePS trace dir -> {path: comm.json text}

    def timelines(self) -> dict:
        """Trace dir -> PUSH/PULL summary of its window (or the reason there is none)."""
        from .timeline import TraceError, timeline_from_files

        out = {}
        for trace_dir, files in self.traces.items():
            start = int(next(r.env["BYTEPS_TRACE_START_STEP"] for r in self.roles
                             if r.env.get("BYTEPS_TRACE_DIR") == trace_dir))
            try:
                out[trace_dir] = timeline_from_files(files, start).summary().as_dict()
            except TraceError as exc:
                out[trace_dir] = {"error": str(exc)}
        return out

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
        picker = self.actors.get(sched.name)
        if picker is None:  # the scheduler is not in this group: ask a throw-away actor on its node
            picker = actor_cls.options(scheduling_strategy=_node_strategy(sched.node)).remote("port", self.log_dir)
        port = ray.get(picker.pick_port.remote(sched.node.ip), timeout=timeout)
        if sched.name not in self.actors:
            ray.kill(picker, no_restart=True)
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
            records = ray.get([self.actors[r.name].records.remote() for r in workers], timeout=60)
            self.records = [WorkerRecords(name=r.name, node=r.node.name, records=tuple(recs))
                            for r, recs in zip(workers, records)]
            traced = [r for r in workers if r.env.get("BYTEPS_TRACE_ON") == "1"]
            files = ray.get([self.actors[r.name].read_files.remote(r.env["BYTEPS_TRACE_DIR"]) for r in traced],
                            timeout=60)
            for r, found in zip(traced, files):
                self.traces.setdefault(r.env["BYTEPS_TRACE_DIR"], {}).update(found)
        finally:
            # Killing the actor also kills any role it still owns (pdeathsig).
            for actor in self.actors.values():
                try:
                    ray.kill(actor, no_restart=True)
                except Exception:  # noqa: BLE001 - already gone
                    pass
            self.actors = {}
            self.teardown_s = time.perf_counter() - t0

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


def run_job(
    plan: Plan,
    log_dir: str,
    *,
    timeout: float,
    on_progress: "Callable[[str], None] | None" = None,
    exit_grace: float = 30.0,
) -> JobOutput:
    """Run every role of ``plan`` to completion on the connected Ray cluster.

    Returns the workers' records and each role's fate. Raises :class:`RoleFailed`
    when a role exits non-zero, the workers do not all finish, or ``timeout``
    passes; the exception carries the partial :class:`JobOutput`. Teardown runs
    in every case, Ctrl-C included.
    """
    say = on_progress or (lambda _msg: None)
    t_start = time.perf_counter()
    with RoleGroup(plan, log_dir) as group:
        group.start(timeout)
        say(f"{len(group.roles)} roles started in {group.bringup_s:.1f}s (scheduler "
            f"{group.root['DMLC_PS_ROOT_URI']}:{group.root['DMLC_PS_ROOT_PORT']})")
        failure = _watch(group, t_start + timeout, timeout, exit_grace)
    output = JobOutput(
        workers=tuple(group.records),
        roles=group.outcomes(),
        bringup_s=group.bringup_s,
        teardown_s=group.teardown_s,
        wall_s=time.perf_counter() - t_start,
        log_dir=log_dir,
        topology=plan.topology(),
        extra={"timeline": group.timelines()} if group.traces else {},
    )
    if failure is None:
        unfinished = [w.name for w in output.workers if not w.finished]
        if unfinished:
            failure = "worker(s) exited 0 without finishing their steps: " + ", ".join(unfinished)
    if failure is not None:
        raise RoleFailed(_failure_message(failure, plan, output, group.tails), output)
    return output


def _failure_message(reason: str, plan: Plan, output: JobOutput, tails: dict) -> str:
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


def single_process_job(node: Node, command: Sequence[str], env: dict, log_dir: str, *, timeout: float) -> WorkerRecords:
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

