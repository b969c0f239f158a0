"""The training workload that each worker process runs.

``python -m pytest_bpsperf.remote.workload --backend mxnet --records FILE ...``

Fixed-step training of the shipped model (gluoncv's; torchvision's with
``--framework torch``, see :mod:`.torch_workload`), or of the user's own code
(``--entry module:function``, see :mod:`.entry`), on synthetic or record data
(:mod:`.data`). Timing (``--timing``):

- ``overlapped`` (default): a step is the step callable followed by one
  wait for the device (``mx.nd.waitall()``; with torch on a GPU
  ``torch.cuda.synchronize()``); inside it, backward overlaps the push of
  the gradients that are ready and the pulls (DDP: the allreduce of the
  buckets that are ready), as users train. One record per step::

    {"event": "step", "step": 3, "total_s": 0.41, "images": 8}

- ``breakdown``: the step also waits for all work at ``ctx.split()``, between
  backward and the optimizer step, and records ``compute_s`` (forward +
  backward) and ``sync_s`` (the optimizer step: push/pull). This serializes the
  step: a diagnostic, slower than what users see.

After the timed steps, ``--diagnostic-steps K`` trains K more steps that say
where a step's time goes without touching the timed ones: each waits for the
input batch (``ctx.next_batch()`` and its copy to the device), then for forward
and backward (at ``ctx.split()``), then for the optimizer step (push/pull), and
records one line per step, never counted as throughput::

    {"event": "diagnostic", "step": 0, "input_s": 0.001, "compute_s": 0.30, "sync_s": 0.09, "total_s": 0.39}

(``compute_s`` and ``sync_s`` are null, and ``unsplit_s`` holds both, when the
step callable never calls ``ctx.split()``.)

The first line (``"event": "start"``) says what ran and which environment the
process really got; the last (``"event": "end"``) marks a clean finish. Any
error prints a one-line reason to stderr (last, so it is in the log's tail)
and exits non-zero.

Backends: ``mxnet`` (``dist_sync`` kvstore, needs the ps-lite ``DMLC_*``
environment), ``byteps`` (BytePS ``DistributedTrainer`` on a GPU), ``torch``
(a DDP rank, needs ``RANK``/``WORLD_SIZE``/``MASTER_ADDR``/``MASTER_PORT``) and
``local`` (one process, no parameter server and no process group: the
reference for scaling efficiency, in either framework).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from dataclasses import dataclass
from typing import IO, Any, Callable, Sequence

from .data import Batches, records, synthetic
from .entry import EntryError, TrainContext, build_zoo_model, context_fields, import_gluoncv, load
from .environ import SIMULATION, rank_records_path, reported

#: Fault injection, for testing the harness itself: ``crash-at-step:N`` makes the
#: worker die abruptly (os._exit) at step N, as a segfaulting worker would;
#: ``slowdown:P`` adds P percent of each step's time as extra CPU work in every
#: training process, the single-process reference included (a slower model);
#: ``dist-slowdown:P`` does so only in the workers of a distributed run (a slower
#: distributed part, which the single-process reference does not share). Read once the
#: step is built: an entry point's ``build`` that sets it slows its own arm only.
FAULT_ENV = "BPSPERF_FAULT"


class WorkloadError(RuntimeError):
    """The workload cannot run as asked; the message says why."""


def parse_args(argv: "Sequence[str] | None" = None) -> argparse.Namespace:
    """Command line of the workload (what the role plan puts after ``-m``)."""
    p = argparse.ArgumentParser(prog="python -m pytest_bpsperf.remote.workload", description=__doc__.split("\n")[0])
    p.add_argument("--backend", choices=("mxnet", "byteps", "torch", "local"), required=True)
    p.add_argument("--framework", choices=("mxnet", "torch"), default="mxnet", help="what trains (backend local)")
    p.add_argument(
        "--device",
        choices=("cpu", "gpu"),
        default="cpu",
        help="backend local: where the one process trains (the worker's device)",
    )
    p.add_argument("--model", default=None, help="default: resnet50_v2 (gluoncv), resnet50 (torchvision)")
    p.add_argument("--entry", default=None, help="module:function returning a step callable (instead of --model)")
    p.add_argument("--entry-path", default=None, help="directory to import the entry point's module from")
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--batch-size", type=int, required=True)
    p.add_argument("--image-size", type=int, required=True)
    p.add_argument("--classes", type=int, default=1000)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--timing", choices=("overlapped", "breakdown"), default="overlapped")
    p.add_argument("--dtype", choices=("float32", "float16", "bfloat16"), default="float32")
    p.add_argument("--data", default="synthetic", help="'synthetic' or the path of a .rec (its .idx beside it)")
    p.add_argument("--data-threads", type=int, default=4)
    p.add_argument("--records", required=True, help="JSON-lines file for per-step records")
    p.add_argument(
        "--sync-every",
        type=int,
        default=1,
        help="wait for the device every K steps and record one window of K steps (overlapped timing)",
    )
    p.add_argument(
        "--diagnostic-steps",
        type=int,
        default=0,
        help="after the timed steps, this many steps synced between input, compute and push/pull "
        "(records 'diagnostic', never throughput)",
    )
    p.add_argument(
        "--records-per-rank",
        action="store_true",
        help="write to the records file of BYTEPS_LOCAL_RANK or LOCAL_RANK (processes spawned by bpslaunch, torchrun)",
    )
    args = p.parse_args(argv)
    if args.backend == "torch":
        args.framework = "torch"
    if args.model is None:
        args.model = "resnet50" if args.framework == "torch" else "resnet50_v2"
    if args.framework == "torch" and args.backend in ("mxnet", "byteps"):
        p.error(f"--backend {args.backend} trains MXNet, not --framework torch")
    if args.steps < 1 or args.batch_size < 1 or args.image_size < 8 or args.data_threads < 1 or args.sync_every < 1:
        p.error("--steps, --batch-size, --data-threads and --sync-every must be >= 1 and --image-size >= 8")
    if args.diagnostic_steps < 0:
        p.error("--diagnostic-steps must be >= 0")
    if args.sync_every > 1 and args.timing == "breakdown":
        p.error("--sync-every > 1 needs --timing overlapped (breakdown syncs inside every step)")
    return args


def _fault(backend: str) -> tuple:
    """(crash step or None, slowdown fraction) from ``BPSPERF_FAULT``, for a process of ``backend``."""
    spec = os.environ.get(FAULT_ENV, "")
    if not spec:
        return None, 0.0
    kind, _, value = spec.partition(":")
    if kind == "crash-at-step" and value.isdigit():
        return int(value), 0.0
    if kind in ("slowdown", "dist-slowdown") and value.replace(".", "", 1).isdigit():
        if kind == "dist-slowdown" and backend == "local":
            return None, 0.0
        return None, float(value) / 100.0
    raise WorkloadError(
        f"{FAULT_ENV}={spec!r} is not understood; accepted: crash-at-step:N, slowdown:PERCENT, dist-slowdown:PERCENT"
    )


class Recorder:
    """Appends JSON lines, flushed per line so a crash keeps every finished step."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, event: str, **fields: Any) -> None:
        fields["event"] = event
        fields["time"] = time.time()
        self._stream.write(json.dumps(fields, sort_keys=True) + "\n")
        self._stream.flush()


