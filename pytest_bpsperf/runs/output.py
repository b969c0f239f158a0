"""What one run of the roles produced: each role's outcome, each worker's step records, the load beside them.

The launcher (or a user's ``pytest_bpsperf_run`` hook) returns a :class:`RunOutput`;
:mod:`pytest_bpsperf.judge.measurement` turns it into img/s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..remote.environ import reported


@dataclass(frozen=True)
class CommWindow:
    """Communication time a backend measured itself (BytePS's timeline of one worker node)."""

    name: str  # e.g. the trace directory of a worker node
    steps: int = 0
    push_s: "float | None" = None  # mean seconds per step
    pull_s: "float | None" = None
    error: "str | None" = None  # why there is no measurement
    detail: Mapping[str, Any] = field(default_factory=dict, hash=False)  # figures; BytePS adds "tensors"

    def as_dict(self) -> "dict[str, Any]":
        """JSON view."""
        if self.error is not None:
            return {"name": self.name, "error": self.error}
        return {
            "name": self.name,
            "steps": self.steps,
            "mean_push_s": self.push_s,
            "mean_pull_s": self.pull_s,
            **dict(self.detail),
        }


@dataclass(frozen=True)
class RoleOutcome:
    """How one role process ended."""

    name: str
    role: str
    node: str
    exit_code: "int | None"
    log_path: str
    killed: bool = False
    environ: Mapping[str, str] = field(default_factory=dict, hash=False, repr=False)
    node_id: str = ""  # where the role actually ran, as its actor reported
    ip: str = ""
    hostname: str = ""
    gpu_ids: "tuple[int, ...]" = ()
    cpus: float = 0.0  # the CPUs its actor held while it ran

    @property
    def clean(self) -> bool:
        """Exited by itself with status 0."""
        return self.exit_code == 0 and not self.killed

    def as_dict(self) -> "dict[str, Any]":
        """JSON view; of the environment only what configures the role."""
        return {
            "name": self.name,
            "role": self.role,
            "node": self.node,
            "exit_code": self.exit_code,
            "killed": self.killed,
            "log_path": self.log_path,
            "ran_on": {
                "node_id": self.node_id,
                "ip": self.ip,
                "hostname": self.hostname,
                "gpu_ids": list(self.gpu_ids),
                "cpus": self.cpus,
            },
            "env": reported(self.environ),
        }


@dataclass(frozen=True)
class NodeLoad:
    """The CPU one node spent while a run was timed: in all, on the run's roles, and so on others.

    ``window_s`` is how long the window lasted (from every worker's first step
    to their last), ``busy_s`` the node's non-idle CPU seconds meanwhile,
    ``roles_s`` those of the run's role processes there, ``steal_s`` what the
    hypervisor gave to other machines; ``cpus`` the node's online CPUs.
    """

    node: str
    window_s: float
    busy_s: float
    roles_s: float
    cpus: int
    steal_s: float = 0.0

    @property
    def foreign_s(self) -> float:
        """CPU seconds of processes outside the run's roles (the harness included)."""
        return max(0.0, self.busy_s - self.roles_s)

    @property
    def foreign_cores(self) -> float:
        """Foreign load: how many cores' worth of CPU others used on the node while the run was timed."""
        return self.foreign_s / self.window_s if self.window_s > 0 else 0.0

    def as_dict(self) -> "dict[str, Any]":
        """JSON view (seconds rounded to milliseconds)."""
        return {
            "node": self.node,
            "window_s": round(self.window_s, 3),
            "busy_s": round(self.busy_s, 3),
            "roles_s": round(self.roles_s, 3),
            "foreign_s": round(self.foreign_s, 3),
            "foreign_cores": round(self.foreign_cores, 3),
            "steal_s": round(self.steal_s, 3),
            "cpus": self.cpus,
        }


@dataclass(frozen=True)
class WorkerRecords:
    """The JSON-lines records one worker process wrote."""

    name: str
    node: str
    records: "tuple[dict[str, Any], ...]" = ()

    @property
    def start(self) -> Mapping[str, Any]:
        """The ``start`` record (empty if the worker died before it)."""
        return next((r for r in self.records if r.get("event") == "start"), {})

    @property
    def steps(self) -> "list[dict[str, Any]]":
        """The ``step`` records in step order."""
        return sorted((r for r in self.records if r.get("event") == "step"), key=lambda r: r["step"])

    @property
    def finished(self) -> bool:
        """Whether the worker wrote its ``end`` record."""
        return any(r.get("event") == "end" for r in self.records)


@dataclass(frozen=True)
class RunOutput:
    """Everything one run of the roles produced.

    ``backend`` is the backend that ran (never ``auto``); ``topology`` the counts
    after the trick; ``comm`` what the backend measured itself;
    ``single_img_per_sec`` the same workload's img/s in one process without a
    parameter server (on GPUs: one process on one GPU), ``node_img_per_sec``
    that of one worker node alone (the scaling reference), when measured.
    """

    workers: "tuple[WorkerRecords, ...]"
    roles: "tuple[RoleOutcome, ...]"
    bringup_s: float
    teardown_s: float
    wall_s: float
    log_dir: str
    backend: str
    topology: Mapping[str, int] = field(default_factory=dict, hash=False)
    comm: "tuple[CommWindow, ...]" = ()
    single_img_per_sec: "float | None" = None
    #: img/s of the run's first worker node alone (same trick, no parameter server): the headline
    #: scaling reference, as the BytePS report computed it (on CPUs the same as ``single_img_per_sec``)
    node_img_per_sec: "float | None" = None
    #: what is said of the run, not a failure: what went wrong after training had finished (a
    #: shutdown's exit error), roles that would not die with their actor (no setpriv on their node)
    notes: "tuple[str, ...]" = ()
    #: per node that hosted roles, the CPU spent while the run was timed (empty where not measured)
    load: "tuple[NodeLoad, ...]" = ()

    @property
    def foreign_cores(self) -> "float | None":
        """The largest foreign load of the run's nodes (cores), None where it was not measured."""
        return max((n.foreign_cores for n in self.load), default=None)

    @property
    def simulation(self) -> "str | None":
        """What ran instead of the real thing, when a stand-in did (the workers' start records say so)."""
        return next((str(w.start["simulation"]) for w in self.workers if w.start.get("simulation")), None)

    def __post_init__(self) -> None:
        if self.backend == "auto" or not self.backend:
            raise ValueError(f"RunOutput.backend must name the backend that ran, not {self.backend!r}")


def worker_records_from(
    name: str, steps: "Sequence[Mapping[str, float]]", batch_size: int, node: str = "node-0"
) -> WorkerRecords:
    """Build a worker's records from plain step times (for feeding measurements through the hook)."""
    recs: "list[dict[str, Any]]" = [{"event": "start", "batch_size": batch_size}]
    for i, s in enumerate(steps):
        recs.append({"event": "step", "step": i, "images": batch_size, **s})
    recs.append({"event": "end"})
    return WorkerRecords(name=name, node=node, records=tuple(recs))
