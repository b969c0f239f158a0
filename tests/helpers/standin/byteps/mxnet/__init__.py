"""A stand-in for ``byteps.mxnet`` on CPU MXNet that enforces the rules BytePS 0.2.5.post15's source states.

Tests put this folder first on the roles' ``PYTHONPATH`` (``tests/helpers/gpu_sim.py``) to run the
code written for BytePS's MXNet plugin (the preflight, the workload's GPU branches, bpslaunch's
ranks) where CUDA MXNet and BytePS's worker core cannot be had. GPU contexts are the CPU
(``_bpsperf_simulation``). Each worker node's last local rank is its root: it sums the node's
tensors, which the other ranks send it over a Unix socket under ``BYTEPS_SOCKET_PATH``, and in a
distributed job pushes and pulls the sum through MXNet's ``dist_sync`` servers (one ps-lite worker
per node, as BytePS's root is). The rules, with where BytePS states them (``SOURCES`` quotes each
line; ``tests/unit/project/test_standin_sources.py`` checks them against BytePS's sdist):

- ``init()`` first. Before it, ``size``/``local_size``/``rank``/``local_rank`` raise BytePS's own
  "BytePS has not been initialized; use bps.init()." (``byteps/common/__init__.py:89-91``); BytePS's
  C getters would return the statics' initial values instead (``byteps/common/global.cc:32-35``),
  so code that asks too early gets rank 0 of 1 silently there: the stand-in refuses it. A
  push_pull before ``init()`` fails as ``DoPushPull`` does (``byteps/mxnet/ops.cc:74``, the
  message of ``byteps/common/global.cc:308-309``); a declaration too (stricter than BytePS).
- ``init()`` reads what BytePS reads and fails as it fails: ``BYTEPS_LOCAL_RANK``,
  ``BYTEPS_LOCAL_SIZE``, ``DMLC_WORKER_ID`` and ``DMLC_NUM_WORKER`` must be set
  (``byteps/common/communicator.cc:67-72``); ``rank = local_rank + worker_id * local_size``
  (``byteps/common/communicator.cc:80``), ``BYTEPS_GLOBAL_RANK`` overrides it
  (``byteps/common/communicator.cc:82``), ``size = num_worker * local_size``
  (``byteps/common/communicator.cc:83``); the last local rank is the root
  (``byteps/common/communicator.cc:94``); the socket paths are ``BYTEPS_SOCKET_PATH`` (default
  ``/tmp``) ``/socket_send_<rank>`` and ``/socket_recv_<rank>``
  (``byteps/common/communicator.cc:99-103``), unlinked and bound again by whoever comes next
  (``byteps/common/communicator.cc:146-147``): the stand-in aborts where a live process holds one,
  which BytePS would silently take over. A job is distributed with more than one worker node or
  ``BYTEPS_FORCE_DISTRIBUTED=1`` (``byteps/common/global.cc:149-152``), and then needs
  ``DMLC_NUM_SERVER`` (``byteps/common/global.cc:155-156``); each process calls
  ``cudaSetDevice(local_rank)`` (``byteps/common/global.cc:188``): a local rank beyond the
  devices ``CUDA_VISIBLE_DEVICES`` lists fails there.
- A tensor is declared (``byteps_declare_tensor``) before its first push_pull:
  ``byteps_mxnet_push_pull_async`` looks its name up (``byteps/mxnet/ops.cc:109``) and
  ``GetContextFromName`` aborts with "<name> is not initialized"
  (``byteps/common/global.cc:407-408``; a failed check calls ``abort()``,
  ``byteps/common/logging.cc:70``). Names are ``byteps.<name>`` (``byteps/mxnet/ops.cc:56``); a
  push_pull without a name gets a new ``byteps.noname.<n>`` that nobody declared
  (``byteps/mxnet/ops.cc:59-60``). Declaring a name twice is a no-op
  (``byteps/common/global.cc:414``).
- One name per tensor: "The tensor type and shape must be the same on all BytePS processes for
  a given name" (``byteps/mxnet/ops.py:53-54``); BytePS fixes a name's size at its first
  push_pull (``byteps/common/operations.cc:294``). The stand-in aborts on another shape or
  dtype under the same name, in this process or on another local rank.
- A push_pull sums the tensor over all ``size()`` processes, in place; ``is_average=True`` then
  divides by ``size()`` (``byteps/mxnet/ops.cc:129-132``).
- ``DistributedTrainer(params, optimizer, optimizer_params=None, root_rank=0,
  compression_params=None)`` (``byteps/mxnet/__init__.py:195``) takes a gluon ParameterDict and
  orders it by name (``byteps/mxnet/__init__.py:202-204``; anything else leaves BytePS's trainer
  with no parameters: the stand-in raises TypeError), declares ``parameter_<i>`` and, where a
  gradient exists, ``gradient_<i>`` (``byteps/mxnet/__init__.py:219-228``). ``step(batch_size)``
  sets the scale to ``batch_size`` (``byteps/mxnet/__init__.py:322``). At the first step it
  broadcasts the parameters itself: the non-root ranks zero theirs and each is push_pulled
  unaveraged as ``parameter_<index>`` (``byteps/mxnet/__init__.py:354-358``); every step scales
  each gradient by ``1 / batch_size / size()`` and push_pulls it unaveraged as ``gradient_<i>``
  (``byteps/mxnet/__init__.py:336-341``).
- ``broadcast_parameters`` refuses a gluon ParameterDict (``byteps/mxnet/__init__.py:155-158``).

A failed check ends the process as BytePS's does: an ``[F]`` line on stderr, then ``abort()``.
What the stand-in does not do: compression (refused), asynchronous training, priorities (it
push_pulls at once, in call order, so every local rank must push_pull the same names in the same
order), timeline traces, ``suspend``/``resume``.
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import struct
import sys
import threading
import time

import _bpsperf_simulation
import mxnet as mx
import numpy as np

_bpsperf_simulation.map_gpu(mx)

#: What this byteps.mxnet is (the plugin's reports say so; its runs never become baselines).
SIMULATION = _bpsperf_simulation.SIMULATION

#: Each rule's source, as the docstring cites it: (file, first line, last line, what those lines say).
#: The text is BytePS's (0.2.5.post15); tests/unit/project/test_standin_sources.py compares it with its sdist.
SOURCES = (
    ("byteps/common/__init__.py", 89, 91, "'BytePS has not been initialized; use bps.init().')"),
    ("byteps/common/global.cc", 32, 35, "int BytePSGlobal::_local_size = 1;"),
    ("byteps/mxnet/ops.cc", 74, 74, "ThrowIfError(common::CheckInitialized());"),
    ("byteps/common/global.cc", 308, 309, '"BytePS has not been initialized; use bps.init().");'),
    (
        "byteps/common/communicator.cc",
        67,
        72,
        'BPS_CHECK(getenv("DMLC_WORKER_ID")) << "error: env DMLC_WORKER_ID not set";',
    ),
    ("byteps/common/communicator.cc", 80, 80, "*rank = (*local_rank) + (*worker_id) * (*local_size);"),
    ("byteps/common/communicator.cc", 82, 82, 'getenv("BYTEPS_GLOBAL_RANK")'),
    ("byteps/common/communicator.cc", 83, 83, "*size = num_worker * (*local_size);"),
    ("byteps/common/communicator.cc", 94, 94, "_root = _members.back();"),
    ("byteps/common/communicator.cc", 99, 103, 'std::string("/socket_recv_");'),
    ("byteps/common/communicator.cc", 146, 147, "unlink(fd_path.c_str());"),
    ("byteps/common/global.cc", 149, 152, "_is_distributed_job = (_num_worker > 1) ? true : _is_distributed_job;"),
    ("byteps/common/global.cc", 155, 156, '<< "error: launch distributed job, but env DMLC_NUM_SERVER not set";'),
    ("byteps/common/global.cc", 188, 188, "CUDA_CALL(cudaSetDevice(_local_rank));"),
    ("byteps/mxnet/ops.cc", 109, 109, "auto& context = common::GetContextFromName(tensor_name);"),
    ("byteps/common/global.cc", 407, 408, '<< name << " is not initialized";'),
    ("byteps/common/logging.cc", 70, 70, "abort();"),
    ("byteps/mxnet/ops.cc", 56, 56, 'return prefix + "." + std::string(name);'),
    ("byteps/mxnet/ops.cc", 59, 60, 'return prefix + ".noname." + std::to_string(op_count);'),
    ("byteps/common/global.cc", 414, 414, "if (_name_to_cxt.find(name) == _name_to_cxt.end()) {"),
    (
        "byteps/mxnet/ops.py",
        53,
        54,
        "The tensor type and shape must be the same on all BytePS processes for a given name.",
    ),
    ("byteps/common/operations.cc", 294, 294, "context.buff_len = size;"),
    ("byteps/mxnet/ops.cc", 129, 132, "*tensor /= num_worker;"),
    (
        "byteps/mxnet/__init__.py",
        195,
        195,
        "def __init__(self, params, optimizer, optimizer_params=None, root_rank=0, compression_params=None):",
    ),
    ("byteps/mxnet/__init__.py", 202, 204, "for key in sorted(list(params.keys())):"),
    ("byteps/mxnet/__init__.py", 219, 228, 'byteps_declare_tensor("gradient_" + str(i), **byteps_params)'),
    ("byteps/mxnet/__init__.py", 322, 322, "self._scale = batch_size"),
    ("byteps/mxnet/__init__.py", 354, 358, 'name="parameter_" + str(idx), is_average=False)'),
    ("byteps/mxnet/__init__.py", 336, 341, 'name="gradient_" + str(i), priority=-i)'),
    ("byteps/mxnet/__init__.py", 155, 158, 'raise TypeError("For gluon users, you should not call this function. "'),
)

_NOT_INITIALIZED = "BytePS has not been initialized; use bps.init()."
#: How long a local rank waits for its node's root (the root for all of them), as a stuck BytePS would hang.
CONNECT_TIMEOUT_S = 120.0


def _fatal(message: str) -> None:
    """A failed BPS_CHECK: the message on stderr, then abort() (byteps/common/logging.cc:70)."""
    sys.stderr.write(f"[F] byteps stand-in: Check failed: {message}\n")
    sys.stderr.flush()
    os.abort()


def _send(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(struct.pack("!Q", len(payload)) + payload)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the other local rank closed its socket")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _recv(sock: socket.socket) -> bytes:
    (n,) = struct.unpack("!Q", _recv_exact(sock, 8))
    return _recv_exact(sock, n)


def _claim(path: str) -> socket.socket:
    """Bind a datagram socket at ``path`` as BytePS does (unlink, bind), refusing one a live process holds."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        probe.connect(path)
    except OSError:
        pass  # nobody there (or a stale file): BytePS's unlink and bind are harmless
    else:
        _fatal(
            f"{path} is bound by a live process: another BytePS job on this node uses the same socket "
            "path, and BytePS would unlink it and take it over (byteps/common/communicator.cc:146-147); "
            "give each job its own BYTEPS_SOCKET_PATH"
        )
    finally:
        probe.close()
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        sock.bind(path)
    except OSError as exc:
        _fatal(f"{path} bind failed: {exc}")
    return sock