def mxnet_wait() -> None:
    """Wait for every pending MXNet operation (the sync of an MXNet step)."""
    import mxnet as mx

    mx.nd.waitall()


class Timer:
    """Where a step's compute ends: ``split()`` waits (``wait``: the framework's device sync) and marks
    it, with ``timing=breakdown`` only."""

    def __init__(self, breakdown: bool, wait: Callable[[], None] = mxnet_wait) -> None:
        self.breakdown = breakdown
        self.wait = wait
        self.at: "float | None" = None

    def split(self) -> None:
        if self.breakdown:
            self.wait()
            self.at = time.perf_counter()


class InputProbe:
    """The worker's batches, timed only while :attr:`active` (the diagnostic steps).

    Then ``next()`` waits until the batch is on the device and marks the end of the
    input wait in :attr:`at`; in the timed steps it hands the batch on untouched.
    """

    def __init__(self, inner: Batches, wait: "Callable[[], None] | None" = None) -> None:
        self.inner = inner
        self.wait = wait  # the device sync (torch); None: each MXNet array's own wait_to_read
        self.active = False
        self.at: "float | None" = None
        self.batches = Batches(self.next, inner.iterator, inner.kind)

    def next(self) -> tuple:
        batch = self.inner.next()
        if self.active:
            if self.wait is not None:
                self.wait()
            for array in batch:
                wait = getattr(array, "wait_to_read", None)
                if wait is not None:
                    wait()
            self.at = time.perf_counter()
        return batch


