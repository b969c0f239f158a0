"""Ray reserves what a run uses: one placement group, one bundle per worker node and per server node.

Worker bundles hold the worker node's GPUs, and every bundle the CPUs of the
roles in it (``RolePlan.cpus``, which their actors then hold); each bundle is pinned to the node
the placement chose (by Ray's ``ray.io/node-id`` label), so another job cannot
take a run's GPUs while it trains and Ray assigns the GPU ids. A run that
cannot be reserved within ``placement_timeout`` fails with what was requested
and what each node has. Driver-side code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..runs.plan import Plan

#: Ray's built-in label with a node's id.
NODE_ID_LABEL = "ray.io/node-id"


class ReservationError(RuntimeError):
    """Ray could not reserve a run's nodes in time; the message lists requested and available resources."""


def _plain(resources: Mapping[str, float]) -> str:
    # Placement-group bookkeeping shows up as CPU_group_<id> etc.; node:<ip> is implied.
    keys = sorted(
        k
        for k in resources
        if "_group_" not in k and not k.startswith("node:") and k not in ("memory", "object_store_memory")
    )
    return ", ".join(f"{k} {resources[k]:g}" for k in keys) or "nothing"


def _cluster_listing() -> str:
    import ray
    from ray._private import state

    try:
        available = state.available_resources_per_node()
    except Exception:  # noqa: BLE001 - a private API; the listing is a courtesy
        available = {}
    lines = []
    for n in ray.nodes():
        if not n.get("Alive"):
            lines.append(f"    {n['NodeManagerAddress']} ({n['NodeID'][:8]}): dead")
            continue
        lines.append(
            f"    {n['NodeManagerAddress']} ({n['NodeID'][:8]}): total {_plain(n.get('Resources', {}))}; "
            f"available {_plain(available.get(n['NodeID'], {}))}"
        )
    return "\n".join(lines)


@dataclass
class Reservation:
    """The placement group of one run."""

    group: Any  # ray.util.placement_group.PlacementGroup (Ray is imported only where it runs)

    def strategy(self, bundle: int) -> object:
        """The scheduling strategy that puts an actor into ``bundle``."""
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        return PlacementGroupSchedulingStrategy(placement_group=self.group, placement_group_bundle_index=bundle)

    def release(self) -> None:
        """Give the reserved resources back (idempotent)."""
        from ray.util.placement_group import remove_placement_group

        if self.group is not None:
            try:
                remove_placement_group(self.group)
            except Exception:  # noqa: BLE001 - already gone with its cluster
                pass
            self.group = None


def reserve(plan: Plan, timeout: float) -> Reservation:
    """Reserve ``plan``'s bundles on their nodes; raise :class:`ReservationError` after ``timeout`` seconds."""
    import ray
    from ray.util.placement_group import placement_group

    bundles = [dict(b.resources) for b in plan.bundles]
    selectors = [{NODE_ID_LABEL: b.node.node_id} for b in plan.bundles]
    group = placement_group(bundles, strategy="PACK", bundle_label_selector=selectors)
    reservation = Reservation(group)
    try:
        ray.get(group.ready(), timeout=timeout)
    except ray.exceptions.GetTimeoutError:
        listing = _cluster_listing()
        reservation.release()
        requested = "\n".join(
            f"    bundle {i}: {_plain(b.resources)} on {b.node.describe()}" for i, b in enumerate(plan.bundles)
        )
        raise ReservationError(
            f"Ray could not reserve the run's nodes within {timeout:g}s (setting 'placement_timeout'); "
            f"requested:\n{requested}\nthe cluster has:\n{listing}"
        ) from None
    return reservation
