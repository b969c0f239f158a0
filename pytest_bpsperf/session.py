"""A perf session's Ray side: the cluster, the backend it resolved, the runs it started.

The pytest layer creates one :class:`PerfSession` and asks it to run
:class:`~pytest_bpsperf.job.RunSpec` values; the results and their jobs are
the caller's. Ray starts lazily (the first run) and :meth:`PerfSession.close`
stops what the session started. Driver-side, plain Python.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from dataclasses import replace
from typing import Callable, Mapping, Sequence

from . import backends
from .arms import HEAD, Arm
from .backends import Backend
from .cluster import ClusterError, RayCluster
from .job import RunSpec
from .launcher import run_roles
from .reference import run_single_process
from .measurement import RunOutput, measure_worker
from .placement import Node
from .plan import Plan, arm_command, base_env, for_arm, local_command, make_plan
from .remote.environ import IMPORT_PATH
from .remote.preflight import PreflightError, check_interpreter, role_needs
from .remote.roles import SHIPPED_TREE
from .settings import Hardware, Settings
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


class PerfSession:
    """Owns the Ray cluster of one pytest session and runs role plans on it."""

    def __init__(self, *, ray_address: str, base_log_dir: str, say: "Callable[[str], None] | None" = None,
                 verbose_ps: bool = False, live: "Callable[[str], None] | None" = None,
                 connect_timeout: float = 30.0, notice: "Callable[[str], None] | None" = None) -> None:
        # notice: lines shown without -v (waiting for another session's measurement)
        self.cluster = RayCluster(address=ray_address, watch_dir=base_log_dir, connect_timeout=connect_timeout,
                                  say=notice or say or (lambda _m: None))
        self.start_error: "ClusterError | None" = None  # Ray did not come up: every later run gets this one error
        self.base_log_dir = base_log_dir
        self.run_id = uuid.uuid4().hex[:12]
        self.say = say or (lambda _m: None)
        self.live = live  # progress lines while training (roles up, step k/N every ~10 s)
        self.verbose_ps = verbose_ps
        self.backend_choice: "tuple[str, str] | None" = None
        self._single_cache: "dict[tuple, float]" = {}
        self._seen: "dict[str, Node]" = {}  # every node read, kept after close(): the reports name them
        self.hosts: "dict[str, str]" = {}  # node id -> the kind of roles it hosted (worker, server)
        self._shipped: "dict[str, dict]" = {}  # arm -> the runtime_env that ships its tree (existing cluster)

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

    def hardware(self) -> Hardware:
        """What the workload defaults follow on this cluster: the GPU nodes' GPUs, else the CPU nodes' cores."""
        nodes = [n for n in self.nodes() if n.cpus > 0 or n.gpus > 0]
        gpu_nodes = [n for n in nodes if n.gpus > 0]
        pool = gpu_nodes or nodes
        return Hardware(gpus=max((n.gpus for n in gpu_nodes), default=0),
                        cores=int(min((n.cpus for n in pool), default=1)) or 1)

    def host_profile_facts(self) -> dict:
        """Profile facts of the nodes that hosted roles (probed on each node), per node kind."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from .profile import cluster_profile_facts, collect_facts, host_facts

        probe = ray.remote(num_cpus=0)(collect_facts)
        kinds = {"worker": [], "server": []}
        for node_id, kind in sorted(self.hosts.items()):
            node = self._seen[node_id]
            strategy = NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)
            local = ray.get(probe.options(scheduling_strategy=strategy).remote(), timeout=60)
            kinds[kind].append(host_facts(local, node.accelerator, node.gpus))
        return cluster_profile_facts(kinds["worker"], kinds["server"])

    def backend(self, setting: str) -> str:
        """The backend to run, ``auto`` resolved once against the cluster (before anything is planned)."""
        if setting != "auto":
            return setting
        if self.backend_choice is None:
            self.backend_choice = backends.resolve(setting, self.nodes(), probe_on_node)
            self.say(self.backend_choice[1])
        return self.backend_choice[0]

    def close(self) -> None:
        """Stop or disconnect Ray."""
        self.cluster.close()

    # -- runs ------------------------------------------------------------------
    @property
    def ships_trees(self) -> bool:
        """Whether an arm's source tree travels to the nodes (an existing cluster) or is read in place."""
        return not self.cluster.owned

    def shipped(self, arm: Arm) -> "dict | None":
        """The role actors' ``runtime_env`` that brings ``arm``'s tree to the nodes (None on the embedded Ray).

        The tree is packed and uploaded to the cluster once per session, as
        ``ray.init`` ships the plugin: Ray's own packaging (``.gitignore`` and
        ``.rayignore`` honoured, ``.git`` left out), unpacked on each node as
        the actors' working directory.
        """
        if not self.ships_trees:
            return None
        if arm.name not in self._shipped:
            try:
                from ray._private.runtime_env.working_dir import upload_working_dir_if_needed
            except ImportError as exc:  # pragma: no cover - other Ray versions
                raise ClusterError(f"this Ray cannot ship the {arm.name} arm's tree to the nodes: {exc}") from None
            try:
                env = upload_working_dir_if_needed({"working_dir": arm.tree}, include_gitignore=True,
                                                   scratch_dir=tempfile.gettempdir())
            except Exception as exc:  # noqa: BLE001 - Ray raises many kinds (too large, unreadable)
                raise ClusterError(f"cannot ship the {arm.name} arm's tree {arm.tree} to the cluster: {exc}") \
                    from None
            self._shipped[arm.name] = {"working_dir": env["working_dir"]}
        return dict(self._shipped[arm.name])

    def run(self, spec: RunSpec) -> RunOutput:
        """Bring up the roles of ``spec`` on Ray and run them to the end (the node list is read now).

        With ``spec.arm`` (base-vs-head), every role runs as that arm's code (see
        :func:`~pytest_bpsperf.plan.for_arm`); the scaling reference runs for the head arm only.
        """
        settings = spec.settings
        backend = self.backend(settings.backend)
        nodes = self.nodes()
        arm = spec.arm
        shipping = self.shipped(arm) if arm is not None else None

        def plan_with(gpu_ids: "Mapping[int, Sequence[int]] | None" = None) -> Plan:
            plan = make_plan(settings, spec.trick, nodes, backend=backend, run_id=self.run_id,
                             verbose_ps=self.verbose_ps, gpu_ids=gpu_ids)
            return for_arm(plan, arm, runtime_env=shipping) if arm is not None else plan

        plan = plan_with()
        os.makedirs(spec.log_dir, exist_ok=True)
        label = f"{spec.nodeid.split('::')[-1]} (trick {spec.trick.name}, repeat {spec.repeat + 1}/{settings.repeats})"
        output = run_roles(plan, spec.log_dir, timeout=settings.timeout, placement_timeout=settings.placement_timeout,
                           replan=plan_with, on_progress=self.say, live=self.live, label=label, steps=settings.steps,
                           stall=StallWatch(settings.stall_timeout, settings.origins.get("stall_timeout", "default")))
        for role in output.roles:
            kind = "worker" if role.role == "worker" else "server"
            if self.hosts.get(role.node_id) != "worker":  # a node that hosts a worker counts as a worker node
                self.hosts[role.node_id] = kind
        if not settings.scaling or (arm is not None and arm.name != HEAD):
            return output
        worker_node = next(r.node for r in plan.roles if r.role == "worker")
        device = "gpu" if backends.get(backend).needs_gpu_workers else "cpu"
        single = self.single_process_img_per_sec(settings, worker_node, device,
                                                 os.path.join(self.base_log_dir, "single-process"), arm=arm)
        return replace(output, single_img_per_sec=single)

    def single_process_img_per_sec(self, settings: Settings, node: Node, device: str, log_dir: str,
                                   arm: "Arm | None" = None) -> float:
        """img/s of the same workload in one process on a worker node and its device, no parameter server
        (cached per node, device, workload and arm)."""
        key = (node.node_id, device, arm.name if arm else "") + tuple(sorted(settings.workload().items()))
        if key not in self._single_cache:
            env = {**base_env(settings), "BPSPERF_RUN_ID": self.run_id}
            command = local_command(settings, device)
            tree = runtime_env = None
            if arm is not None:
                env[IMPORT_PATH] = os.pathsep.join(arm.paths)
                command = arm_command(command, arm.python, arm.entry_path)
                runtime_env = self.shipped(arm)
                tree = SHIPPED_TREE if runtime_env else arm.tree
            os.makedirs(log_dir, exist_ok=True)
            records = run_single_process(node, command, env, log_dir, timeout=settings.timeout,
                                         gpus=1 if device == "gpu" else 0, tree=tree, runtime_env=runtime_env)
            self._single_cache[key] = measure_worker(records).img_per_sec
        return self._single_cache[key]

    # -- base-vs-head: can each arm's interpreter run the roles? ---------------
    def preflight(self, arms: "Sequence[Arm]", spec: RunSpec) -> "dict[str, dict]":
        """Arm name -> its interpreter's facts, checked on every node that the first run's plan uses.

        Raises :class:`~pytest_bpsperf.remote.preflight.PreflightError` naming the arm, the node and
        what does not import there.
        """
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        settings = spec.settings
        backend = self.backend(settings.backend)
        plan = make_plan(settings, spec.trick, self.nodes(), backend=backend, run_id=self.run_id)
        by_node: "dict[str, tuple[Node, set]]" = {}
        for role in plan.roles:
            by_node.setdefault(role.node.node_id, (role.node, set()))[1].update(
                role_needs(backend, role.role, settings))
        task = ray.remote(num_cpus=0, max_retries=0)(check_interpreter)
        found: "dict[str, dict]" = {}
        for arm in arms:
            options: dict = {}
            if self.ships_trees:
                options["runtime_env"] = self.shipped(arm)
            for node, needs in by_node.values():
                strategy = NodeAffinitySchedulingStrategy(node_id=node.node_id, soft=False)
                ref = task.options(scheduling_strategy=strategy, **options).remote(
                    arm.python, list(arm.paths), None if self.ships_trees else arm.tree, sorted(needs),
                    entry=settings.entry.spec if settings.entry else None, entry_path=arm.entry_path,
                    harness_dir=os.path.join(tempfile.gettempdir(), f"bpsperf-preflight-{self.run_id}"))
                try:
                    facts = ray.get(ref, timeout=600)
                except ray.exceptions.RayTaskError as exc:
                    cause = exc.cause if isinstance(getattr(exc, "cause", None), Exception) else exc
                    raise PreflightError(f"{arm.name} arm on node {node.name}: {cause}") from None
                found.setdefault(arm.name, facts)
        return found
