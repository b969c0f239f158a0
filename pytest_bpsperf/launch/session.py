"""A perf session's Ray side: the cluster, the backend it resolved, the runs it started.

The pytest layer creates one :class:`PerfSession` and asks it to run
:class:`~pytest_bpsperf.runs.spec.RunSpec` values; the results and their jobs are
the caller's. Ray starts lazily (the first run) and :meth:`PerfSession.close`
stops what the session started. Driver-side, plain Python.
"""

from __future__ import annotations

import ast
import os
import pickle
import subprocess
import sys
import uuid
from dataclasses import replace
from typing import Any, Callable, Mapping, Sequence

from .. import backends
from ..backends import Backend
from ..config.arms import Arm
from ..config.settings import Hardware
from ..judge.measurement import measure
from ..planning.planner import make_plan, reference_plan
from ..remote.preflight import PreflightError, check_interpreter, role_needs
from ..runs.output import RunOutput
from ..runs.plan import Node, Plan
from ..runs.spec import RunSpec
from .cluster import ClusterError, RayCluster
from .launcher import run_roles
from .shipping import TreeShipping, shipped_plan
from .watchdog import StallWatch


def _probe_here(backend: Backend) -> "str | None":
    """The body of the probe task: ``backend.probe()`` on the node the task runs on.

    A plain function, because ``ray.remote`` takes functions and classes, not
    bound methods (``ray.remote(backend.probe)`` raises TypeError).
    """
    return backend.probe()


def probe_on_node(backend: Backend, node: Node) -> "str | None":
    """Run ``backend.probe`` on ``node`` in a Ray task; why the backend cannot run there, or None."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    strategy = NodeAffinitySchedulingStrategy(node_id=node.node_id, soft=False)
    task = ray.remote(num_cpus=0)(_probe_here).options(scheduling_strategy=strategy)
    return ray.get(task.remote(backend), timeout=120)


def first_step_allowance(backend: str, plan: "Plan | None" = None) -> float:
    """Seconds a worker may take to its first step: longer where the backend trains on GPUs (or
    ``plan``'s workers hold GPUs)."""
    from .watchdog import FIRST_STEP_GPU_S, FIRST_STEP_S

    on_gpus = backends.get(backend).needs_gpu_workers or (plan is not None and any(r.gpus for r in plan.roles))
    return FIRST_STEP_GPU_S if on_gpus else FIRST_STEP_S


def _local_node() -> Node:
    """This machine as a node of the embedded Ray, with the cores and GPUs the settings counted."""
    import socket

    from ..config.settings import Hardware

    hardware = Hardware.detect()
    return Node(
        node_id="local", ip="127.0.0.1", cpus=float(hardware.cores), gpus=hardware.gpus, label=socket.gethostname()
    )


def _probe_in_subprocess(backend: Backend, node: Node) -> "str | None":
    """``backend.probe()`` in a fresh interpreter here (the pytest process never imports MXNet)."""
    code = "import pickle, sys; print(repr(pickle.loads(sys.stdin.buffer.read()).probe()))"
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code], input=pickle.dumps(backend), capture_output=True, timeout=300, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"the probe could not run here: {exc}"
    out = proc.stdout.decode(errors="replace").strip().splitlines()
    if proc.returncode != 0 or not out:
        tail = proc.stderr.decode(errors="replace").strip().splitlines()[-1:]
        return f"the probe failed here (exit {proc.returncode}): {' '.join(tail)}"
    return ast.literal_eval(out[-1])


