"""CPU time on a node, from ``/proc``: all of it, and that of given process sessions (a run's roles).

Runs on the nodes (in a role's actor). Two snapshots taken around the timed
part of a run give the CPU that processes outside its roles used meanwhile:
the node's non-idle time (``/proc/stat``) less the roles' own. A role's CPU is
that of its process tree: ``utime + stime`` of the role's process and its live
descendants, and ``cutime + cstime`` of those they reaped (``proc(5)``). Each
role's actor reads its own role with every status poll, so the snapshots cost
a few small reads, no scan of ``/proc``. Counted as foreign:
everything else that ran there, the harness included (Ray's daemons, the role
actors, pytest); the hypervisor's ``steal`` is kept apart.
"""

from __future__ import annotations

import os
import time

__all__ = ["cpu_snapshot", "node_busy_ticks", "tree_ticks"]


def _ticks_per_second() -> int:
    try:
        return int(os.sysconf("SC_CLK_TCK"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not Linux
        return 100


def node_busy_ticks(stat_path: str = "/proc/stat") -> "tuple[int, int]":
    """(non-idle ticks of every CPU, steal ticks) since boot, from the ``cpu`` line of ``/proc/stat``.

    Non-idle is user + nice + system + irq + softirq; guest time is already in
    user (``proc(5)``), idle and iowait are idle, steal is the hypervisor's.
    """
    with open(stat_path, encoding="ascii") as fh:
        fields = fh.readline().split()
    if not fields or fields[0] != "cpu":
        raise ValueError(f"{stat_path} does not start with the 'cpu' line")
    values = [int(v) for v in fields[1:]] + [0] * 8
    user, nice, system, _idle, _iowait, irq, softirq, steal = values[:8]
    return user + nice + system + irq + softirq, steal


def _stat_fields(pid: int, proc: str) -> "list[bytes] | None":
    """Fields 3.. of ``/proc/PID/stat`` (after the command name, which may hold spaces), None when gone."""
    try:
        with open(os.path.join(proc, str(pid), "stat"), "rb") as fh:
            return fh.read().rsplit(b")", 1)[-1].split()
    except OSError:
        return None


def _children(pid: int, proc: str) -> "list[int]":
    """The live children of ``pid`` (``/proc/PID/task/TID/children``; empty where the kernel lacks it)."""
    out: "list[int]" = []
    try:
        tasks = os.listdir(os.path.join(proc, str(pid), "task"))
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(os.path.join(proc, str(pid), "task", tid, "children"), encoding="ascii") as fh:
                out += [int(c) for c in fh.read().split()]
        except (OSError, ValueError):
            continue
    return out


def tree_ticks(pid: int, proc: str = "/proc") -> "tuple[int, bool]":
    """(CPU ticks of ``pid`` and its live descendants, with what they reaped; whether ``pid`` still runs).

    ``utime + stime + cutime + cstime`` of each (fields 14-17, ``proc(5)``); a
    zombie or a vanished ``pid`` is not running, and its figure then misses what
    it used since the last look.
    """
    total, alive, seen = 0, False, set()
    todo = [int(pid)]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        fields = _stat_fields(p, proc)
        if fields is None or len(fields) < 15:
            continue
        if p == int(pid):
            alive = fields[0] not in (b"Z", b"X", b"x")
        total += int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
        todo += _children(p, proc)
    return total, alive


def cpu_snapshot(pid: "int | None") -> dict:
    """This node now: its clock, its non-idle and steal CPU seconds since boot, the CPU seconds of the
    process tree of ``pid`` (a role) and whether it still runs, its online CPUs."""
    hz = float(_ticks_per_second())
    busy, steal = node_busy_ticks()
    ticks, alive = tree_ticks(pid) if pid else (0, False)
    return {
        "time": time.monotonic(),
        "busy_s": busy / hz,
        "steal_s": steal / hz,
        "role_s": ticks / hz,
        "alive": alive,
        "cpus": os.cpu_count() or 1,
    }
