"""A stand-in for ``byteps.mxnet`` on CPU MXNet that enforces the rules BytePS 0.2.5's source states.

Tests put its folder first on ``PYTHONPATH`` to run code written for BytePS's
MXNet plugin (the preflight, the workload) where CUDA MXNet and BytePS's
worker core cannot be had. GPU contexts map to the CPU (``mx.gpu(i)`` is
``mx.cpu(i)`` once this module is imported). Each rule cites where BytePS
states it (BytePS v0.2.5.post15):

- ``init()`` first: ``DMLC_NUM_WORKER`` must be set (``byteps/common/global.cc:146``,
  ``BPS_CHECK(getenv("DMLC_NUM_WORKER"))``), and a push_pull before ``init()``
  has no context (``global.cc:405-409``);
- a tensor is declared (``byteps_declare_tensor``, ``byteps/mxnet/ops.py:82``,
  ``ops.cc:138-142``) before its first push_pull: ``byteps_mxnet_push_pull_async``
  looks its name up with ``GetContextFromName`` (``ops.cc:109``), whose
  ``BPS_CHECK(...) << name << " is not initialized"`` (``global.cc:405-409``)
  aborts the process (``byteps/common/logging.cc:70``: a failed check calls ``abort()``);
- ``is_average=True`` divides the sum by ``size()`` (``ops.cc:129-132``).

A failed check ends the process as BytePS's does: a ``[F]``-style line on
stderr, then ``abort()``.
"""

from __future__ import annotations

import os
import sys

import mxnet as mx

# The GPU branches of code written for BytePS train on the CPU here.
mx.gpu = lambda device_id=0: mx.cpu(device_id)  # noqa: E731 - a stand-in, by design

_state = {"initialized": False, "declared": set()}


def _check(condition: bool, message: str) -> None:
    """BPS_CHECK: on failure, print the check's message and abort, as BytePS's logging does."""
    if not condition:
        sys.stderr.write(f"[F] byteps stand-in: Check failed: {message}\n")
        sys.stderr.flush()
        os.abort()


def _op_name(name: str) -> str:
    return f"byteps.{name}"  # GetOpName("byteps", name) (ops.cc:103, 141)


def init() -> None:
    """``bps.init()``: reads the variables BytePS's init checks (global.cc:146)."""
    _check(os.environ.get("DMLC_NUM_WORKER") is not None, "error: env DMLC_NUM_WORKER not set")
    _state["initialized"] = True


def _inited(what: str) -> None:
    _check(_state["initialized"], f"{what} before bps.init()")


def local_rank() -> int:
    _inited("local_rank()")
    return int(os.environ.get("BYTEPS_LOCAL_RANK", "0"))


def local_size() -> int:
    _inited("local_size()")
    return int(os.environ.get("BYTEPS_LOCAL_SIZE", "1"))


def rank() -> int:
    _inited("rank()")
    return int(os.environ.get("DMLC_WORKER_ID", "0")) * local_size() + local_rank()


def size() -> int:
    _inited("size()")
    return int(os.environ["DMLC_NUM_WORKER"]) * local_size()


def byteps_declare_tensor(name: str, **kwargs: object) -> None:
    """Register ``name`` (ops.cc:138-142: ``IsTensorDeclared`` adds it to the declared tensors)."""
    _state["declared"].add(_op_name(name))


def byteps_push_pull(tensor: "mx.nd.NDArray", version: int = 0, priority: int = 0, name: "str | None" = None,
                     is_average: bool = True) -> None:
    """One worker's push_pull: the name must be declared (ops.cc:109, global.cc:405-409)."""
    _inited("byteps_push_pull")
    _check(name is not None and _op_name(name) in _state["declared"],
           f"_name_to_cxt.find(name) != _name_to_cxt.end() {_op_name(str(name))} is not initialized")
    _check(size() == 1, "this stand-in sums over one worker only")
    if is_average:
        tensor /= size()
