"""The backend interface: what differs between training stacks.

A backend says how its scheduler and servers start, what each worker process
of a worker node gets, which module the workers run, whether it can run on a
node (a probe that runs there), what it collects from the nodes after a run,
and its default workload sizes for a device kind. Everything else (placement,
tricks, Ray, measurement, verdicts) is the same for every backend.

Optional attributes (read with their defaults, so a backend written before
them still works): ``has_servers`` (False: no scheduler and no servers, as
PyTorch DDP; a trick that adds servers is refused), ``gpu_when_present``
(a CPU-capable backend whose workers take the GPUs of the nodes that have
them, one process per GPU) and ``rendezvous`` (the variables of the address
and port that the first worker, where there is no scheduler, listens on).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Protocol, Sequence, runtime_checkable

from ..config.settings import DEVICE_DEFAULTS, Settings
from ..remote.environ import PYTHON, RECORDS
from ..runs.output import CommWindow
from ..runs.plan import Node, Plan, PlanError, RolePlan

__all__ = [
    "PS_RENDEZVOUS",
    "Backend",
    "BackendBase",
    "PlanError",
    "WorkerProcess",
    "gpu_when_present",
    "has_servers",
    "workload_command",
]


@dataclass(frozen=True)
class WorkerProcess:
    """One process of a worker node: its name suffix, the backend's variables, the GPUs its actor holds."""

    suffix: str  # "" for one process per node, ".0", ".1", ... for one per GPU
    env: Mapping[str, str] = field(default_factory=dict, hash=False)
    gpus: int = 0
    #: training processes this role runs (more than 1 when a launcher on the node spawns them: bpslaunch)
    processes: int = 1


@runtime_checkable
class Backend(Protocol):
    """What a parameter-server backend implements (see :mod:`pytest_bpsperf.backends`)."""

    #: the name settings, keys and reports use
    name: str
    #: whether workers must run on GPU nodes
    needs_gpu_workers: bool

    def check(self, settings: Settings) -> None:
        """Raise :class:`PlanError` for settings this backend cannot run."""

    def server_command(self) -> Sequence[str]:
        """Command of the scheduler and of every server (``DMLC_ROLE`` tells them apart)."""

    def server_env(self, settings: Settings) -> Mapping[str, str]:
        """The backend's variables for every server process."""

    def worker_command(self, settings: Settings) -> Sequence[str]:
        """Command of every worker process (may use the ``PYTHON`` and ``RECORDS`` placeholders)."""

    def worker_processes(
        self, settings: Settings, worker_id: int, node: "Node", gpus: Sequence[int]
    ) -> Sequence[WorkerProcess]:
        """The processes of worker node ``worker_id`` on ``node``, with their variables.

        ``gpus`` are the GPU ids Ray assigned to this run on that node (empty on CPU).
        A backend that trains on GPUs runs one process per id; its process
        ``k`` gets GPU ``gpus[k]`` (its actor asks Ray for one GPU).
        """

    def probe(self) -> "str | None":
        """Runs on a node (in a Ray task): why the backend cannot run there, None when it can."""

    def artifact_dirs(self, role: "RolePlan") -> Sequence[str]:
        """Directories (relative to the role's log dir) to fetch from its node after the run."""

    def collect(self, plan: "Plan", files: Mapping[str, Mapping[str, str]]) -> "tuple[CommWindow, ...]":
        """What the backend measured itself, from ``{role name: {path: text}}`` of :meth:`artifact_dirs`."""

    def workload_defaults(self, device: str) -> Mapping[str, int]:
        """Default steps, batch size and image size on a device kind (``cpu`` or ``gpu``)."""


#: ps-lite's rendezvous: the scheduler's address and port, which every role of a parameter-server run gets.
PS_RENDEZVOUS = ("DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT")


def has_servers(backend: object) -> bool:
    """Whether ``backend`` runs a scheduler and servers (every parameter-server backend does)."""
    return bool(getattr(backend, "has_servers", True))


