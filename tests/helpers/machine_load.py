"""How busy the machine was around an end-to-end test's runs, for the tests of a statistical claim.

Such a test holds on a loaded machine, or says that it needs a quiet one and
skips, naming the load measured; it never fails for load, and on a quiet
machine nothing skips. Two measures, both in cores of other processes:

- the plugin's own: every run records the CPU that processes outside its roles
  used on its node while it was timed (``foreign_load`` in a results file,
  :mod:`pytest_bpsperf.launch.load`); a run shorter than two of the launcher's
  polls records none;
- :class:`OthersWatch`: while the session runs, the CPU of the processes that are
  not this test's (nor their children, nor the kernel's threads), from ``/proc``:
  what the test cannot tell from its own harness in a run's foreign load.

The load average, which counts the test's own roles too, is only named beside them.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Mapping, Sequence


def load_average() -> float:
    """The machine's load average over the last minute (``/proc/loadavg``)."""
    with open("/proc/loadavg", encoding="ascii") as fh:
        return float(fh.read().split()[0])


def _processes() -> "dict[int, tuple[int, float, int]]":
    """pid -> (parent pid, start time, CPU ticks so far) of every live process (``/proc/<pid>/stat``)."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        out[int(entry)] = (int(fields[1]), int(fields[19]), int(fields[11]) + int(fields[12]))
    return out


def _others(procs: "dict[int, tuple[int, float, int]]", root: int) -> "set[int]":
    """The processes that are neither ``root`` nor below it, nor kernel threads (pid 2 and its children)."""
    children: "dict[int, list[int]]" = {}
    for pid, (parent, _start, _ticks) in procs.items():
        children.setdefault(parent, []).append(pid)
    ours, todo = set(), [root, 2]
    while todo:
        pid = todo.pop()
        if pid not in ours:
            ours.add(pid)
            todo.extend(children.get(pid, ()))
    return set(procs) - ours


class OthersWatch:
    """The CPU other processes use while a test's session runs: a thread that reads ``/proc`` every ``period``
    seconds, as a context manager. :attr:`peak` is the most cores they used over any ``window`` seconds."""

    def __init__(self, period: float = 1.0, window: float = 5.0) -> None:
        self.period, self.window = period, window
        #: (time, cores the other processes used since the sample before)
        self.samples: "list[tuple[float, float]]" = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="others-watch", daemon=True)

    def __enter__(self) -> "OthersWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        tick = os.sysconf("SC_CLK_TCK")
        before, then = _processes(), time.monotonic()
        while not self._stop.wait(self.period):
            now, at = _processes(), time.monotonic()
            used = sum(
                now[pid][2] - before[pid][2]
                for pid in _others(now, os.getpid())
                if pid in before and before[pid][1] == now[pid][1]  # the same process, seen twice
            )
            self.samples.append((at, used / tick / (at - then)))
            before, then = now, at

    @property
    def peak(self) -> float:
        """The most cores the other processes used, on average, over any :attr:`window` seconds."""
        best = 0.0
        for k, (start, _cores) in enumerate(self.samples):
            inside = [c for t, c in self.samples[k:] if t - start < self.window]
            best = max(best, sum(inside) / len(inside))
        return best


def foreign_cores(results: Mapping) -> "list[float | None]":
    """The foreign load of every run of a results document (cores; None where the run recorded none)."""
    return [(t.get("foreign_load") or {}).get("cores") for t in results["tests"]]


def too_busy(runs: "Sequence[float | None]", limit: float, others: OthersWatch) -> "str | None":
    """Why the session could not make its statistical claim, naming the load; None when the machine was quiet.

    ``runs``: the runs' foreign load (None: not recorded); ``others``: what other
    processes used meanwhile; ``limit``: the cores of other processes the claim
    allows (the session's ``foreign_load`` setting: beyond it the plugin itself
    names a run's load). Busy means other processes used more than ``limit`` over
    some window, and a run saw more than ``limit`` or recorded none. Where no other
    process did, a run's foreign load is the test's own harness: no reason to skip.
    """
    recorded = sorted(c for c in runs if c is not None)
    loud = [c for c in recorded if c > limit]
    if others.peak <= limit or (len(recorded) == len(runs) and not loud):
        return None
    seen = (
        f"{len(loud)} of {len(recorded)} runs that recorded their foreign load saw more (up to {recorded[-1]:.2f}), "
        f"{len(runs) - len(recorded)} recorded none"
        if recorded
        else f"none of the {len(runs)} runs recorded its foreign load"
    )
    return (
        f"needs a quiet machine: other processes used up to {others.peak:.2f} cores over {others.window:g} s while "
        f"the session ran, more than the {limit:g} its claim allows; {seen}; load average {load_average():.2f} on "
        f"{os.cpu_count()} cores"
    )
