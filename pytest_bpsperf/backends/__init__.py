"""Backends: one object per parameter-server implementation, behind :class:`Backend`.

``mxnet``, ``byteps`` and ``torch`` ship; another plugin adds one with :func:`register`
(for example from its ``pytest_configure``). ``auto`` is resolved once per
session by :func:`resolve`, before anything is planned.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from ..config.settings import Settings
from ..runs.plan import Node, PlanError
from .base import (
    PS_RENDEZVOUS,
    Backend,
    BackendBase,
    WorkerProcess,
    gpu_when_present,
    has_servers,
    workload_command,
)
from .byteps import BytePSBackend
from .mxnet import MXNetBackend
from .torch import TorchBackend

_REGISTRY: "dict[str, Backend]" = {}

#: What ``backend=auto`` picks on each device kind: BytePS where the workers have GPUs (when it
#: imports there: :func:`resolve` falls back to :data:`AUTO_GPU_FALLBACK`, then to the CPU pick),
#: MXNet's own parameter server on CPUs.
AUTO: "dict[str, str]" = {"gpu": "byteps", "cpu": "mxnet"}
#: ``auto`` on GPUs that the BytePS stack cannot run (any GPU made since 2022): PyTorch DDP, where it imports.
AUTO_GPU_FALLBACK = "torch"


def register(backend: Backend) -> None:
    """Make ``backend`` available under ``backend.name`` (settings ``backend=NAME``)."""
    if not isinstance(backend, Backend):
        raise TypeError(f"{backend!r} does not implement pytest_bpsperf.backends.Backend")
    if not backend.name or backend.name == "auto" or backend.name in _REGISTRY:
        raise ValueError(f"backend name {backend.name!r} is empty, 'auto' or already registered")
    _REGISTRY[backend.name] = backend


def unregister(name: str) -> None:
    """Remove a registered backend (a test plugin's, at its unconfigure)."""
    _REGISTRY.pop(name, None)


def names() -> "list[str]":
    """Registered backend names, in registration order."""
    return list(_REGISTRY)


def get(name: str) -> Backend:
    """The backend called ``name`` (never ``auto``: resolve it first)."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise PlanError(f"unknown backend {name!r}; registered: {', '.join(_REGISTRY)}") from None


def workload_defaults(name: str, device: str) -> Mapping[str, int]:
    """Default workload sizes of backend ``name`` (``auto``: of the backend auto picks there) on ``device``."""
    if name == "auto":
        name = AUTO[device]
    return _REGISTRY[name].workload_defaults(device) if name in _REGISTRY else BackendBase().workload_defaults(device)


def check_settings(settings: Settings, *, gpus: int) -> None:
    """Check ``settings`` before Ray against the backend that will run them, as far as it is known:
    the one set, or with ``auto`` on the embedded Ray the one :data:`AUTO` picks for this machine's
    ``gpus`` (on an existing cluster, ``auto`` is known once resolved and planning checks it then).

    The checks are the backend's own (:meth:`Backend.check`, e.g. float16 needs GPU workers), the
    same that planning makes. Raises :class:`PlanError`.
    """
    if settings.backend != "auto":
        impl = get(settings.backend)
        impl.check(settings)
        if settings.dtype == "float16" and gpu_when_present(impl) and not gpus and not settings.ray_address:
            raise PlanError(
                f"setting 'dtype' (float16, from {settings.origins.get('dtype')}) needs GPU workers and this "
                f"machine has no GPU: backend {impl.name} trains on its CPUs here; use float32 or bfloat16"
            )
        return
    if settings.ray_address:
        return
    name = AUTO["gpu" if gpus else "cpu"]
    try:
        get(name).check(settings)
    except PlanError as exc:
        raise PlanError(
            f"{exc} (backend auto is {name} on this machine: {f'{gpus} GPU(s)' if gpus else 'no GPU'})"
        ) from None


#: ``probe(backend, node)``: run ``backend.probe`` on ``node``; why it cannot run there, or None.
Prober = Callable[[Backend, Node], "str | None"]


def resolve(setting: str, nodes: "Sequence[Node]", probe: Prober) -> "tuple[str, str]":
    """(backend name, reason). ``auto``: :data:`AUTO`'s GPU pick where GPUs exist and its probe passes
    there, else its CPU pick.

    A backend that was set and trains on GPUs is probed too: where it cannot run
    on the cluster's GPU nodes that is a :class:`PlanError` naming the node and why.
    """
    if setting != "auto":
        impl = get(setting)
        gpu_nodes = [n for n in nodes if n.gpus > 0]
        if impl.needs_gpu_workers and gpu_nodes:
            problem = probe(impl, gpu_nodes[0])
            if problem:
                raise PlanError(f"backend {setting} cannot run on the GPU node {gpu_nodes[0].name}: {problem}")
        return setting, f"backend {setting} (as set)"
    gpu_nodes = [n for n in nodes if n.gpus > 0]
    cpu, gpu = AUTO["cpu"], AUTO["gpu"]
    if not gpu_nodes:
        return cpu, f"auto -> {cpu}: the cluster has no GPU"
    problem = probe(get(gpu), gpu_nodes[0])
    if not problem:
        return gpu, f"auto -> {gpu}: {sum(n.gpus for n in gpu_nodes)} GPU(s) and its probe passes there"
    fallback = AUTO_GPU_FALLBACK
    if fallback in _REGISTRY:
        other = probe(get(fallback), gpu_nodes[0])
        if not other:
            return fallback, f"auto -> {fallback}: on {gpu_nodes[0].name}, {problem}; {fallback} trains on its GPUs"
        problem = f"{problem}; and {fallback}: {other}"
    return cpu, f"auto -> {cpu}: on {gpu_nodes[0].name}, {problem}"


register(MXNetBackend())
register(BytePSBackend())
register(TorchBackend())

__all__ = [
    "AUTO",
    "AUTO_GPU_FALLBACK",
    "PS_RENDEZVOUS",
    "Backend",
    "BackendBase",
    "BytePSBackend",
    "MXNetBackend",
    "PlanError",
    "TorchBackend",
    "WorkerProcess",
    "check_settings",
    "get",
    "gpu_when_present",
    "has_servers",
    "names",
    "register",
    "resolve",
    "unregister",
    "workload_command",
    "workload_defaults",
]