class _Node:
    """The local ranks of this worker node: the root sums, the others send it their tensors."""

    def __init__(self, base: str, local_rank: int, local_size: int) -> None:
        self.local_rank, self.local_size = local_rank, local_size
        self.root = local_size - 1  # the last local rank (communicator.cc:94)
        self.paths = [f"{base}/socket_send_{local_rank}", f"{base}/socket_recv_{local_rank}"]
        self.sockets = [_claim(p) for p in self.paths]
        self.data_path = f"{base}/socket_standin_data_{self.root}"
        self.peers: "dict[int, socket.socket]" = {}
        self.to_root: "socket.socket | None" = None
        self._accepting: "threading.Thread | None" = None
        if local_size == 1:
            return
        if local_rank == self.root:
            try:
                os.unlink(self.data_path)
            except FileNotFoundError:
                pass
            self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.listener.bind(self.data_path)
            self.listener.listen(local_size)
            self.paths.append(self.data_path)
            self._accepting = threading.Thread(target=self._accept, daemon=True)
            self._accepting.start()
        else:
            self.to_root = self._connect()

    def _accept(self) -> None:
        while len(self.peers) < self.local_size - 1:
            conn, _ = self.listener.accept()
            rank = int(_recv(conn).decode())
            self.peers[rank] = conn

    def _connect(self) -> socket.socket:
        deadline = time.monotonic() + CONNECT_TIMEOUT_S
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(self.data_path)
                _send(sock, str(self.local_rank).encode())
                return sock
            except OSError:
                sock.close()
                if time.monotonic() > deadline:
                    _fatal(
                        f"local rank {self.local_rank} found no root at {self.data_path} within "
                        f"{CONNECT_TIMEOUT_S:.0f}s"
                    )
                time.sleep(0.1)

    def sum(self, name: str, value: np.ndarray, across: "callable") -> np.ndarray:
        """The sum of ``value`` over the node's local ranks, then ``across`` the nodes (the root's part)."""
        header = json.dumps({"name": name, "shape": list(value.shape), "dtype": str(value.dtype)}).encode()
        if self.local_size > 1 and self.local_rank != self.root:
            _send(self.to_root, header)
            _send(self.to_root, value.tobytes())
            return np.frombuffer(_recv(self.to_root), dtype=value.dtype).reshape(value.shape).copy()
        if self._accepting is not None:
            self._accepting.join(CONNECT_TIMEOUT_S)
            if len(self.peers) < self.local_size - 1:
                _fatal(
                    f"the root of this node saw {len(self.peers)} of its {self.local_size - 1} other local "
                    f"ranks within {CONNECT_TIMEOUT_S:.0f}s"
                )
            self._accepting = None
        total = value.copy()
        for rank in sorted(self.peers):
            theirs = json.loads(_recv(self.peers[rank]).decode())
            if theirs != json.loads(header.decode()):
                _fatal(
                    f"local rank {rank} push_pulls {theirs} where the root push_pulls {json.loads(header)}: "
                    "one name is one tensor, the same on all BytePS processes (byteps/mxnet/ops.py:53-54); "
                    "the stand-in also needs the same order on every local rank"
                )
            total += np.frombuffer(_recv(self.peers[rank]), dtype=value.dtype).reshape(value.shape)
        total = across(name, total)
        for rank in sorted(self.peers):
            _send(self.peers[rank], total.tobytes())
        return total

    def close(self) -> None:
        for sock in [*self.sockets, *self.peers.values(), *([self.to_root] if self.to_root else [])]:
            sock.close()
        if getattr(self, "listener", None) is not None:
            self.listener.close()
        for path in self.paths:
            try:
                os.unlink(path)
            except OSError:
                pass


