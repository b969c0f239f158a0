"""The foreign load of a run: CPU that processes outside its roles used on its nodes while it was timed.

Every status poll of the launcher brings, from each role's actor, the node's
non-idle CPU seconds and the role's own (:func:`pytest_bpsperf.remote.cpuload.cpu_snapshot`).
:class:`LoadWatch` keeps the poll at which every worker had finished its first
step (training has started; the first step is warm-up anyway) and the last
poll at which every role still ran, before or when the workers finished; per
node, the difference is the run's :class:`~pytest_bpsperf.judge.records.NodeLoad`.
The window is that of the polls (half a second apart), not the workers' own
clocks: close enough to name a neighbour, not to correct for one.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ..judge.records import NodeLoad

__all__ = ["LoadWatch"]


class LoadWatch:
    """Per node: the CPU snapshot at training's start and the last one while every role ran."""

    def __init__(self, nodes: Mapping[str, str]) -> None:
        #: role name -> the name of the node it runs on (reports name nodes by it)
        self.nodes = dict(nodes)
        self.start: "dict[str, dict] | None" = None
        self.last: "dict[str, dict] | None" = None
        self.done = False

    def _by_node(self, status: Mapping[str, Mapping]) -> "dict[str, dict] | None":
        """Node -> its snapshot now (the first role's clock and node figures, the roles' CPU summed); None
        unless every role reported one and still runs."""
        out: "dict[str, dict]" = {}
        for role, node in self.nodes.items():
            cpu = (status.get(role) or {}).get("cpu")
            if not isinstance(cpu, Mapping) or not cpu.get("alive"):
                return None
            seen = out.setdefault(node, {"time": cpu["time"], "busy_s": cpu["busy_s"], "steal_s": cpu["steal_s"],
                                         "cpus": cpu.get("cpus", 1), "role_s": 0.0})
            seen["role_s"] += float(cpu["role_s"])
        return out

    def observe(self, status: Mapping[str, Mapping], workers: Sequence[str]) -> None:
        """Take what this poll's ``status`` (role -> its status) says of the run's CPU."""
        if self.done or not workers:
            return
        steps = [(status.get(w) or {}).get("steps") or 0 for w in workers]
        finished = all((status.get(w) or {}).get("finished") for w in workers)
        now = self._by_node(status)
        if self.start is None:
            if now is not None and min(steps) >= 1 and not finished:
                self.start = now
            return
        if now is not None:
            self.last = now
        self.done = finished

    def loads(self) -> "tuple[NodeLoad, ...]":
        """Each node's load over the window (empty when training was never seen running for two polls)."""
        if self.start is None or self.last is None:
            return ()
        out = []
        for node, a in sorted(self.start.items()):
            b = self.last.get(node)
            if b is None or b["time"] <= a["time"]:
                continue
            out.append(NodeLoad(node=node, window_s=b["time"] - a["time"], busy_s=b["busy_s"] - a["busy_s"],
                                roles_s=b["role_s"] - a["role_s"], cpus=int(a["cpus"]),
                                steal_s=b["steal_s"] - a["steal_s"]))
        return tuple(out)