def _setup_backend(args: argparse.Namespace) -> tuple:
    """(device, rank, worker processes, trainer factory, step scale, facts) of the backend."""
    import mxnet as mx
    from mxnet import gluon

    multi = {"multi_precision": True} if args.dtype == "float16" else {}
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

        # No bps.broadcast_parameters: it rejects a gluon ParameterDict (TypeError);
        # DistributedTrainer broadcasts rank 0's parameters itself in its first
        # step, and averages over workers itself: step() takes the per-worker batch.
        def distributed_trainer(params: Any, optimizer: str = "sgd", optimizer_params: "dict | None" = None) -> Any:
            return bps.DistributedTrainer(params, optimizer, {**multi, **(optimizer_params or {})})

        facts = {"local_rank": bps.local_rank()}
        return mx.gpu(bps.local_rank()), bps.rank(), bps.size(), distributed_trainer, args.batch_size, facts
    on_gpu = args.backend == "local" and args.device == "gpu"
    if args.dtype == "float16" and not on_gpu:
        raise WorkloadError("dtype float16 needs a GPU: on CPU MXNet has no FP16 gemm (backend byteps on GPUs)")
    kv = mx.kv.create("dist_sync") if args.backend == "mxnet" else None

    def make_trainer(params: Any, optimizer: str = "sgd", optimizer_params: "dict | None" = None) -> Any:
        # the scaling reference updates as the workers do: fp16 with fp32 master weights (multi_precision)
        trainer = gluon.Trainer(params, optimizer, {**multi, **(optimizer_params or {})}, kvstore=kv)
        if kv is not None:
            ready_before_training(trainer, kv, args.batch_size * kv.num_workers)
        return trainer

    if kv is None:  # local: the scaling reference, on the device the workers train on
        return (mx.gpu(0) if on_gpu else mx.cpu()), 0, 1, make_trainer, args.batch_size, {}
    return mx.cpu(), kv.rank, kv.num_workers, make_trainer, args.batch_size * kv.num_workers, {}


def ready_before_training(trainer: Any, kv: Any, step_scale: int) -> None:
    """The dist_sync kvstore of ``trainer`` initialised now, race-free, before any step pushes.

    gluon initialises a trainer's parameters in the kvstore lazily, in its first
    ``step()``, with ``broadcast``: rank 0 pushes a key's initial value, every
    worker passes a barrier, then pulls it. On CPU MXNet 1.9 does not wait for
    that push to reach the server before the barrier (it waits on a buffer the
    CPU path never uses), so a pull can get there first and the server aborts
    (``Check failed: !stored.is_none(): init K first``, apache/mxnet#7893): the
    busier the engine (a step that runs extra forward passes), the likelier.
    Here the same initialisation is done with the wait in between: every worker
    ``init``s every key that exists now (rank 0 pushes), rank 0 waits until its
    pushes are done, all pass a barrier, then each pulls rank 0's values.
    Parameters still deferred are left to the trainer, as before. The optimizer
    travels to the servers with the gradient scale of ``trainer.step(step_scale)``
    (gluon refuses a step whose scale differs from the one the servers have).
    """
    import mxnet as mx

    trainer._optimizer.rescale_grad = trainer._scale / step_scale  # noqa: SLF001 - as step() sets it first
    trainer._init_kvstore()  # noqa: SLF001 - gluon has no public way to do this before the first step
    ready = [p for p in trainer._params_to_init if not p._deferred_init]  # noqa: SLF001
    arrays = {p.name: p._check_and_get(p._data, list) for p in ready}  # noqa: SLF001

    def plain(a: Any) -> Any:  # the kvstore sends a buffer as it lies: not in MKL-DNN's blocked layout
        return mx.nd.array(a.asnumpy(), ctx=mx.cpu(), dtype=a.dtype) if a.stype == "default" else a

    for p in ready:  # the same keys in the same order on every worker
        kv.init(trainer._param2idx[p.name], plain(arrays[p.name][0]))  # noqa: SLF001
    mx.nd.waitall()  # rank 0: its initial values are on the server
    kv._barrier()  # noqa: SLF001 - every worker: nothing is pulled before they are
    for p in ready:
        first = arrays[p.name][0]
        if first.stype != "default":
            continue  # as gluon's broadcast: sparse keys are only inited
        value = mx.nd.zeros(first.shape, ctx=mx.cpu(), dtype=first.dtype)
        kv.pull(trainer._param2idx[p.name], out=value)  # noqa: SLF001
        for a in arrays[p.name]:
            value.copyto(a)
    mx.nd.waitall()
    trainer._params_to_init = [p for p in trainer._params_to_init if p._deferred_init]  # noqa: SLF001