class _State:
    """What ``init()`` read, the declared names and their tensors, the node and the kvstore."""

    def __init__(self) -> None:
        self.initialized = False
        self.declared: "dict[str, int]" = {}  # op name -> declared key, in declaration order
        self.tensors: "dict[str, tuple]" = {}  # op name -> (shape, dtype) of its first push_pull
        self.kv_keys: "set[str]" = set()
        self.noname = 0
        self.node: "_Node | None" = None
        self.kv = None
        self.rank = self.local_rank = self.worker_id = 0
        self.size = self.local_size = self.num_worker = 1
        self.distributed = False


_state = _State()


def _env(name: str) -> str:
    value = os.environ.get(name)
    if value is None:
        _fatal(f'getenv("{name}") error: env {name} not set')
    return value


def init(lazy: bool = True) -> None:
    """``bps.init()``: read the variables BytePS reads and check what it checks (see the module)."""
    if _state.initialized:
        return
    local_rank, local_size = int(_env("BYTEPS_LOCAL_RANK")), int(_env("BYTEPS_LOCAL_SIZE"))
    worker_id, num_worker = int(_env("DMLC_WORKER_ID")), int(_env("DMLC_NUM_WORKER"))
    rank = local_rank + worker_id * local_size
    if os.environ.get("BYTEPS_GLOBAL_RANK"):
        rank = int(os.environ["BYTEPS_GLOBAL_RANK"])
    distributed = bool(int(os.environ.get("BYTEPS_FORCE_DISTRIBUTED") or 0)) or num_worker > 1
    if distributed and os.environ.get("DMLC_NUM_SERVER") is None:
        _fatal('getenv("DMLC_NUM_SERVER") error: launch distributed job, but env DMLC_NUM_SERVER not set')
    visible = _bpsperf_simulation.visible_gpus()
    if not 0 <= local_rank < local_size or (visible is not None and local_rank >= visible):
        _fatal(
            f"cudaSetDevice({local_rank}): invalid device ordinal (BYTEPS_LOCAL_SIZE={local_size}, "
            f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r})"
        )
    base = os.environ.get("BYTEPS_SOCKET_PATH") or "/tmp"
    _state.node = _Node(base, local_rank, local_size)
    _state.rank, _state.local_rank, _state.worker_id = rank, local_rank, worker_id
    _state.size, _state.local_size, _state.num_worker = num_worker * local_size, local_size, num_worker
    _state.distributed = distributed
    _state.initialized = True
    atexit.register(shutdown)  # as BytePS's init does (byteps/common/__init__.py:61)


