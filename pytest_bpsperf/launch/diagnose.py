"""Why a run failed, in words: the failure message with the culprits and the roles' log tails.

Driver-side; used by :mod:`.launcher` once a run went wrong (a lost node is :meth:`.launcher.RoleGroup.lost`).
"""

from __future__ import annotations

from ..runs.output import RunOutput
from ..runs.plan import Plan


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
