"""A perf session's Ray side: the cluster, the backend it resolved, the runs it started.

The pytest layer creates one :class:`PerfSession` and asks it to run
:class:`~pytest_bpsperf.job.RunSpec` values; the results and their jobs are
the caller's. Ray starts lazily (the first run) and :meth:`PerfSession.close`
stops what the session started. Driver-side, plain Python.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import replace
from typing import Callable

from . import backends
from .backends import Backend
from .cluster import RayCluster
from .job import RunSpec
from .launcher import run_roles, run_single_process
from .measurement import RunOutput, measure_worker
from .placement import Node
from .plan import base_env, local_command, make_plan
from .settings import Settings


def probe_on_node(backend: Backend, node: Node) -> "str | None":
    """Run ``backend.probe`` on ``node`` in a Ray task; why the backend cannot run there, or None."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    strategy = NodeAffinitySchedulingStrategy(node_id=node.node_id, soft=False)
    task = ray.remote(num_cpus=0)(backend.probe).options(scheduling_strategy=strategy)
    return ray.get(task.remote(), timeout=120)


class PerfSession:
    """Owns the Ray cluster of one pytest session and runs role plans on it."""

    def __init__(self, *, ray_address: str, base_log_dir: str, say: "Callable[[str], None] | None" = None,
                 verbose_ps: bool = False, live: "Callable[[str], None] | None" = None) -> None:
        self.cluster = RayCluster(address=ray_address, watch_dir=base_log_dir)
        self.base_log_dir = base_log_dir
        self.run_id = uuid.uuid4().hex[:12]
        self.say = say or (lambda _m: None)
        self.live = live  # progress lines while training (roles up, step k/N every ~10 s)
        self.verbose_ps = verbose_ps
        self.backend_choice: "tuple[str, str] | None" = None
        self._single_cache: "dict[tuple, float]" = {}
        self._nodes: "list[Node] | None" = None  # kept after close(): the reports name them

    # -- cluster ---------------------------------------------------------------
    def nodes(self) -> "list[Node]":
        """The cluster's nodes (starting or connecting to Ray on first use)."""
        if not self.cluster.started:
            self.cluster.start()
            self._nodes = self.cluster.nodes()
            where = self.cluster.address or "embedded, 127.0.0.1"
            self.say(
                f"Ray ({where}) up in {self.cluster.startup_s:.1f}s: "
                + ", ".join(f"{n.name} {n.ip} {n.cpus:g} CPU {n.gpus} GPU" for n in self._nodes)
            )
        return self._nodes or []

    def known_nodes(self) -> "list[Node]":
        """The nodes this session ran on (also after :meth:`close`), without starting Ray."""
        return list(self._nodes or [])

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
    def run(self, spec: RunSpec) -> RunOutput:
        """Bring up the roles of ``spec`` on Ray and run them to the end."""
        settings = spec.settings
        backend = self.backend(settings.backend)
        plan = make_plan(settings, spec.trick, self.nodes(), backend=backend, run_id=self.run_id,
                         verbose_ps=self.verbose_ps)
        os.makedirs(spec.log_dir, exist_ok=True)
        label = f"{spec.nodeid.split('::')[-1]} (trick {spec.trick.name}, repeat {spec.repeat + 1}/{settings.repeats})"
        output = run_roles(plan, spec.log_dir, timeout=settings.timeout, on_progress=self.say, live=self.live,
                           label=label, steps=settings.steps)
        if not settings.scaling:
            return output
        single = self.single_process_img_per_sec(settings, os.path.join(self.base_log_dir, "single-process"))
        return replace(output, single_img_per_sec=single)

    def single_process_img_per_sec(self, settings: Settings, log_dir: str) -> float:
        """img/s of the same workload in one process without a parameter server (cached)."""
        key = tuple(sorted(settings.workload().items()))
        if key not in self._single_cache:
            env = {**base_env(settings), "BPSPERF_RUN_ID": self.run_id}
            os.makedirs(log_dir, exist_ok=True)
            records = run_single_process(self.nodes()[0], local_command(settings), env, log_dir,
                                         timeout=settings.timeout)
            self._single_cache[key] = measure_worker(records).img_per_sec
        return self._single_cache[key]