def shutdown() -> None:
    """``bps.shutdown()``: close the node's sockets; the kvstore's end stops MXNet's servers."""
    if _state.node is not None:
        _state.node.close()
        _state.node = None
    if _state.kv is not None:
        _state.kv = None
        import gc

        gc.collect()  # MXNet's KVStoreDist destructor sends the servers their stop (ps-lite Finalize)
    _state.initialized = False


def _initialized(what: str) -> None:
    if not _state.initialized:
        raise ValueError(f"{_NOT_INITIALIZED} ({what} before init())")


def size() -> int:
    """Processes of the job: ``DMLC_NUM_WORKER * BYTEPS_LOCAL_SIZE``."""
    _initialized("size()")
    return _state.size


def local_size() -> int:
    """Processes of this worker node: ``BYTEPS_LOCAL_SIZE``."""
    _initialized("local_size()")
    return _state.local_size


def rank() -> int:
    """This process's rank: ``BYTEPS_LOCAL_RANK + DMLC_WORKER_ID * BYTEPS_LOCAL_SIZE`` (or ``BYTEPS_GLOBAL_RANK``)."""
    _initialized("rank()")
    return _state.rank


def local_rank() -> int:
    """This process's rank on its node: ``BYTEPS_LOCAL_RANK``."""
    _initialized("local_rank()")
    return _state.local_rank


