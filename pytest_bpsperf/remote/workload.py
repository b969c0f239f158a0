"""The training workload that each worker process runs.

``python -m pytest_bpsperf.remote.workload --backend mxnet --records FILE ...``

Fixed-step training of a gluoncv model on synthetic data (one random batch,
reused, as BytePS's own benchmarks do), hybridized, SGD with momentum 0.9.
Every step blocks until its results are ready so that the clock measures work,
not queueing. Each step appends one JSON line to ``--records``::

    {"event": "step", "step": 3, "total_s": 0.41, "compute_s": 0.30, "sync_s": 0.11, "images": 8}

``compute_s`` is forward + backward; ``sync_s`` is the optimizer step, where the
kvstore pushes gradients and pulls weights (the push/pull of a parameter server).
The first line (``"event": "start"``) says what ran and which environment the
process really got; the last (``"event": "end"``) marks a clean finish. Any
error prints a one-line reason to stderr and exits non-zero.

Backends: ``mxnet`` (``dist_sync`` kvstore, needs the ps-lite ``DMLC_*``
environment), ``byteps`` (BytePS ``DistributedTrainer`` on a GPU) and ``local``
(one process, no parameter server: the reference for scaling efficiency).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import IO, Any, Sequence

from .environ import reported

#: Fault injection, for testing the harness itself: ``crash-at-step:N`` makes the
#: worker die abruptly (os._exit) at step N, as a segfaulting worker would;
#: ``slowdown:P`` adds P percent of each step's time as extra CPU work, a
#: regression of the size a bad change brings.
FAULT_ENV = "BPSPERF_FAULT"


class WorkloadError(RuntimeError):
    """The workload cannot run as asked; the message says why."""


def parse_args(argv: "Sequence[str] | None" = None) -> argparse.Namespace:
    """Command line of the workload (what the role plan puts after ``-m``)."""
    p = argparse.ArgumentParser(prog="python -m pytest_bpsperf.remote.workload", description=__doc__.split("\n")[0])
    p.add_argument("--backend", choices=("mxnet", "byteps", "local"), required=True)
    p.add_argument("--model", default="resnet50_v2")
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--batch-size", type=int, required=True)
    p.add_argument("--image-size", type=int, required=True)
    p.add_argument("--classes", type=int, default=1000)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--records", required=True, help="JSON-lines file for per-step records")
    args = p.parse_args(argv)
    if args.steps < 1 or args.batch_size < 1 or args.image_size < 8:
        p.error("--steps and --batch-size must be >= 1 and --image-size >= 8")
    return args


def _fault() -> tuple:
    """(crash step or None, slowdown fraction) from ``BPSPERF_FAULT``."""
    spec = os.environ.get(FAULT_ENV, "")
    if not spec:
        return None, 0.0
    kind, _, value = spec.partition(":")
    if kind == "crash-at-step" and value.isdigit():
        return int(value), 0.0
    if kind == "slowdown" and value.replace(".", "", 1).isdigit():
        return None, float(value) / 100.0
    raise WorkloadError(f"{FAULT_ENV}={spec!r} is not understood; accepted: crash-at-step:N, slowdown:PERCENT")


class Recorder:
    """Appends JSON lines, flushed per line so a crash keeps every finished step."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, event: str, **fields: Any) -> None:
        fields["event"] = event
        fields["time"] = time.time()
        self._stream.write(json.dumps(fields, sort_keys=True) + "\n")
        self._stream.flush()


