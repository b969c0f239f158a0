"""The entry-point protocol: how training code (the shipped model or yours) plugs into the harness.

An entry point is a function ``build(ctx) -> step`` (setting ``entry``,
``module:function``). The harness calls it once per worker process with a
:class:`TrainContext` and times the returned ``step()`` callable: each call
trains one step (forward, backward, ``trainer.step``) and returns without
waiting; the harness then waits for all pending work (``mx.nd.waitall()``),
which is the one sync of a step. The plugin keeps everything else: roles,
kvstore or BytePS, data, timing, records, tricks, verdicts.

``ctx`` gives:

- ``backend`` (``mxnet``, ``byteps`` or ``local``), ``device`` (the MXNet
  context to train on), ``rank`` and ``num_workers`` (worker processes);
- ``batch_size``, ``image_size``, ``data_shape`` (N, 3, H, W), ``dtype``,
  ``classes``, ``model`` (the model setting), ``lr``;
- ``next_batch()`` -> ``(data, label)`` on ``device`` in ``dtype`` (synthetic,
  or decoded from the ``.rec``), and ``data_iter`` (the ``ImageRecordIter``, or
  None for synthetic data);
- ``make_trainer(params, optimizer="sgd", optimizer_params=None)``: the trainer
  of the backend: ``gluon.Trainer`` on the ``dist_sync`` kvstore (mxnet),
  ``byteps.mxnet.DistributedTrainer`` (byteps; run one forward pass first, so
  that deferred-init parameters exist), a local ``gluon.Trainer`` (local).
  With ``dtype=float16`` it turns on ``multi_precision``;
- ``step_scale``: what to pass to ``trainer.step`` (the batch over which
  gradients are summed: ``batch_size x num_workers`` with mxnet's kvstore);
- ``split()``: call it between ``backward()`` and ``trainer.step``. With
  ``timing=breakdown`` it waits for the forward and backward to finish and
  marks the end of compute (the step is then serialized, a diagnostic); with
  ``timing=overlapped`` it does nothing.

An exception in ``build`` or ``step`` fails the run with a message that names
the entry point; the role's log has the traceback.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from typing import Any, Callable

from .data import Batches


class EntryError(RuntimeError):
    """The user's entry point failed; the message names it and what it was doing."""


@dataclass(frozen=True)
class StepContext:
    """What every entry point gets, in either framework: where it trains, the workload, its batches,
    and ``split()`` (the end of compute in a split step)."""

    backend: str
    device: Any
    rank: int
    num_workers: int
    batch_size: int
    image_size: int
    dtype: str
    classes: int
    model: str
    lr: float
    data: Batches
    split: Callable[[], None]

    @property
    def data_shape(self) -> "tuple[int, int, int, int]":
        """(batch, channels, height, width) of a batch."""
        return (self.batch_size, 3, self.image_size, self.image_size)

    def next_batch(self) -> "tuple[Any, Any]":
        """The next ``(data, label)`` on ``device``, in ``dtype``."""
        return self.data.next()


def context_fields(
    args: Any, device: Any, rank: int, num_workers: int, data: Batches, split: Callable[[], None]
) -> "dict[str, Any]":
    """The :class:`StepContext` fields of a worker from the workload's command line (``args``)."""
    return {
        "backend": args.backend,
        "device": device,
        "rank": rank,
        "num_workers": num_workers,
        "batch_size": args.batch_size,
        "image_size": args.image_size,
        "dtype": args.dtype,
        "classes": args.classes,
        "model": args.model,
        "lr": args.lr,
        "data": data,
        "split": split,
    }


@dataclass(frozen=True)
class TrainContext(StepContext):
    """What an MXNet entry point gets from the harness (see the module docstring)."""

    step_scale: int
    make_trainer: Callable[..., Any]

    @property
    def data_iter(self) -> Any:
        """The ``mx.io.ImageRecordIter`` of record data, None for synthetic data."""
        return self.data.iterator


def load(spec: str, path: "str | None" = None) -> Callable[[TrainContext], Callable[[], Any]]:
    """The function ``module:function`` names, importing the module (``path`` first on ``sys.path``)."""
    module_name, _, function = spec.partition(":")
    if path and path not in sys.path:
        sys.path.insert(0, path)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise EntryError(
            f"entry point {spec}: module {module_name!r} does not import: {type(exc).__name__}: {exc}"
        ) from exc
    fn = getattr(module, function, None)
    if not callable(fn):
        raise EntryError(f"entry point {spec}: module {module_name!r} has no function {function!r}")
    return fn  # type: ignore[no-any-return]  # any callable the module names; its signature is the user's


def import_gluoncv() -> Any:
    """``import gluoncv``, also where PyTorch 2 is installed beside it (the ``[mxnet,torch]`` extras).

    gluoncv 0.10.5 refuses torch >= 2.0 at import (``gluoncv/check.py``,
    ``_require_pytorch_version('1.4.0', '2.0.0')`` raises RuntimeError, where a missing torch
    is an ImportError it ignores), although its MXNet model zoo never uses torch. So torch is
    hidden while gluoncv imports (and put back if this process had imported it): gluoncv then
    takes itself for MXNet-only, as it is here.
    """
    if "gluoncv" in sys.modules:
        return sys.modules["gluoncv"]
    torch = sys.modules.get("torch")  # imported already (a torch step in this process): put back after
    sys.modules["torch"] = None  # type: ignore[assignment]  # an import of it raises ImportError
    try:
        import gluoncv
    finally:
        if torch is not None:
            sys.modules["torch"] = torch
        else:
            del sys.modules["torch"]
    return gluoncv


def build_zoo_model(ctx: TrainContext) -> Callable[[], Any]:
    """The shipped workload as an entry point: gluoncv ``ctx.model``, hybridized, SGD with momentum 0.9."""
    import mxnet as mx

    import_gluoncv()
    from gluoncv.model_zoo import get_model
    from mxnet import autograd, gluon

    net = get_model(ctx.model, classes=ctx.classes, pretrained=False)
    if ctx.dtype != "float32":
        net.cast(ctx.dtype)
    net.initialize(mx.init.Xavier(), ctx=ctx.device)
    net.hybridize(static_alloc=True, static_shape=True)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    data, _label = ctx.next_batch()
    net(data)  # deferred init: parameters exist before a DistributedTrainer is made
    mx.nd.waitall()
    trainer = ctx.make_trainer(net.collect_params(), "sgd", {"learning_rate": ctx.lr, "momentum": 0.9, "wd": 1e-4})

    def step() -> None:
        data, label = ctx.next_batch()
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        ctx.split()
        trainer.step(ctx.step_scale)

    return step
