"""Why a run failed, in words: lost actors and nodes, and the failure message with the roles' log tails.

Driver-side; used by :mod:`.launcher` once a run went wrong.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import local_roles
from .measurement import RunOutput
from .plan import Plan

if TYPE_CHECKING:  # pragma: no cover
    from .launcher import RoleGroup


def lost(group: "RoleGroup") -> str:
    """Why the roles' actors stopped answering: the nodes that died and the roles on them."""
    import ray

    gone = group.unreachable()
    if not gone:
        return "a role's actor stopped answering, then answered again"
    group.gone.update(gone)
    group.culprits = tuple(gone)
    dead = {n["NodeID"]: n for n in ray.nodes() if not n.get("Alive")}
    by_node: dict = {}
    for name in gone:
        node_id = group.where.get(name, {}).get("node_id", "")
        by_node.setdefault(node_id, []).append(name)
    parts = []
    for node_id, names in by_node.items():
        planned = next(r.node for r in group.plan.roles if r.name == names[0])
        if node_id in dead:
            reason = dead[node_id].get("DeathReasonMessage") or "dead"
            parts.append(f"node {planned.name} ({planned.ip}) was lost ({reason}); roles on it: {', '.join(names)}")
        else:
            states = "".join(local_roles.actor_state(group.where.get(n, {})) for n in names[:1])
            parts.append(f"the actors of {', '.join(names)} on node {planned.name} ({planned.ip}) do not answer"
                         f"{states}: {gone[names[0]]}")
    return "; ".join(parts)


def failure_message(reason: str, plan: Plan, output: RunOutput, tails: dict, culprits: "tuple" = ()) -> str:
    """The test's failure message: the reason, then each role that did not end cleanly with its log tail."""
    lines = [f"bpsperf run failed ({plan.backend}, trick {plan.trick.name}): {reason}"]
    # The culprits and the roles that failed first, then the others that did not end cleanly.
    outcomes = sorted(output.roles, key=lambda o: (o.name not in culprits, o.exit_code in (None, 0), o.name))
    for o in outcomes:
        if o.clean:
            continue
        status = "killed by teardown" if o.killed else f"exit code {o.exit_code}"
        lines.append(f"--- role {o.name} on node {o.node}: {status}; log {o.log_path}")
        tail = tails.get(o.name, "").strip()
        if tail and (o.exit_code not in (None, 0) or not o.killed or o.name in culprits):
            lines.extend("    " + t for t in tail.splitlines()[-15:])
    return "\n".join(lines)