def _build(args: argparse.Namespace):
    """Model, loss, trainer, data and context for the backend; returns a step function."""
    import mxnet as mx
    from mxnet import autograd, gluon

    try:
        from gluoncv.model_zoo import get_model
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise WorkloadError(f"gluoncv is not importable: {exc}") from exc

    info: dict = {"backend": args.backend}
    if args.backend == "byteps":
        try:
            import byteps.mxnet as bps
        except ImportError as exc:
            raise WorkloadError(
                f"backend byteps needs BytePS's MXNet plugin (byteps.mxnet), which does not import: {exc}"
            ) from exc
        # bpslaunch creates <BYTEPS_TRACE_DIR>/<local rank> for a traced worker;
        # BytePS itself does not, and its trace write fails silently without it.
        # ("trace" is the C++ default of BYTEPS_TRACE_DIR.)
        if os.environ.get("BYTEPS_TRACE_ON") == "1":
            os.makedirs(
                os.path.join(os.environ.get("BYTEPS_TRACE_DIR", "trace"), os.environ.get("BYTEPS_LOCAL_RANK", "0")),
                exist_ok=True,
            )
        bps.init()
        ctx = mx.gpu(bps.local_rank())
        info.update(rank=bps.rank(), num_workers=bps.size(), local_rank=bps.local_rank())
    else:
        ctx = mx.cpu()

    try:
        net = get_model(args.model, classes=args.classes, pretrained=False)
    except ValueError as exc:
        raise WorkloadError(f"model {args.model!r} is not in gluoncv's model zoo: {exc}") from exc
    net.initialize(mx.init.Xavier(), ctx=ctx)
    net.hybridize(static_alloc=True, static_shape=True)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    optimizer_params = {"learning_rate": args.lr, "momentum": 0.9, "wd": 1e-4}

    shape = (args.batch_size, 3, args.image_size, args.image_size)
    data = mx.nd.random.uniform(shape=shape, ctx=ctx)
    label = mx.nd.array([i % args.classes for i in range(args.batch_size)], ctx=ctx)

    if args.backend == "byteps":
        # Parameters exist only after a forward pass with deferred init.
        net(data)
        mx.nd.waitall()
        # No bps.broadcast_parameters here: it rejects a gluon ParameterDict
        # (TypeError); DistributedTrainer broadcasts rank 0's parameters itself
        # in its first step. It also averages over workers itself (gradients
        # are divided by batch_size * size), so step() takes the per-worker batch.
        trainer = bps.DistributedTrainer(net.collect_params(), "sgd", optimizer_params)
        scale = args.batch_size
    elif args.backend == "mxnet":
        kv = mx.kv.create("dist_sync")
        info.update(rank=kv.rank, num_workers=kv.num_workers)
        trainer = gluon.Trainer(net.collect_params(), "sgd", optimizer_params, kvstore=kv)
        scale = args.batch_size * kv.num_workers
    else:
        info.update(rank=0, num_workers=1)
        trainer = gluon.Trainer(net.collect_params(), "sgd", optimizer_params, kvstore=None)
        scale = args.batch_size

    def step() -> tuple:
        t0 = time.perf_counter()
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        mx.nd.waitall()
        t1 = time.perf_counter()
        trainer.step(scale)
        mx.nd.waitall()
        t2 = time.perf_counter()
        return t2 - t0, t1 - t0, t2 - t1

    info["ctx"] = str(ctx)
    return step, info


def run(args: argparse.Namespace, recorder: Recorder) -> None:
    """Train ``args.steps`` steps, one record per step."""
    fault, slowdown = _fault()
    started = time.perf_counter()
    step, info = _build(args)
    env = reported(os.environ)  # what the role really got, not what the plan meant to give it
    recorder.write(
        "start",
        pid=os.getpid(),
        model=args.model,
        batch_size=args.batch_size,
        image_size=args.image_size,
        steps=args.steps,
        setup_s=time.perf_counter() - started,
        env=env,
        **info,
    )
    for i in range(args.steps):
        if fault is not None and i == fault:
            sys.stderr.write(f"{FAULT_ENV}: crashing at step {i} as asked\n")
            sys.stderr.flush()
            os._exit(86)
        total, compute, sync = step()
        if slowdown:
            # Burn CPU rather than sleep: a bad change costs cycles that the other
            # roles on the node then lack, where a sleep would hand them over.
            extra = total * slowdown
            until = time.perf_counter() + extra
            while time.perf_counter() < until:
                pass
            compute += extra
            total += extra
        recorder.write("step", step=i, total_s=total, compute_s=compute, sync_s=sync, images=args.batch_size)
    recorder.write("end", steps=args.steps)


def main(argv: "Sequence[str] | None" = None) -> int:
    """Entry point; returns the process exit status."""
    args = parse_args(argv)
    try:
        with open(args.records, "a", encoding="utf-8") as stream:
            run(args, Recorder(stream))
    except WorkloadError as exc:
        sys.stderr.write(f"bpsperf workload: {exc}\n")
        return 2
    except Exception as exc:  # noqa: BLE001 - any failure must end in a clear message and non-zero exit
        import traceback

        traceback.print_exc()
        sys.stderr.write(f"bpsperf workload: training failed: {type(exc).__name__}: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