@dataclass
class Built:
    """A worker's training, built: the step, what the start record says, the device sync, the end."""

    step: Callable[[], Any]
    info: dict
    wait: Callable[[], None] = mxnet_wait
    #: fields of the end record (e.g. a DDP rank's parameter checksum), then leaving the process group
    finish: Callable[[], dict] = dict


def _build(args: argparse.Namespace, timer: Timer, probe: "list[InputProbe]") -> Built:
    """The step callable (the entry point's, or the shipped model's) and what ran, for the start record.

    ``probe`` receives the :class:`InputProbe` of the batches the step reads (for the diagnostic steps).
    """
    if args.framework == "torch":
        return _build_torch(args, timer, probe)
    device, rank, num_workers, make_trainer, scale, facts = _setup_backend(args)
    if args.data == "synthetic":
        data: Batches = synthetic(args.batch_size, args.image_size, args.classes, device, args.dtype)
    else:
        data = records(
            args.data,
            batch_size=args.batch_size,
            image_size=args.image_size,
            threads=args.data_threads,
            rank=rank,
            parts=num_workers,
            device=device,
            dtype=args.dtype,
        )
    probe.append(InputProbe(data))
    data = probe[0].batches
    ctx = TrainContext(
        **context_fields(args, device, rank, num_workers, data, timer.split),
        step_scale=scale,
        make_trainer=make_trainer,
    )
    if args.entry:
        if importlib.util.find_spec("gluoncv") is not None:
            import_gluoncv()  # the user's code may import it, where torch 2 beside it would break the import
        step = _entry_step(args, ctx)
    else:
        try:
            import_gluoncv()
            from gluoncv.model_zoo import get_model_list
        except ImportError as exc:  # pragma: no cover - depends on the installation
            raise WorkloadError(f"gluoncv is not importable: {exc}") from exc
        if args.model.lower() not in get_model_list():
            raise WorkloadError(f"model {args.model!r} is not in gluoncv's model zoo")
        step = build_zoo_model(ctx)
    return Built(step, _start_info(args, rank, num_workers, device, data.kind, facts))


def _build_torch(args: argparse.Namespace, timer: Timer, probe: "list[InputProbe]") -> Built:
    """:func:`_build` of a torch rank (or the torch reference): see :mod:`.torch_workload`."""
    from . import torch_workload

    def probed(data: Batches, wait: Callable[[], None]) -> Batches:
        probe.append(InputProbe(data, wait))
        return probe[0].batches

    try:
        ctx, wait, facts = torch_workload.setup(args, timer.split, lambda: timer.breakdown, probed)
    except torch_workload.TorchWorkloadError as exc:
        raise WorkloadError(str(exc)) from None
    timer.wait = wait
    try:
        step = _entry_step(args, ctx) if args.entry else torch_workload.build_model(ctx)
    except torch_workload.TorchWorkloadError as exc:
        raise WorkloadError(str(exc)) from None

    def finish() -> dict:
        checksum = torch_workload.param_checksum(ctx)
        torch_workload.finish()
        return {"param_checksum": checksum} if checksum is not None else {}

    info = _start_info(args, ctx.rank, ctx.num_workers, ctx.device, ctx.data.kind, facts)
    return Built(step, info, wait, finish)


