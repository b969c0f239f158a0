"""What the driver does itself for a role whose actor is gone, when the role ran on this machine.

A role dies with its actor (``PR_SET_PDEATHSIG``), but an actor whose raylet
was killed can outlive it for long, and a stopped actor answers nothing. When
the role's node is this machine, the driver kills the role's process group by
the pid it recorded (after checking the process is still that role: same run
id), and reads the role's log and records from their files. Driver-side.
"""

from __future__ import annotations

import os
import socket

from ..remote.roles import RoleProcess, kill_group, process_state, read_environ


def on_this_machine(where: dict) -> bool:
    """Whether an actor that reported ``where`` ran on the machine running this code."""
    return bool(where) and where.get("hostname") == socket.gethostname()


def is_role(pid: "int | None", run_id: str) -> bool:
    """Whether ``pid`` is alive and is a role of run ``run_id`` (not a reused pid)."""
    if not pid or process_state(pid) in (None, "Z"):
        return False
    return (read_environ(pid) or {}).get("BPSPERF_RUN_ID") == run_id


def kill_role(pid: "int | None", run_id: str, grace: float = 2.0) -> bool:
    """Kill the process group of role ``pid`` of run ``run_id``; whether there was one to kill."""
    if not is_role(pid, run_id):
        return False
    kill_group(int(pid), grace)  # type: ignore[arg-type]
    return True


def read_leftovers(name: str, log_dir: str) -> "tuple[str, list]":
    """(log tail, records) of role ``name`` from its files under ``log_dir`` on this machine."""
    files = RoleProcess.__new__(RoleProcess)  # only its readers: no directory is created, nothing started
    files.log_path = os.path.join(log_dir, f"{name}.log")
    files.records_path = os.path.join(log_dir, f"{name}.records.jsonl")
    return files.log_tail(), files.records()


def actor_state(where: dict) -> str:
    """' (actor process state T: stopped)' and the like for a local actor, else ''."""
    if not on_this_machine(where) or not where.get("pid"):
        return ""
    state = process_state(int(where["pid"]))
    if state is None:
        return " (its actor process is gone)"
    return f" (its actor process {where['pid']} is in state {state}{': stopped' if state in 'Tt' else ''})"
