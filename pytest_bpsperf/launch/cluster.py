"""The Ray cluster of a session: embedded (started and owned here) or existing (connected to).

Embedded (the default): ``ray.init(address="local")`` always starts a new
local Ray on 127.0.0.1 owned by this process (never another one found through
``RAY_ADDRESS`` or ``/tmp/ray``), and :meth:`RayCluster.close` stops it. A
reaper process watches this process and kills what Ray left if it dies without
closing (SIGKILL). Existing (``ray_address`` set): probe the address, connect
within ``connect_timeout``, ship this package with ``py_modules``, and on close
disconnect without touching the cluster. Either way the session first takes the
measurement lock of what it measures on (:mod:`.machine_lock`), so that two
sessions never train on top of each other. Driver-side code.

The driver's runtime_env (what ``ray.init`` gets, and so what every actor
inherits) is the merge of the ``runtime_env`` setting, on an existing cluster the
plugin's package and, inside a Ray job, the job's own
(:func:`~pytest_bpsperf.config.ray_env.session_layers`): Ray would otherwise refuse
a field that both the job and ``ray.init`` set, so the merged one is passed with
``RAY_OVERRIDE_JOB_RUNTIME_ENV=1`` (it holds the job's fields already).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

from ..config.ray_env import JOB_CONFIG_VAR, OVERRIDE_VAR, Layer, RayJob, RuntimeEnvError, merge, session_layers
from ..remote import reaper
from ..remote.environ import package_dir
from ..runs.plan import Node
from .machine_lock import LockError, MachineLock, lock_path

#: keeps every node of a local Ray on loopback (Ray otherwise picks the
#: machine's outward address); see Ray's node IP selection.
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


#: How long a session waits for another one on the same machine to finish measuring.
LOCK_WAIT_S = 4 * 3600.0


class ClusterError(RuntimeError):
    """Ray could not be started or reached."""


def _host_port(address: str) -> "tuple[str, int] | None":
    """(host, port) of ``HOST:PORT`` or ``ray://HOST:PORT``; None for 'auto' and other forms."""
    rest = address.split("://", 1)[-1]
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def probe(address: str, timeout: float) -> None:
    """Raise :class:`ClusterError` unless something accepts TCP connections at ``address`` within ``timeout``."""
    target = _host_port(address)
    if target is None:
        return
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(target, timeout=min(2.0, max(0.1, deadline - time.monotonic()))):
                return
        except OSError as exc:
            if time.monotonic() >= deadline:
                raise ClusterError(
                    f"nothing answers at {address!r} ({exc}); tried for {timeout:.0f}s (setting 'connect_timeout')"
                ) from None
            time.sleep(0.5)


