"""The foreign load of a run: CPU that processes outside its roles used on its nodes while it was timed.

Every status poll of the launcher brings, from each role's actor, the node's
non-idle CPU seconds and the role's own (:func:`pytest_bpsperf.remote.cpuload.cpu_snapshot`).
:class:`LoadWatch` keeps the poll at which every worker had finished its first
step (training has started; the first step is warm-up anyway) and the last
poll at which every role still ran, before or when the workers finished; per
node, the difference is the run's :class:`~pytest_bpsperf.runs.output.NodeLoad`.
The window is that of the polls (half a second apart), not the workers' own
clocks: close enough to name a neighbour, not to correct for one; a run that
trains for less than two polls records none.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ..runs.output import NodeLoad

__all__ = ["LoadWatch"]


class LoadWatch:
    """Per role: the CPU snapshot its actor took at training's start and the last one while every role ran.

    Each actor reads the node's CPU and its own role's at the moment it answers, and on a
    loaded node the answers of one poll are tens of milliseconds apart: so each role's
    figures are taken as rates over its own actor's interval, and a node's load is the mean
    of its actors' node rates less the sum of their roles' rates, over the mean interval.
    """

    def __init__(self, nodes: Mapping[str, str]) -> None:
        #: role name -> the name of the node it runs on (reports name nodes by it)
        self.nodes = dict(nodes)
        self.start: "dict[str, dict] | None" = None
        self.last: "dict[str, dict] | None" = None
        self.done = False

    def _snapshots(self, status: Mapping[str, Mapping]) -> "dict[str, dict] | None":
        """Role -> its actor's CPU snapshot in this poll; None unless every role reported one and still runs."""
        out: "dict[str, dict]" = {}
        for role in self.nodes:
            cpu = (status.get(role) or {}).get("cpu")
            if not isinstance(cpu, Mapping) or not cpu.get("alive"):
                return None
            out[role] = dict(cpu)
        return out

    def observe(self, status: Mapping[str, Mapping], workers: Sequence[str]) -> None:
        """Take what this poll's ``status`` (role -> its status) says of the run's CPU."""
        if self.done or not workers:
            return
        steps = [(status.get(w) or {}).get("steps") or 0 for w in workers]
        finished = all((status.get(w) or {}).get("finished") for w in workers)
        now = self._snapshots(status)
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
        by_node: "dict[str, list[tuple[float, float, float, float, int]]]" = {}
        for role, node in self.nodes.items():
            a, b = self.start[role], self.last[role]
            dt = b["time"] - a["time"]
            if dt <= 0:
                continue
            by_node.setdefault(node, []).append(
                (
                    dt,
                    (b["busy_s"] - a["busy_s"]) / dt,
                    (b["role_s"] - a["role_s"]) / dt,
                    (b["steal_s"] - a["steal_s"]) / dt,
                    int(a.get("cpus", 1)),
                )
            )
        out = []
        for node, rows in sorted(by_node.items()):
            window = sum(r[0] for r in rows) / len(rows)
            busy = sum(r[1] for r in rows) / len(rows)
            steal = sum(r[3] for r in rows) / len(rows)
            out.append(
                NodeLoad(
                    node=node,
                    window_s=window,
                    busy_s=busy * window,
                    roles_s=sum(r[2] for r in rows) * window,
                    cpus=rows[0][4],
                    steal_s=steal * window,
                )
            )
        return tuple(out)
