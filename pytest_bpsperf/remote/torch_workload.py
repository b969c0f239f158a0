"""The torch side of the workload: a DDP rank (or one process alone) training a torchvision model.

Runs in the worker (``python -m pytest_bpsperf.remote.workload --framework torch``,
see :mod:`.workload` for the command line, the records and the timing). What
differs from MXNet is here: the process group, the model, the precision, the
device sync, and :class:`TorchContext`, what a team's own torch code gets.

The process group (backend ``torch``): the first rank listens for the others on
``MASTER_ADDR:MASTER_PORT``, the address Ray knows its node by and a port its
role actor chose and held until this process took it (so no other process can
take it in between: the store listens on a socket bound here with
``SO_REUSEADDR``, as the held one is, and handed to ``TCPStore`` by
``master_listen_fd``). gloo on CPUs, NCCL on GPUs (one rank per GPU, the GPU
Ray reserved, visible alone as ``cuda:0``); both open their own connections on
the network interface that holds the node's address, never on every interface.

Precision: ``float32``; ``float16`` (GPU only: autocast and a gradient scaler);
``bfloat16`` (autocast, CPU and GPU). Parameters stay ``float32``.

Where the time goes (``timing=breakdown`` and the diagnostic steps): DDP
allreduces gradient buckets while backward still runs, so in the timed steps
compute and allreduce overlap and cannot be told apart. A split step runs
backward without DDP's allreduce (``no_sync``), waits for it (compute), then
allreduces all gradients in one flat buffer and runs the optimizer (the
allreduce part): it says how long each takes alone, not how much of the
allreduce DDP hides behind backward.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import socket
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager

from .data import Batches
from .entry import StepContext, context_fields

#: every rank starts from the same weights (DDP broadcasts rank 0's anyway; the reference must match)
MODEL_SEED = 1234
#: how long a rank waits for the others to join the process group
JOIN_TIMEOUT_S = 300


class TorchWorkloadError(RuntimeError):
    """The torch workload cannot run as asked; the message says why."""


@dataclass(frozen=True)
class TorchContext(StepContext):
    """What a torch entry point (``build(ctx) -> step``) gets from the harness.

    - ``backend`` (``torch``, or ``local`` for the one-process scaling reference),
      ``device`` (``torch.device``: ``cuda:0``, the rank's own GPU, or ``cpu``),
      ``rank`` and ``num_workers`` (the world size);
    - ``batch_size``, ``image_size``, ``data_shape``, ``dtype`` (the precision
      setting), ``classes``, ``model`` (the model setting), ``lr``;
    - ``next_batch()`` -> ``(data, label)`` on ``device`` (synthetic: one random
      batch per rank, made once; data ``float32``, autocast casts it);
    - ``distribute(model)``: the model on ``device`` (channels-last on GPUs)
      wrapped in ``DistributedDataParallel`` (not wrapped in the reference);
    - ``autocast()``: the precision's autocast context (a null context for ``float32``);
    - ``backward(loss)``: the backward pass (scaled for ``float16``); in a split
      step also the allreduce, after compute is marked;
    - ``step(optimizer)``: the optimizer step (through the gradient scaler for ``float16``);
    - ``split()``: marks the end of compute (forward and backward) in a split
      step; ``backward`` calls it itself.

    The harness times ``step()`` calls and waits for the device after each
    window of steps; a step should not wait itself.
    """

    _breakdown: Callable[[], bool] = field(default=lambda: False, repr=False)
    _scaler: Any = field(default=None, repr=False)
    #: what ``distribute`` made: ``ddp`` (the DDP wrapper, None in the reference) and ``model``
    _made: "dict[str, Any]" = field(default_factory=dict, repr=False)

    @property
    def _ddp(self) -> Any:
        return self._made.get("ddp")

    @property
    def _model(self) -> Any:
        return self._made.get("model")

    def distribute(self, model: Any) -> Any:
        """``model`` on ``device``, wrapped in DDP where there is a process group."""
        import torch

        model = model.to(self.device)
        if self.device.type == "cuda":
            model = model.to(memory_format=torch.channels_last)
        if self.backend != "local":
            from torch.nn.parallel import DistributedDataParallel

            ids = [self.device.index or 0] if self.device.type == "cuda" else None
            model = self._made["ddp"] = DistributedDataParallel(model, device_ids=ids)
        self._made["model"] = model
        return model

    def autocast(self) -> ContextManager[Any]:
        """The autocast context of the precision (``float16``, ``bfloat16``), else a null context."""
        import torch

        if self.dtype == "float32":
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=getattr(torch, self.dtype))

    def backward(self, loss: Any) -> None:
        """Backward (DDP overlaps its allreduce); in a split step: backward alone, :meth:`split`, allreduce."""
        if self._scaler is not None:
            loss = self._scaler.scale(loss)
        if not self._breakdown():
            loss.backward()
            return
        with self._ddp.no_sync() if self._ddp is not None else contextlib.nullcontext():
            loss.backward()
        self.split()
        if self._ddp is not None:
            _allreduce_gradients(self._ddp)

    def step(self, optimizer: Any) -> None:
        """The optimizer step; through the gradient scaler with ``float16``."""
        if self._scaler is not None:
            self._scaler.step(optimizer)
            self._scaler.update()
        else:
            optimizer.step()


def _allreduce_gradients(model: Any) -> None:
    """Average the gradients of ``model`` over the process group in one flat buffer (a split step's allreduce)."""
    import torch
    import torch.distributed as dist

    grads = [p.grad for p in model.parameters() if p.grad is not None]
    if not grads:
        return
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    flat /= dist.get_world_size()
    offset = 0
    for g in grads:
        g.copy_(flat[offset : offset + g.numel()].view_as(g))
        offset += g.numel()


def _interface_of(address: str) -> "str | None":
    """The network interface of this node that holds IPv4 ``address`` (``lo`` for 127.0.0.1), or None."""
    from .roles import interface_address

    for _index, name in socket.if_nameindex():
        try:
            if interface_address(name) == address:
                return name
        except ValueError:
            continue
    return None


def _join_group(on_gpu: bool) -> "tuple[int, int, str]":
    """Join the process group from ``RANK``/``WORLD_SIZE``/``MASTER_ADDR``/``MASTER_PORT``; (rank, world, backend)."""
    import torch.distributed as dist

    try:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        host, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    except (KeyError, ValueError) as exc:
        raise TorchWorkloadError(
            f"backend torch needs RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (the plan sets them): {exc}"
        ) from None
    timeout = datetime.timedelta(seconds=JOIN_TIMEOUT_S)
    backend = "nccl" if on_gpu else "gloo"
    if os.environ.get("TORCHELASTIC_RUN_ID"):  # started by torchrun (a hand launch): its agent's store
        dist.init_process_group(backend, init_method="env://", timeout=timeout)
        return rank, world, backend
    node = os.environ.get("DMLC_NODE_HOST", host)
    interface = _interface_of(node)
    for var in ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"):
        if interface and not os.environ.get(var):  # the user's own choice (role_env, a trick) stands
            os.environ[var] = interface
    listen_fd = None
    if rank == 0:
        # bind the port the role actor holds (both with SO_REUSEADDR: Linux lets them share it until
        # one listens) on the node's address alone, and hand the listening socket to the store
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
        listen_fd = sock.fileno()
        _KEEP.append(sock)
    store = dist.TCPStore(host, port, world, rank == 0, timeout=timeout, master_listen_fd=listen_fd)
    dist.init_process_group(backend, store=store, rank=rank, world_size=world, timeout=timeout)
    return rank, world, backend


#: the rendezvous socket lives as long as the process group
_KEEP: "list[socket.socket]" = []


def _synthetic(ctx_device: Any, batch: int, size: int, classes: int, rank: int) -> Batches:
    """One random batch per rank (seeded by the rank: every rank trains on its own data), made once."""
    import torch

    gen = torch.Generator().manual_seed(MODEL_SEED + 1 + rank)
    data = torch.rand((batch, 3, size, size), generator=gen)
    label = torch.randint(0, classes, (batch,), generator=gen)
    data, label = data.to(ctx_device), label.to(ctx_device)
    if ctx_device.type == "cuda":
        data = data.contiguous(memory_format=torch.channels_last)
    return Batches(lambda: (data, label))


def _synthetic_of(args: argparse.Namespace, device: Any, rank: int) -> Batches:
    return _synthetic(device, args.batch_size, args.image_size, args.classes, rank)


def build_model(ctx: TorchContext) -> Callable[[], Any]:
    """The shipped workload as an entry point: torchvision ``ctx.model``, SGD with momentum 0.9."""
    import torch
    import torchvision

    names = torchvision.models.list_models(module=torchvision.models)
    if ctx.model not in names:
        close = sorted(n for n in names if n.startswith(ctx.model[:6]))[:8]
        raise TorchWorkloadError(
            f"model {ctx.model!r} is not one of torchvision's classification models ({len(names)} names, "
            f"e.g. resnet50)" + (f"; similar: {', '.join(close)}" if close else "")
        )
    torch.manual_seed(MODEL_SEED)
    model = ctx.distribute(torchvision.models.get_model(ctx.model, weights=None, num_classes=ctx.classes))
    optimizer = torch.optim.SGD(model.parameters(), lr=ctx.lr, momentum=0.9, weight_decay=1e-4)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step() -> None:
        data, label = ctx.next_batch()
        optimizer.zero_grad(set_to_none=True)
        with ctx.autocast():
            loss = loss_fn(model(data), label)
        ctx.backward(loss)
        ctx.step(optimizer)

    return step


def setup(
    args: argparse.Namespace,
    split: Callable[[], None],
    breakdown: Callable[[], bool],
    batches: "Callable[[Batches, Callable[[], None]], Batches]" = lambda data, _wait: data,
) -> "tuple[TorchContext, Callable[[], None], dict[str, Any]]":
    """(context, device wait, facts for the start record) of this rank, the process group joined.

    ``batches(data, wait)``: the batches the context hands out, made of this rank's own (the harness
    times their input wait in the diagnostic steps)."""
    import torch

    distributed = args.backend == "torch"
    on_gpu = bool(os.environ.get("CUDA_VISIBLE_DEVICES")) if distributed else args.device == "gpu"
    if on_gpu and not torch.cuda.is_available():
        raise TorchWorkloadError(
            f"this rank was given GPU {os.environ.get('CUDA_VISIBLE_DEVICES')}, but torch {torch.__version__} "
            "sees no CUDA device (torch.cuda.is_available() is False)"
        )
    if args.dtype == "float16" and not on_gpu:
        raise TorchWorkloadError("dtype float16 needs a GPU (autocast float16 on CPU is not trained); use bfloat16")
    device = torch.device("cuda", 0) if on_gpu else torch.device("cpu")
    if on_gpu:
        torch.cuda.set_device(device)
        torch.backends.cudnn.benchmark = True
    rank, world, dist_backend = _join_group(on_gpu) if distributed else (0, 1, None)

    def wait() -> None:
        if on_gpu:
            torch.cuda.synchronize(device)

    scaler = torch.amp.GradScaler("cuda") if args.dtype == "float16" else None
    ctx = TorchContext(
        **context_fields(args, device, rank, world, batches(_synthetic_of(args, device, rank), wait), split),
        _breakdown=breakdown,
        _scaler=scaler,
    )
    return ctx, wait, _facts(torch, device, dist_backend, world, args.dtype)


def _facts(torch: Any, device: Any, dist_backend: "str | None", world: int, dtype: str) -> "dict[str, Any]":
    """What the start record says of the stack: dist backend, world size, torch, NCCL, CUDA, the GPU."""
    facts: "dict[str, Any]" = {
        "framework": "torch",
        "dist_backend": dist_backend,
        "world_size": world,
        "torch": torch.__version__,
        "precision": dtype,
        "cuda": torch.version.cuda,
        "nccl": None,
        "gpu": None,
        "compute_capability": None,
        "torch_threads": torch.get_num_threads(),
    }
    if device.type == "cuda":
        major, minor = torch.cuda.get_device_capability(device)
        facts.update(
            gpu=torch.cuda.get_device_name(device),
            compute_capability=f"{major}.{minor}",
            nccl=".".join(str(v) for v in torch.cuda.nccl.version()),
        )
    return facts


def param_checksum(ctx: TorchContext) -> "float | None":
    """The sum of every parameter of the distributed model (float64): equal on every rank after DDP's
    averaged steps, and another value for one process on one rank's data. None before ``distribute``."""
    if ctx._model is None:
        return None
    return float(sum(p.detach().double().sum() for p in ctx._model.parameters()))


def finish() -> None:
    """Leave the process group (after the end record)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
    for sock in _KEEP:
        sock.close()
    _KEEP.clear()


if __name__ == "__main__":  # pragma: no cover - the workload module is the entry point
    sys.exit("run python -m pytest_bpsperf.remote.workload --framework torch")