def gpu_when_present(backend: object) -> bool:
    """Whether ``backend`` trains on CPUs but takes the GPUs of worker nodes that have them."""
    return bool(getattr(backend, "gpu_when_present", False))


def workload_command(
    settings: Settings, backend: str, *, per_rank_records: bool = False, framework: str = "mxnet"
) -> "tuple[str, ...]":
    """The command of a process running the shipped workload with this run's parameters.

    ``per_rank_records``: the process is one of several that a launcher on the
    node spawns (bpslaunch), each writing the records file of its local rank.
    ``framework``: ``mxnet`` or ``torch``, what the workload trains with.
    """
    command: "tuple[str, ...]" = (
        PYTHON,
        "-m",
        "pytest_bpsperf.remote.workload",
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
        "--timing",
        settings.timing,
        "--dtype",
        settings.dtype,
        "--data",
        settings.data,
        "--data-threads",
        str(settings.data_threads),
        "--records",
        RECORDS,
    )
    if framework != "mxnet":
        command += ("--framework", framework)
    if settings.sync_every != 1:
        command += ("--sync-every", str(settings.sync_every))
    if settings.breakdown_steps and backend != "local":  # the single-process reference is not broken down
        command += ("--diagnostic-steps", str(settings.breakdown_steps))
    if settings.entry is not None:
        command += ("--entry", settings.entry.spec)
        if settings.entry.path:
            command += ("--entry-path", settings.entry.path)
    if per_rank_records:
        command += ("--records-per-rank",)
    return command


class BackendBase:
    """Defaults shared by the shipped backends: the shipped workload, nothing to collect."""

    name = ""
    needs_gpu_workers = False
    has_servers = True
    gpu_when_present = False
    rendezvous = PS_RENDEZVOUS
    #: what the shipped workload trains with (``--framework``)
    framework = "mxnet"

    def check(self, settings: Settings) -> None:
        if settings.trace is not None:
            raise PlanError(
                f"setting 'trace' ({settings.trace[0]}:{settings.trace[1]}, from {settings.origins.get('trace')}) "
                f"traces BytePS's push/pull and needs backend byteps, not {self.name}"
            )
        if settings.launch != "direct":
            raise PlanError(
                f"setting 'launch' ({settings.launch}, from {settings.origins.get('launch')}) starts BytePS "
                f"workers through bpslaunch and needs backend byteps, not {self.name}"
            )
        self.check_dtype(settings)
        if settings.dtype == "float16" and not self.needs_gpu_workers and self.framework == "mxnet":
            raise PlanError(
                f"setting 'dtype' (float16, from {settings.origins.get('dtype')}) needs GPU workers: backend "
                f"{self.name} trains on CPU, where MXNet has no FP16 gemm; use float32 or backend byteps"
            )

    def check_dtype(self, settings: Settings) -> None:
        """Raise :class:`PlanError` for a precision the backend's framework does not train (bfloat16 on MXNet)."""
        if settings.dtype == "bfloat16" and self.framework == "mxnet":
            raise PlanError(
                f"setting 'dtype' (bfloat16, from {settings.origins.get('dtype')}) is not trained by backend "
                f"{self.name}: MXNet 1.9 has no bfloat16 training; use float32 or float16, or backend torch"
            )

    def server_env(self, settings: Settings) -> Mapping[str, str]:
        return {}

    def worker_command(self, settings: Settings) -> Sequence[str]:
        return workload_command(settings, self.name, framework=self.framework)

    def reference_command(self, settings: Settings, device: str) -> Sequence[str]:
        """One process training alone on ``device`` (``cpu`` or ``gpu``), no parameter server and no
        process group: the reference for scaling efficiency."""
        return workload_command(settings, "local", framework=self.framework) + ("--device", device)

    def probe(self) -> "str | None":
        return None

    def artifact_dirs(self, role: "RolePlan") -> Sequence[str]:
        return ()

    def collect(self, plan: "Plan", files: Mapping[str, Mapping[str, str]]) -> "tuple[CommWindow, ...]":
        return ()

    def workload_defaults(self, device: str) -> Mapping[str, int]:
        return DEVICE_DEFAULTS[device]