def _entry_step(args: argparse.Namespace, ctx: Any) -> Callable[[], Any]:
    """The user's step callable: ``build(ctx)`` of the entry point, each call guarded."""
    build = load(args.entry, args.entry_path)
    step = _guarded(build, args.entry, "build(ctx)")(ctx)
    if not callable(step):
        raise EntryError(f"entry point {args.entry}: build(ctx) returned {type(step).__name__}, not a step callable")
    return _guarded(step, args.entry, "step()")


def _start_info(args: argparse.Namespace, rank: int, num_workers: int, device: Any, data: str, facts: dict) -> dict:
    """What the start record says of where and what this process trains."""
    info = {
        "backend": args.backend,
        "rank": rank,
        "num_workers": num_workers,
        "ctx": str(device),
        "data": data,
        "python": sys.executable,
        **cpu_placement(),
        **facts,
    }
    if args.entry:
        # where the code under test came from (base-vs-head: the arm's tree)
        info["entry_file"] = getattr(sys.modules.get(args.entry.partition(":")[0]), "__file__", None)
    return info


def cpu_placement(numa_dir: str = "/sys/devices/system/node") -> dict:
    """Where this process may run: its CPU affinity and the NUMA nodes those CPUs belong to.

    ``numa_nodes`` is None where the node has no NUMA information. Recorded in
    the start record, so that a report shows whether a rank was pinned.
    """
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    nodes: "list[int] | None" = None
    if os.path.isdir(numa_dir):
        nodes = []
        for name in sorted(os.listdir(numa_dir)):
            if not (name.startswith("node") and name[4:].isdigit()):
                continue
            try:
                with open(os.path.join(numa_dir, name, "cpulist"), encoding="ascii") as fh:
                    members = _cpu_list(fh.read())
            except OSError:
                continue
            if members & set(cpus):
                nodes.append(int(name[4:]))
    return {"cpu_affinity": cpus, "numa_nodes": nodes}


def _cpu_list(text: str) -> "set[int]":
    """``0-3,8,10-11`` -> {0, 1, 2, 3, 8, 10, 11} (the kernel's cpulist format)."""
    out: "set[int]" = set()
    for part in text.strip().split(","):
        if "-" in part:
            low, high = part.split("-", 1)
            out.update(range(int(low), int(high) + 1))
        elif part:
            out.add(int(part))
    return out


def _guarded(fn: Callable, spec: str, what: str) -> Callable:
    """``fn`` with its exceptions turned into an :class:`EntryError` naming the entry point."""

    def call(*a: Any) -> Any:
        try:
            return fn(*a)
        except Exception as exc:
            raise EntryError(f"entry point {spec} raised in {what}: {type(exc).__name__}: {exc}") from exc

    return call


def run(args: argparse.Namespace, recorder: Recorder) -> None:
    """Train ``args.steps`` steps, one record per step."""
    started = time.perf_counter()
    timer = Timer(args.timing == "breakdown")
    probes: "list[InputProbe]" = []
    built = _build(args, timer, probes)
    step, info = built.step, built.info
    # read after the build, so that an entry point may set it for its own arm (scripts/pair_sessions.py)
    fault, slowdown = _fault(args.backend)
    env = reported(os.environ)  # what the role really got, not what the plan meant to give it
    if os.environ.get(SIMULATION):  # a stand-in ran instead of the real thing (tests/helpers/standin)
        info["simulation"] = os.environ[SIMULATION]
    recorder.write(
        "start",
        pid=os.getpid(),
        model=args.model,
        entry=args.entry,
        batch_size=args.batch_size,
        image_size=args.image_size,
        steps=args.steps,
        timing=args.timing,
        dtype=args.dtype,
        setup_s=time.perf_counter() - started,
        env=env,
        **info,
    )
    every = args.sync_every
    window = 0
    for first in range(0, args.steps, every):
        n = min(every, args.steps - first)
        timer.at = None
        t0 = time.perf_counter()
        for i in range(first, first + n):
            if fault is not None and i == fault:
                sys.stderr.write(f"{FAULT_ENV}: crashing at step {i} as asked\n")
                sys.stderr.flush()
                os._exit(86)
            step()
        built.wait()  # the one sync of an overlapped step (of a window of steps, with --sync-every)
        total = time.perf_counter() - t0
        split: "dict[str, float]" = {}
        if timer.at is not None:
            split = {"compute_s": timer.at - t0, "sync_s": t0 + total - timer.at}
        if slowdown:
            extra = total * slowdown
            _burn(extra)
            total += extra
            if split:
                split["compute_s"] += extra
        window_fields = {"steps": n, "through": first + n - 1} if every > 1 else {}
        recorder.write("step", step=window, total_s=total, images=args.batch_size * n, **window_fields, **split)
        window += 1
    if args.diagnostic_steps:
        diagnose(step, timer, probes[0], args.diagnostic_steps, recorder, slowdown=slowdown, images=args.batch_size)
    recorder.write("end", steps=args.steps, **built.finish())


