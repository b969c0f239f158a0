"""How busy the machine was around an end-to-end test's runs, for the tests of a statistical claim.

Such a test holds on a loaded machine, or says that it needs a quiet one and
skips, naming the load measured; it never fails for load, and on a quiet
machine nothing skips. Two measures, both in cores of other processes:

- the plugin's own: every run records the CPU that processes outside its roles
  used on its node while it was timed (``foreign_load`` in a results file,
  :mod:`pytest_bpsperf.launch.load`); a run shorter than two of the launcher's
  polls records none;
- :func:`busy_cores`: the machine's CPU use over a few seconds while the test
  itself runs nothing (before its session starts, after it ended).

The load average, which counts the test's own roles too, is only named beside them.
"""

from __future__ import annotations

import os
import time
from typing import Iterable, Mapping


def load_average() -> float:
    """The machine's load average over the last minute (``/proc/loadavg``)."""
    with open("/proc/loadavg", encoding="ascii") as fh:
        return float(fh.read().split()[0])


def _cpu_jiffies() -> "tuple[int, int]":
    """(busy, all) clock ticks of every CPU since boot (``/proc/stat``); idle and I/O wait are not busy."""
    with open("/proc/stat", encoding="ascii") as fh:
        fields = [int(x) for x in fh.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    # guest time is counted in user time already
    total = sum(fields[:8])
    return total - idle, total


def busy_cores(seconds: float = 2.0) -> float:
    """How many cores' worth of CPU the machine used over ``seconds`` from now (call it while the test runs
    nothing: then that is other processes' work)."""
    busy0, _ = _cpu_jiffies()
    start = time.monotonic()
    time.sleep(seconds)
    busy1, _ = _cpu_jiffies()
    return (busy1 - busy0) / os.sysconf("SC_CLK_TCK") / (time.monotonic() - start)


def foreign_cores(results: Mapping) -> "list[float]":
    """The foreign load of every run of a results document that recorded one (cores)."""
    return [t["foreign_load"]["cores"] for t in results["tests"] if t.get("foreign_load")]


def too_busy(foreign: Iterable[float], limit: float, around: "Mapping[str, float] | None" = None) -> "str | None":
    """Why the session could not make its statistical claim, naming the load; None when the machine was quiet.

    ``foreign``: the runs' foreign load; ``around``: when -> :func:`busy_cores`
    measured then (``{"before": ..., "after": ...}``); ``limit``: the cores of other
    processes the claim allows (the session's ``foreign_load`` setting: beyond it
    the plugin itself names a run's load).
    """
    runs, around = sorted(foreign), dict(around or {})
    loud = [c for c in runs if c > limit]
    if not loud and all(c <= limit for c in around.values()):
        return None
    said = [
        f"{len(loud)} of {len(runs)} runs saw more (up to {runs[-1]:.2f})"
        if runs
        else "no run recorded its foreign load (each shorter than two polls)"
    ]
    said += [f"{c:.2f} cores busy {when} the session" for when, c in around.items()]
    return (
        f"needs a quiet machine (at most {limit:g} cores of other processes): {'; '.join(said)}; "
        f"load average {load_average():.2f} on {os.cpu_count()} cores"
    )
