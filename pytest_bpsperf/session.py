"""A perf session: the Ray cluster, the runs, their results. Plain Python.

The pytest layer creates one :class:`PerfSession`, asks it to run jobs and
reads its results for reports. The session starts Ray lazily (the first job)
and stops what it started in :meth:`PerfSession.close`.
"""

from __future__ import annotations

import os
import re
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

from .launcher import RayCluster, run_job, single_process_job
from .measurement import JobOutput, Measurement, WorkerRecords, measure_worker
from .plan import Node, make_plan, workload_command
from .settings import Settings
from .tricks import Trick


@dataclass(frozen=True)
class JobRequest:
    """One training job that a test asked for."""

    nodeid: str
    test: str  # the test without its trick/repeat parameter (groups a matrix)
    trick: Trick
    repeat: int  # 0-based
    settings: Settings
    log_dir: str


@dataclass
class RunResult:
    """What one job measured; returned by the ``bpsperf_train`` fixture."""

    request: JobRequest
    backend: str
    output: JobOutput
    measurement: Measurement
    verdict: Any = None  # filled by the baseline comparison (pytest layer)
    _assert_hook: "Callable[[RunResult], None] | None" = field(default=None, repr=False)

    @property
    def img_per_sec(self) -> float:
        """Aggregate steady-state images/s (sum over worker processes)."""
        return self.measurement.img_per_sec

    @property
    def per_worker_img_per_sec(self) -> dict:
        """Worker name -> its steady-state img/s."""
        return self.measurement.per_worker_img_per_sec

    @property
    def warmup_steps(self) -> dict:
        """Worker name -> the step indices counted as warm-up."""
        return self.measurement.warmup_steps

    @property
    def bringup_s(self) -> float:
        """Seconds from the job's start until every role process ran."""
        return self.measurement.bringup_s

    @property
    def teardown_s(self) -> float:
        """Seconds to stop every role and remove its actor."""
        return self.measurement.teardown_s

    @property
    def log_dir(self) -> str:
        """Directory with one log per role (and the workers' records)."""
        return self.output.log_dir

    @property
    def trick(self) -> str:
        """Name of the trick this job ran under."""
        return self.request.trick.name

    def assert_within_baseline(self) -> None:
        """Fail the test when throughput regressed beyond tolerance against the stored baseline."""
        if self._assert_hook is None:
            raise RuntimeError("assert_within_baseline needs the bpsperf pytest plugin")
        self._assert_hook(self)

    def as_dict(self) -> dict:
        """JSON view of this result (the ``--bpsperf-json`` test entry)."""
        out = {
            "nodeid": self.request.nodeid,
            "test": self.request.test,
            "trick": self.request.trick.name,
            "trick_env": self.request.trick.as_dict()["env"],
            "repeat": self.request.repeat,
            "backend": self.backend,
            "settings": self.request.settings.as_dict(),
            "topology": dict(self.output.topology),
            "log_dir": self.output.log_dir,
            "roles": [r.as_dict() for r in self.output.roles],
        }
        out.update(self.measurement.as_dict())
        for name in ("single_img_per_sec", "timeline"):
            if self.output.extra and name in self.output.extra:
                out[name] = self.output.extra[name]
        if self.verdict is not None and hasattr(self.verdict, "as_dict"):
            out["verdict"] = self.verdict.as_dict()
        return out


def job_dir_name(nodeid: str) -> str:
    """A short file-system-safe name for a job's log directory."""
    name = nodeid.split("::")[-1]
    return re.sub(r"[^A-Za-z0-9_.+-]+", "-", name).strip("-")[:80] or "job"


def resolve_backend(setting: str, nodes: list, probe: "Callable[[Node], str | None]") -> tuple:
    """(backend, reason). ``auto``: byteps where GPUs exist and BytePS's MXNet plugin imports."""
    if setting != "auto":
        return setting, f"backend {setting} (as set)"
    gpu_nodes = [n for n in nodes if n.gpus > 0]
    if not gpu_nodes:
        return "mxnet", "auto -> mxnet: the cluster has no GPU"
    problem = probe(gpu_nodes[0])
    if problem:
        return "mxnet", f"auto -> mxnet: byteps.mxnet does not import on {gpu_nodes[0].name}: {problem}"
    return "byteps", f"auto -> byteps: {sum(n.gpus for n in gpu_nodes)} GPU(s) and byteps.mxnet imports"