def _burn(seconds: float) -> None:
    # Burn CPU rather than sleep: a bad change costs cycles that the other
    # roles on the node then lack, where a sleep would hand them over.
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


def diagnose(
    step: Callable[[], Any],
    timer: Timer,
    probe: InputProbe,
    count: int,
    recorder: Recorder,
    *,
    slowdown: float = 0.0,
    images: int = 0,
) -> None:
    """``count`` diagnostic steps after the timed ones: each synced between input, compute and push/pull.

    Every phase is waited for before the next begins (the previous step ended
    with ``waitall``, so nothing is in flight at its start): the input wait ends
    when the batch is on the device, compute at ``ctx.split()`` (after
    backward), push/pull when the optimizer step's work is done. The timed
    steps ran before, as users train (overlapped); these steps only say where
    the time goes, one ``diagnostic`` record each.
    """
    timer.breakdown, probe.active = True, True
    try:
        for k in range(count):
            timer.at = probe.at = None
            t0 = time.perf_counter()
            step()
            timer.wait()
            end = time.perf_counter()
            fields = diagnostic_fields(t0, probe.at, timer.at, end)
            if slowdown:
                extra = (end - t0) * slowdown
                _burn(extra)
                fields["total_s"] += extra
                key = "compute_s" if fields.get("compute_s") is not None else "unsplit_s"
                fields[key] += extra
            recorder.write("diagnostic", step=k, images=images, **fields)
    finally:
        timer.breakdown, probe.active = False, False


def diagnostic_fields(t0: float, input_at: "float | None", split_at: "float | None", end: float) -> dict:
    """The parts of one diagnostic step from its marks: input wait, compute, push/pull (seconds).

    ``input_at`` is None when the step read no batch through ``ctx.next_batch()``
    (its input wait is then part of compute), ``split_at`` None when it never
    called ``ctx.split()`` (compute and push/pull are then one figure, ``unsplit_s``).
    """
    start = input_at if input_at is not None else t0
    out: dict = {"total_s": end - t0, "input_s": (input_at - t0) if input_at is not None else None}
    if split_at is not None and split_at >= start:
        out.update(compute_s=split_at - start, sync_s=end - split_at, unsplit_s=None)
    else:
        out.update(compute_s=None, sync_s=None, unsplit_s=end - start)
    return out


def main(argv: "Sequence[str] | None" = None) -> int:
    """Entry point; returns the process exit status."""
    args = parse_args(argv)
    path = args.records
    if args.records_per_rank:
        # bpslaunch's ranks say BYTEPS_LOCAL_RANK; torchrun's LOCAL_RANK
        path = rank_records_path(path, os.environ.get("BYTEPS_LOCAL_RANK", os.environ.get("LOCAL_RANK", "0")))
    try:
        with open(path, "a", encoding="utf-8") as stream:
            run(args, Recorder(stream))
    except WorkloadError as exc:
        sys.stderr.write(f"bpsperf workload: {exc}\n")
        return 2
    except EntryError as exc:
        import traceback

        traceback.print_exception(
            type(exc.__cause__ or exc), exc.__cause__ or exc, (exc.__cause__ or exc).__traceback__
        )
        sys.stderr.write(f"bpsperf workload: {exc}\n")
        return 3
    except Exception as exc:  # noqa: BLE001 - any failure must end in a clear message and non-zero exit
        import traceback

        traceback.print_exc()
        sys.stderr.write(f"bpsperf workload: training failed: {type(exc).__name__}: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