def _op_name(name: "str | None") -> str:
    if name is None:
        _state.noname += 1
        return f"byteps.noname.{_state.noname}"
    return f"byteps.{name}"


def byteps_declare_tensor(name: str, **kwargs: object) -> None:
    """Declare ``name`` (a second declaration is a no-op); compression arguments are refused here."""
    if not _state.initialized:
        raise ValueError(
            f"{_NOT_INITIALIZED} (byteps_declare_tensor({name!r}) before init(); the stand-in is "
            "stricter than BytePS here)"
        )
    if kwargs:
        raise NotImplementedError(
            f"the BytePS stand-in does not compress: byteps_declare_tensor({name!r}, {sorted(kwargs)})"
        )
    _state.declared.setdefault(_op_name(name), len(_state.declared))


def _across_nodes(name: str, total: np.ndarray) -> np.ndarray:
    """The root's part: the node's sum pushed to and pulled from MXNet's dist_sync servers."""
    if not _state.distributed:
        return total
    if _state.kv is None:
        _state.kv = mx.kv.create("dist_sync")  # BytePS's root connects at its first push_pull too
    kv = _state.kv
    if name not in _state.kv_keys:
        # every node's root initialises its keys in the same order; the wait and the barrier keep a
        # push from reaching the server before the key's init (apache/mxnet#7893)
        kv.init(name, mx.nd.zeros(total.shape, dtype=total.dtype))
        mx.nd.waitall()
        kv._barrier()  # noqa: SLF001
        _state.kv_keys.add(name)
    kv.push(name, mx.nd.array(total, dtype=total.dtype))
    out = mx.nd.zeros(total.shape, dtype=total.dtype)
    kv.pull(name, out=out)
    return out.asnumpy()