class PerfSession:
    """Owns the Ray cluster of one pytest session and runs role plans on it."""

    def __init__(
        self,
        *,
        ray_address: str,
        base_log_dir: str,
        say: "Callable[[str], None] | None" = None,
        verbose_ps: bool = False,
        live: "Callable[[str], None] | None" = None,
        connect_timeout: float = 30.0,
        notice: "Callable[[str], None] | None" = None,
        runtime_env: "object | None" = None,
        runtime_env_origin: str = "default",
    ) -> None:
        # notice: lines shown without -v (waiting for another session's measurement)
        self.cluster = RayCluster(
            address=ray_address,
            watch_dir=base_log_dir,
            connect_timeout=connect_timeout,
            say=notice or say or (lambda _m: None),
            runtime_env=runtime_env,
            runtime_env_origin=runtime_env_origin,
        )
        self.start_error: "ClusterError | None" = None  # Ray did not come up: every later run gets this one error
        self.base_log_dir = base_log_dir
        self.run_id = uuid.uuid4().hex[:12]
        self.say = say or (lambda _m: None)
        self.live = live  # progress lines while training (roles up, step k/N every ~10 s)
        self.verbose_ps = verbose_ps
        self.backend_choice: "tuple[str, str] | None" = None
        #: auto chose another backend than BytePS on a cluster with GPUs (torch, or mxnet on the CPUs):
        #: the node probed, why BytePS cannot run there, the backend chosen
        self.backend_fallback: "dict | None" = None
        self._checked: "set[str]" = set()  # backends that were set and probed on a GPU node
        self._single_cache: "dict[tuple, float]" = {}
        self._seen: "dict[str, Node]" = {}  # every node read, kept after close(): the reports name them
        self.hosts: "dict[str, str]" = {}  # node id -> the kind of roles it hosted (worker, server)
        self.shipping = TreeShipping(self.cluster)  # what travels to the nodes of an existing cluster

    # -- cluster ---------------------------------------------------------------
    def nodes(self) -> "list[Node]":
        """The cluster's alive nodes, read now (starting or connecting to Ray on first use)."""
        first = not self.cluster.started
        if first:
            if self.start_error is not None:
                raise self.start_error  # once for the session: no new attempt per test
            try:
                self.cluster.start()
            except ClusterError as exc:
                self.start_error = exc
                raise
        nodes = self.cluster.nodes()
        for n in nodes:
            self._seen[n.node_id] = n
        if first:
            where = self.cluster.address or "embedded, 127.0.0.1"
            self.say(f"Ray ({where}) up in {self.cluster.startup_s:.1f}s: " + "; ".join(n.describe() for n in nodes))
        return nodes

    def known_nodes(self) -> "list[Node]":
        """Every node this session saw (also after :meth:`close`), without starting Ray."""
        return list(self._seen.values())

    def hardware(self, server_resource: str = "bpsperf_server") -> Hardware:
        """What the defaults follow on this cluster: the GPU nodes' GPUs, else the CPU nodes' cores; the
        nodes that servers may have to themselves (``server_nodes=auto``): the ones marked with
        ``server_resource``, else beside GPU worker nodes the CPU-only ones (on a cluster of CPU nodes
        alone the workers need them too: unknown)."""
        from ..planning.placement import server_candidates

        nodes = [n for n in self.nodes() if n.cpus > 0 or n.gpus > 0]
        gpu_nodes = [n for n in nodes if n.gpus > 0]
        pool = gpu_nodes or nodes
        marked = [n for n in nodes if n.resources.get(server_resource, 0) > 0 and n.cpus > 0]
        servers = len(marked) if marked else (len(server_candidates(nodes, server_resource)[0]) if gpu_nodes else -1)
        return Hardware(
            gpus=max((n.gpus for n in gpu_nodes), default=0),
            cores=int(min((n.cpus for n in pool), default=1)) or 1,
            gpu_nodes=len(gpu_nodes),
            server_nodes=servers,
        )

    def profile_facts(self) -> dict:
        """The facts of this session's hardware profile: on an existing cluster where roles ran, of the
        nodes that hosted them (:meth:`host_profile_facts`); else of this machine, with the cluster's
        shape once Ray is up."""
        from ..remote.hardware import collect_facts

        if self.cluster.started and not self.cluster.owned and self.hosts:
            return self.host_profile_facts()  # the nodes that trained, not this machine
        cluster = None
        if self.cluster.started:
            cluster = {"nodes": [{"gpus": n.gpus, "cpus": n.cpus} for n in self.nodes()]}
        return collect_facts(cluster=cluster)

    def host_profile_facts(self) -> dict:
        """Profile facts of the nodes that hosted roles (probed on each node), per node kind."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from ..remote.hardware import collect_facts, host_facts
        from ..store.profile import cluster_profile_facts

        probe = ray.remote(num_cpus=0)(collect_facts)
        kinds: "dict[str, list[dict[str, Any]]]" = {"worker": [], "server": []}
        for node_id, kind in sorted(self.hosts.items()):
            node = self._seen[node_id]
            strategy = NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)
            local = ray.get(probe.options(scheduling_strategy=strategy).remote(), timeout=60)
            kinds[kind].append(host_facts(local, node.accelerator, node.gpus))
        return cluster_profile_facts(kinds["worker"], kinds["server"])

    def backend(self, setting: str) -> str:
        """The backend to run, ``auto`` resolved once against the cluster (before anything is planned).

        A GPU backend that was set is probed on a GPU node once; where it cannot run
        that is a :class:`~pytest_bpsperf.backends.PlanError`.
        """
        if setting != "auto":
            if setting not in self._checked:
                backends.resolve(setting, self.nodes(), probe_on_node)
                self._checked.add(setting)
            return setting
        if self.backend_choice is None:
            return self._choose(backends.resolve(setting, self.nodes(), probe_on_node), self.nodes())
        return self.backend_choice[0]

    def choose_backend_here(self, setting: str) -> str:
        """:meth:`backend` on the embedded Ray, before it starts: this machine is the only node."""
        here = _local_node()
        if setting != "auto":
            backends.resolve(setting, [here], _probe_in_subprocess)
            self._checked.add(setting)
            return setting
        if self.backend_choice is None:
            return self._choose(backends.resolve(setting, [here], _probe_in_subprocess), [here])
        return self.backend_choice[0]

    def _choose(self, choice: "tuple[str, str]", nodes: "Sequence[Node]") -> str:
        """Keep ``choice`` (backend, reason) as the session's, say why, note a fallback; the backend."""
        self.backend_choice = choice
        self.say(choice[1])
        gpu_nodes = [n for n in nodes if n.gpus > 0]
        if choice[0] != backends.AUTO["gpu"] and gpu_nodes:  # auto fell back: torch on the GPUs, or the CPU pick
            prefix = f"auto -> {choice[0]}: on {gpu_nodes[0].name}, "
            reason = choice[1][len(prefix) :] if choice[1].startswith(prefix) else choice[1]
            self.backend_fallback = {"node": gpu_nodes[0].name, "reason": reason, "backend": choice[0]}
        return choice[0]

    def close(self) -> None:
        """Stop or disconnect Ray."""
        self.cluster.close()

    # -- runs ------------------------------------------------------------------
    def run(self, spec: RunSpec) -> RunOutput:
        """Bring up the roles of ``spec`` on Ray and run them to the end (the node list is read now).

        With ``spec.arm`` (base-vs-head), every role runs as that arm's code (see
        :func:`~pytest_bpsperf.planning.planner.for_arm`), and no scaling reference runs: a pair's verdict
        does not use it, and it cost a run per job (a tenth of a typical job's time).
        """
        settings = spec.settings
        backend = self.backend(settings.backend)
        nodes = self.nodes()
        arm = spec.arm
        shipping = self.shipping.actor_env(settings, arm)
        planned = self.shipping.plan_settings(settings, arm)

        def plan_with(gpu_ids: "Mapping[int, Sequence[int]] | None" = None) -> Plan:
            plan = make_plan(
                planned,
                spec.trick,
                nodes,
                backend=backends.get(backend),
                run_id=self.run_id,
                verbose_ps=self.verbose_ps,
                gpu_ids=gpu_ids,
            )
            return shipped_plan(plan, arm, shipping)

        plan = plan_with()
        os.makedirs(spec.log_dir, exist_ok=True)
        label = f"{spec.nodeid.split('::')[-1]} (trick {spec.trick.name}, repeat {spec.repeat + 1}/{settings.repeats})"
        output = run_roles(
            plan,
            spec.log_dir,
            timeout=settings.timeout,
            placement_timeout=settings.placement_timeout,
            replan=plan_with,
            on_progress=self.say,
            live=self.live,
            label=label,
            steps=settings.steps,
            stall=StallWatch(
                settings.stall_timeout,
                settings.origins.get("stall_timeout", "default"),
                first_step_s=first_step_allowance(backend, plan),
            ),
        )
        for role in output.roles:
            kind = "worker" if role.role == "worker" else "server"
            if self.hosts.get(role.node_id) != "worker":  # a node that hosts a worker counts as a worker node
                self.hosts[role.node_id] = kind
        if not settings.scaling or arm is not None:
            return output
        node_img, per_gpu = self.references(spec, backend, plan)
        return replace(output, node_img_per_sec=node_img, single_img_per_sec=per_gpu)

    def references(self, spec: RunSpec, backend: str, plan: Plan) -> "tuple[float, float]":
        """(img/s of one worker node alone, img/s of one process alone on one of its GPUs or cores).

        The scaling references, as the BytePS report computed its efficiency: the
        run's first worker node alone under the same trick, with all its GPUs
        (on CPUs: its one worker process), and, on GPUs, one process on one GPU
        for the per-GPU figure. Each is a plan (:func:`~pytest_bpsperf.planning.planner.reference_plan`)
        that the launcher runs like any other, cached per node, trick, workload and arm.
        """
        worker = next(r for r in plan.roles if r.role == "worker")
        gpus = int(plan.bundles[worker.bundle].resources.get("GPU", 0))
        on_gpus = gpus > 0  # only a backend that trains on GPUs reserves them
        node_img = self._reference(spec, backend, worker.node, gpus, one_gpu=False)
        return node_img, (self._reference(spec, backend, worker.node, gpus, one_gpu=True) if on_gpus else node_img)

    def _reference(self, spec: RunSpec, backend: str, node: Node, gpus: int, *, one_gpu: bool) -> float:
        settings, arm = spec.settings, spec.arm
        kind = "gpu" if one_gpu else "node"
        key = (node.node_id, backend, kind, spec.trick.name, arm.name if arm else "") + tuple(
            sorted(settings.workload(backend).items())
        )
        if key not in self._single_cache:
            shipping = self.shipping.actor_env(settings, arm)
            planned = self.shipping.plan_settings(settings, arm)

            def plan_with(gpu_ids: "Mapping[int, Sequence[int]] | None" = None) -> Plan:
                p = reference_plan(
                    planned,
                    spec.trick,
                    node,
                    backend=backends.get(backend),
                    run_id=self.run_id,
                    gpus=gpus,
                    one_gpu=one_gpu,
                    gpu_ids=gpu_ids,
                )
                return shipped_plan(p, arm, shipping)

            log_dir = os.path.join(self.base_log_dir, "reference", f"{spec.trick.name}-{kind}")
            os.makedirs(log_dir, exist_ok=True)
            plan = plan_with()
            output = run_roles(
                plan,
                log_dir,
                timeout=settings.timeout,
                placement_timeout=settings.placement_timeout,
                replan=plan_with,
                on_progress=self.say,
                label=f"scaling reference ({kind}, trick {spec.trick.name})",
                steps=settings.steps,
                stall=StallWatch(
                    settings.stall_timeout,
                    settings.origins.get("stall_timeout", "default"),
                    first_step_s=first_step_allowance(backend, plan),
                ),
            )
            self._single_cache[key] = measure(output).img_per_sec
        return self._single_cache[key]

    def push_pull_check(self, spec: RunSpec) -> None:
        """BytePS end to end before anything is timed: one push_pull of a small tensor through a real
        scheduler and server, from one worker process on one GPU. Raises RoleFailed naming what failed."""
        from ..backends.byteps import PushPullProbe
        from ..config.tricks import Trick

        settings = spec.settings.with_values(
            workers=1, server_nodes=1, servers_per_node=1, gpus_per_worker=1, trace=None, launch="direct"
        )
        nodes = self.nodes()

        def plan_with(gpu_ids: "Mapping[int, Sequence[int]] | None" = None) -> Plan:
            return make_plan(
                settings, Trick("default"), nodes, backend=PushPullProbe(), run_id=self.run_id, gpu_ids=gpu_ids
            )

        log_dir = os.path.join(self.base_log_dir, "preflight-push-pull")
        os.makedirs(log_dir, exist_ok=True)
        run_roles(
            plan_with(),
            log_dir,
            timeout=min(300.0, settings.timeout),
            placement_timeout=settings.placement_timeout,
            replan=plan_with,
            on_progress=self.say,
            stall=StallWatch(0.0, "default", first_step_s=first_step_allowance("byteps")),
        )

    # -- base-vs-head: can each arm's interpreter run the roles? ---------------
    def preflight(self, arms: "Sequence[Arm | None]", spec: RunSpec) -> "dict[str, dict]":
        """Arm name -> its interpreter's facts, checked on every node that the first run's plan uses.

        ``None`` in ``arms`` is the nodes' own interpreter (a session without a base; its facts are
        under ``""``). Workers' nodes also check the ``.rec`` they will read. Raises
        :class:`~pytest_bpsperf.remote.preflight.PreflightError` naming the arm, the node and what
        does not import there.
        """
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        settings = spec.settings
        backend = self.backend(settings.backend)
        plan = make_plan(settings, spec.trick, self.nodes(), backend=backends.get(backend), run_id=self.run_id)
        by_node: "dict[str, tuple[Node, set]]" = {}
        for role in plan.roles:
            by_node.setdefault(role.node.node_id, (role.node, set()))[1].update(
                role_needs(backend, role.role, settings)
            )
        workers = {r.node.node_id for r in plan.roles if r.role == "worker"}
        data = settings.data if settings.data != "synthetic" else None
        task: Any = ray.remote(num_cpus=0, max_retries=0)(check_interpreter)  # Ray's stubs type no keywords
        asked = []
        for arm in arms:
            options: dict = {}
            shipping = self.shipping.actor_env(settings, arm)
            if shipping is not None:
                options["runtime_env"] = shipping
            planned = self.shipping.plan_settings(settings, arm)  # a shipped entry point imports from what Ray unpacked
            for node_id, (node, needs) in by_node.items():
                strategy = NodeAffinitySchedulingStrategy(node_id=node.node_id, soft=False)
                asked.append(
                    (
                        arm,
                        node,
                        task.options(scheduling_strategy=strategy, **options).remote(
                            arm.python if arm else None,
                            list(arm.paths) if arm else [],
                            None if (arm is None or self.shipping.ships_trees) else arm.tree,
                            sorted(needs),
                            entry=settings.entry.spec if settings.entry else None,
                            entry_path=arm.entry_path if arm else (planned.entry.path if planned.entry else None),
                            data=data if node_id in workers else None,
                        ),
                    )
                )
        found: "dict[str, dict]" = {}
        for arm, node, ref in asked:  # all nodes check at once; the first problem is the error
            try:
                facts = ray.get(ref, timeout=600)
            except ray.exceptions.RayTaskError as exc:
                cause = exc.cause if isinstance(getattr(exc, "cause", None), Exception) else exc
                who = f"{arm.name} arm on node" if arm is not None else "node"
                raise PreflightError(f"{who} {node.name}: {cause}") from None
            found.setdefault(arm.name if arm is not None else "", facts)
        return found