def _probe_byteps(node: Node) -> "str | None":
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    @ray.remote(num_cpus=0)
    def probe() -> "str | None":
        try:
            import byteps.mxnet  # noqa: F401
        except Exception as exc:  # noqa: BLE001 - any import failure means "not usable"
            return f"{type(exc).__name__}: {exc}"
        return None

    strategy = NodeAffinitySchedulingStrategy(node_id=node.node_id, soft=False)
    return ray.get(probe.options(scheduling_strategy=strategy).remote(), timeout=120)


class PerfSession:
    """Owns the Ray cluster and the results of one pytest session."""

    def __init__(self, *, ray_address: str, base_log_dir: str, say: "Callable[[str], None] | None" = None,
                 verbose_ps: bool = False) -> None:
        self.cluster = RayCluster(address=ray_address, watch_dir=base_log_dir)
        self.base_log_dir = base_log_dir
        self.run_id = uuid.uuid4().hex[:12]
        self.say = say or (lambda _m: None)
        self.verbose_ps = verbose_ps
        self.backend_choice: "tuple | None" = None
        self._single_cache: dict = {}
        self._nodes: "list | None" = None  # kept after close(): the reports name them

    # -- cluster ---------------------------------------------------------------
    def nodes(self) -> list:
        """The cluster's nodes (starting or connecting to Ray on first use)."""
        if not self.cluster.started:
            self.cluster.start()
            self._nodes = self.cluster.nodes()
            where = self.cluster.address or "embedded, 127.0.0.1"
            self.say(
                f"Ray ({where}) up in {self.cluster.startup_s:.1f}s: "
                + ", ".join(f"{n.name} {n.ip} {n.cpus:g} CPU {n.gpus} GPU" for n in self._nodes)
            )
        return self._nodes

    def known_nodes(self) -> list:
        """The nodes this session ran on (also after :meth:`close`), without starting Ray."""
        return list(self._nodes or [])

    def backend(self, setting: str) -> str:
        """The backend to run, ``auto`` resolved once against the cluster."""
        if setting != "auto":
            return setting
        if self.backend_choice is None:
            self.backend_choice = resolve_backend(setting, self.nodes(), _probe_byteps)
            self.say(self.backend_choice[1])
        return self.backend_choice[0]

    def close(self) -> None:
        """Stop or disconnect Ray."""
        self.cluster.close()

    # -- jobs ------------------------------------------------------------------
    def run_job(self, request: JobRequest) -> JobOutput:
        """Bring up the roles of ``request`` on Ray and run them to the end."""
        settings = request.settings
        backend = self.backend(settings.backend)
        plan = make_plan(settings, request.trick, self.nodes(), backend=backend, run_id=self.run_id,
                         verbose_ps=self.verbose_ps)
        os.makedirs(request.log_dir, exist_ok=True)
        output = run_job(plan, request.log_dir, timeout=settings.timeout, on_progress=self.say)
        extra = {"backend": backend}
        if settings.scaling:
            single_dir = os.path.join(self.base_log_dir, "single-process")
            extra["single_img_per_sec"] = self.single_process_img_per_sec(settings, single_dir)
        return replace(output, extra={**output.extra, **extra})

    def single_process_img_per_sec(self, settings: Settings, log_dir: str) -> float:
        """img/s of the same workload in one process without a parameter server (cached)."""
        key = tuple(sorted(settings.workload().items()))
        if key not in self._single_cache:
            node = self.nodes()[0]
            env = {"OMP_NUM_THREADS": str(settings.omp_threads), "BPSPERF_RUN_ID": self.run_id}
            command = workload_command(settings, "local")
            os.makedirs(log_dir, exist_ok=True)
            records = single_process_job(node, command, env, log_dir, timeout=settings.timeout)
            self._single_cache[key] = measure_worker(records).img_per_sec
        return self._single_cache[key]


def worker_records_from(name: str, steps: "list[Mapping[str, Any]]", batch_size: int, node: str = "node-0") -> WorkerRecords:
    """Build a worker's records from plain step times (for feeding measurements through the hook)."""
    recs = [{"event": "start", "batch_size": batch_size}]
    for i, s in enumerate(steps):
        recs.append({"event": "step", "step": i, "images": batch_size, **s})
    recs.append({"event": "end"})
    return WorkerRecords(name=name, node=node, records=tuple(recs))


__all__ = ["JobRequest", "RunResult", "PerfSession", "resolve_backend", "worker_records_from"]