def byteps_push_pull(
    tensor: "mx.nd.NDArray", version: int = 0, priority: int = 0, name: "str | None" = None, is_average: bool = True
) -> None:
    """Sum ``tensor`` over every process of the job, in place; ``is_average`` divides by ``size()``."""
    if not _state.initialized:
        raise mx.base.MXNetError(_NOT_INITIALIZED)
    op = _op_name(name)
    if op not in _state.declared:
        _fatal(f"_name_to_cxt.find(name) != _name_to_cxt.end() {op} is not initialized")
    value = tensor.asnumpy()
    first = _state.tensors.setdefault(op, (value.shape, str(value.dtype)))
    if first != (value.shape, str(value.dtype)):
        _fatal(
            f"{op} was push_pulled as {first}, now as {(value.shape, str(value.dtype))}: the tensor type and "
            "shape must be the same for a given name (byteps/mxnet/ops.py:53-54)"
        )
    tensor[:] = _state.node.sum(op, value, _across_nodes)
    if is_average:
        tensor /= _state.size


def broadcast_parameters(params: object, root_rank: int = 0) -> None:
    """Rank ``root_rank``'s values of a dict of NDArrays on every process; a gluon ParameterDict is refused."""
    if isinstance(params, mx.gluon.parameter.ParameterDict):
        raise TypeError(
            "For gluon users, you should not call this function. DistributedTrainer will broadcast "
            "all parameters at the first training step."
        )
    if not isinstance(params, dict):
        raise ValueError(f"Invalid params of type: {type(params)}")
    for index, (_key, tensor) in enumerate(sorted(params.items())):
        byteps_declare_tensor(f"parameter_{index}")
        if rank() != root_rank:
            tensor *= 0
        byteps_push_pull(tensor, version=0, priority=0, name=f"parameter_{index}", is_average=False)


class DistributedTrainer(mx.gluon.Trainer):
    """BytePS's gluon trainer: BytePS push_pulls for gradients, the parameters broadcast at the first step."""

    def __init__(
        self,
        params: object,
        optimizer: object,
        optimizer_params: "dict | None" = None,
        root_rank: int = 0,
        compression_params: "dict | None" = None,
    ) -> None:
        if not isinstance(params, mx.gluon.ParameterDict):
            raise TypeError(
                f"DistributedTrainer takes a gluon ParameterDict (net.collect_params()), not "
                f"{type(params).__name__}: BytePS's trainer keeps no parameter of anything else "
                "(byteps/mxnet/__init__.py:202-204)"
            )
        if compression_params:
            raise NotImplementedError("the BytePS stand-in does not compress (compression_params)")
        ordered = [params[key] for key in sorted(params.keys())]
        super().__init__(ordered, optimizer, optimizer_params=optimizer_params, kvstore=None)
        self._bps_size = size()
        self.root_rank = root_rank
        for i, param in enumerate(self._params):
            byteps_declare_tensor(f"parameter_{i}")
            if param.grad_req != "null":
                byteps_declare_tensor(f"gradient_{i}")

    def step(self, batch_size: int, ignore_stale_grad: bool = False) -> None:
        """The gradients are normalized by ``batch_size`` here (and by ``size()`` in the push_pull)."""
        self._scale = batch_size
        super().step(batch_size, ignore_stale_grad)

    def _allreduce_grads(self) -> None:
        for i, param in enumerate(self._params):
            if param.grad_req == "null":
                continue
            grad = param._grad[0]  # noqa: SLF001 - what BytePS's trainer reduces
            grad *= 1.0 / self._scale / self._bps_size
            byteps_push_pull(grad, is_average=False, name=f"gradient_{i}", priority=-i)

    def _init_params(self) -> None:
        deferred = []
        for param in self._params_to_init:
            if param._deferred_init:  # noqa: SLF001
                deferred.append(param)
                continue
            array = param._check_and_get(param._data, list)[0]  # noqa: SLF001
            if rank() != self.root_rank:
                array *= 0
            byteps_push_pull(
                array, version=0, priority=0, name=f"parameter_{self._param2idx[param.name]}", is_average=False
            )
        if len(deferred) < len(self._params_to_init):
            sys.stderr.write(
                f"byteps stand-in: rank {rank()}: DistributedTrainer broadcast "
                f"{len(self._params_to_init) - len(deferred)} parameters from rank {self.root_rank} "
                "at its first step\n"
            )
        self._params_to_init = deferred