def bounded_connect_env(timeout: float) -> dict:
    """Ray's own connection retries, bounded to about ``timeout`` seconds (read when Ray is imported).

    Ray 2.x otherwise retries a GCS it cannot reach for minutes. These bound only
    the connection to an existing cluster: the embedded start must keep Ray's own.
    """
    per_try = max(1, int(timeout // 3))
    return {
        "RAY_py_gcs_connect_timeout_s": str(per_try),
        "RAY_gcs_rpc_server_connect_timeout_s": "1",
        "RAY_NUM_REDIS_GET_RETRIES": str(max(1, min(5, int(timeout // (per_try + 1))))),
    }


@contextlib.contextmanager
def _keep_sigterm() -> Iterator[None]:
    """Keep this process's SIGTERM handling across ``ray.init``.

    Ray's core worker installs its own SIGTERM handler in the driver, which aborts
    the process (exit status 134) instead of letting the caller tear down.
    """
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGTERM) if main else None
    try:
        yield
    finally:
        if main and previous is not None:
            signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _environ(changes: "dict[str, str | None]") -> Iterator[None]:
    """``os.environ`` with ``changes`` applied (None removes a variable), restored afterwards."""

    def apply(values: "dict[str, str | None]") -> None:
        for key, value in values.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

    saved = {k: os.environ.get(k) for k in changes}
    try:
        apply(changes)
        yield
    finally:
        apply(saved)


@dataclass
class RayCluster:
    """The Ray cluster of a session: embedded (started here) or existing."""

    address: str = ""
    watch_dir: "str | None" = None
    started: bool = False
    owned: bool = False
    startup_s: float = 0.0
    shutdown_s: float = 0.0
    connect_timeout: float = 30.0
    #: progress lines (e.g. that this session waits for another one to finish measuring)
    say: "Callable[[str], None]" = field(default=lambda _m: None, repr=False)
    lock_waited_s: float = 0.0
    #: the ``runtime_env`` setting (a RuntimeEnvSetting) and where it came from
    runtime_env: "object | None" = None
    runtime_env_origin: str = "default"
    #: the Ray job this process runs in (``ray job submit``), read from the environment when None
    job: "RayJob | None" = field(default=None, repr=False)
    _reaper: "reaper.ReaperHandle | None" = None
    _lock: "MachineLock | None" = None

    def __post_init__(self) -> None:
        if self.job is None:
            self.job = RayJob.detect(os.environ)

    def layers(self) -> "list[Layer]":
        """The layers of the driver's runtime_env (see the module): job, setting, the plugin's package."""
        return session_layers(
            existing=bool(self.address),
            job=self.job,
            setting=self.runtime_env,
            setting_origin=self.runtime_env_origin,
            package=package_dir(),
        )

    def init_args(self) -> "tuple[dict | None, dict[str, str | None]]":
        """(the runtime_env ``ray.init`` gets, the environment it runs under). Raises RuntimeEnvError.

        Inside a Ray job, on the job's cluster: the merge holds the job's fields, and
        ``RAY_OVERRIDE_JOB_RUNTIME_ENV=1`` lets it stand where Ray would refuse a field set by
        both. On an embedded Ray inside a job, the job's runtime_env is hidden from ``ray.init``:
        its URIs live in the job's cluster, not in the new one.
        """
        env = merge(self.layers()).env or None
        if self.job is None:
            return env, {}
        return env, ({OVERRIDE_VAR: "1"} if self.address else {JOB_CONFIG_VAR: None})

    def start(self) -> "RayCluster":
        """Take the measurement lock, then start (embedded) or connect (existing); idempotent."""
        if self.started:
            return self
        if self.address:
            probe(self.address, self.connect_timeout)
        if self._lock is None:
            self._lock = MachineLock(lock_path(self.address))
        try:
            self.lock_waited_s = self._lock.acquire(LOCK_WAIT_S, self.say)
        except LockError as exc:
            raise ClusterError(str(exc)) from None
        try:
            self._start()
        except BaseException:
            self._lock.release()
            raise
        return self

    def _start(self) -> None:
        t0 = time.perf_counter()
        saved: dict = {}
        if self.address and "ray" not in sys.modules:
            bounded = bounded_connect_env(self.connect_timeout)
            saved = {k: os.environ.get(k) for k in bounded}
            for key, value in bounded.items():
                os.environ.setdefault(key, value)  # the user's own values win
        if not self.address:
            # Ray reads this at import, into a constant; the environment reaches its
            # child processes, the constant covers a Ray imported before us.
            os.environ.update(LOOPBACK_ENV)
        try:
            import ray
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

        if not self.address:
            try:
                from ray._private import ray_constants

                ray_constants.ENABLE_RAY_CLUSTER = False
            except (ImportError, AttributeError):  # pragma: no cover - other Ray versions
                pass

        if ray.is_initialized():
            raise ClusterError("Ray is already initialized in this process; bpsperf needs its own connection")
        kwargs = dict(log_to_driver=False, configure_logging=False, include_dashboard=False)
        with _keep_sigterm():
            self._init(ray, kwargs)
        self.started = True
        self.startup_s = time.perf_counter() - t0

    def _init(self, ray, kwargs: dict) -> None:
        try:
            runtime_env, environ = self.init_args()
        except RuntimeEnvError as exc:
            raise ClusterError(str(exc)) from None
        which = f" (runtime_env from {self.runtime_env_origin})" if self.runtime_env is not None else ""
        if self.address:
            try:
                with _environ(environ):
                    ray.init(address=self.address, runtime_env=runtime_env, **kwargs)
            except Exception as exc:  # noqa: BLE001 - Ray raises many kinds
                raise ClusterError(f"cannot connect to the Ray cluster at {self.address!r}{which}: {exc}") from exc
            self.owned = False
        else:
            before = set(reaper.children(os.getpid()))
            try:
                # "local": a new Ray of our own, never the one RAY_ADDRESS or /tmp/ray point at.
                with _environ(environ):
                    ray.init(address="local", _node_ip_address="127.0.0.1", runtime_env=runtime_env, **kwargs)
            except Exception as exc:  # noqa: BLE001
                raise ClusterError(f"cannot start an embedded Ray{which}: {exc}") from exc
            self.owned = True
            address = ray.util.get_node_ip_address()
            if address != "127.0.0.1":
                ray.shutdown()
                raise ClusterError(f"the embedded Ray came up on {address}, not 127.0.0.1")
            # Ray's daemons are our children; should this process be killed,
            # the reaper kills the ones that do not die with it.
            spawned = [p for p in reaper.descendants(os.getpid()) if p not in before]
            self._reaper = reaper.spawn(os.getpid(), spawned, self.watch_dir)

    def nodes(self) -> "list[Node]":
        """The alive nodes now, head first, as planner :class:`Node` values (with their Ray resources)."""
        import ray

        nodes = []
        for raw in ray.nodes():
            if not raw.get("Alive"):
                continue
            res = {k: float(v) for k, v in raw.get("Resources", {}).items()}
            nodes.append(
                Node(
                    node_id=raw["NodeID"],
                    ip=raw["NodeManagerAddress"],
                    cpus=res.get("CPU", 0.0),
                    gpus=int(res.get("GPU", 0)),
                    label=f"{raw['NodeManagerAddress']}/{raw['NodeID'][:6]}",
                    resources=res,
                )
            )
        return nodes

    def close(self) -> None:
        """Disconnect; an embedded Ray is stopped and checked gone."""
        if not self.started:
            return
        t0 = time.perf_counter()
        import ray

        try:
            ray.shutdown()
            if self._reaper is not None:
                self._reaper.finish()
                self._reaper = None
        finally:
            self.started = False
            self.shutdown_s = time.perf_counter() - t0
            if self._lock is not None:
                self._lock.release()
