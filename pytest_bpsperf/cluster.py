"""The Ray cluster of a session: embedded (started and owned here) or existing (connected to).

Embedded (the default): ``ray.init`` starts a local Ray on 127.0.0.1 owned by
this process, and :meth:`RayCluster.close` stops it. A reaper process watches
this process and kills what Ray left if it dies without closing (SIGKILL).
Existing (``ray_address`` set): connect, ship this package with ``py_modules``,
and on close disconnect without touching the cluster. Driver-side code.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from .placement import Node
from .remote import reaper

#: keeps every node of a local Ray on loopback (Ray otherwise picks the
#: machine's outward address); see Ray's node IP selection.
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


class ClusterError(RuntimeError):
    """Ray could not be started or reached."""


@dataclass
class RayCluster:
    """The Ray cluster of a session: embedded (started here) or existing."""

    address: str = ""
    watch_dir: "str | None" = None
    started: bool = False
    owned: bool = False
    startup_s: float = 0.0
    shutdown_s: float = 0.0
    _reaper: "reaper.ReaperHandle | None" = None

    def start(self) -> "RayCluster":
        """Start (embedded) or connect (existing); idempotent."""
        if self.started:
            return self
        t0 = time.perf_counter()
        if not self.address:
            # Ray reads this at import, into a constant; the environment reaches its
            # child processes, the constant covers a Ray imported before us.
            os.environ.update(LOOPBACK_ENV)
        import ray

        if not self.address:
            try:
                from ray._private import ray_constants

                ray_constants.ENABLE_RAY_CLUSTER = False
            except (ImportError, AttributeError):  # pragma: no cover - other Ray versions
                pass

        if ray.is_initialized():
            raise ClusterError("Ray is already initialized in this process; bpsperf needs its own connection")
        kwargs = dict(log_to_driver=False, configure_logging=False, include_dashboard=False)
        if self.address:
            import pytest_bpsperf

            try:
                ray.init(
                    address=self.address,
                    runtime_env={"py_modules": [os.path.dirname(pytest_bpsperf.__file__)]},
                    **kwargs,
                )
            except Exception as exc:  # noqa: BLE001 - Ray raises many kinds
                raise ClusterError(f"cannot connect to the Ray cluster at {self.address!r}: {exc}") from exc
            self.owned = False
        else:
            before = set(reaper.children(os.getpid()))
            try:
                ray.init(_node_ip_address="127.0.0.1", **kwargs)
            except Exception as exc:  # noqa: BLE001
                raise ClusterError(f"cannot start an embedded Ray: {exc}") from exc
            self.owned = True
            address = ray.util.get_node_ip_address()
            if address != "127.0.0.1":
                ray.shutdown()
                raise ClusterError(f"the embedded Ray came up on {address}, not 127.0.0.1")
            # Ray's daemons are our children; should this process be killed,
            # the reaper kills the ones that do not die with it.
            spawned = [p for p in reaper.descendants(os.getpid()) if p not in before]
            self._reaper = reaper.spawn(os.getpid(), spawned, self.watch_dir)
        self.started = True
        self.startup_s = time.perf_counter() - t0
        return self

    def nodes(self) -> "list[Node]":
        """The alive nodes now, head first, as planner :class:`Node` values (with their Ray resources)."""
        import ray

        nodes = []
        for raw in ray.nodes():
            if not raw.get("Alive"):
                continue
            res = {k: float(v) for k, v in raw.get("Resources", {}).items()}
            nodes.append(Node(node_id=raw["NodeID"], ip=raw["NodeManagerAddress"], cpus=res.get("CPU", 0.0),
                              gpus=int(res.get("GPU", 0)), label=f"{raw['NodeManagerAddress']}/{raw['NodeID'][:6]}",
                              resources=res))
        return nodes

    def close(self) -> None:
        """Disconnect; an embedded Ray is stopped and checked gone."""
        if not self.started:
            return
        t0 = time.perf_counter()
        import ray

        ray.shutdown()
        if self._reaper is not None:
            self._reaper.finish()
            self._reaper = None
        self.started = False
        self.shutdown_s = time.perf_counter() - t0
