"""A watchdog that cleans up after a driver that died without tearing down.

Ray's head daemons die with the process that started them, but some of its
helpers (agents) outlive a SIGKILLed driver. The plugin starts this reaper in a
session of its own with the pids Ray spawned; if the driver disappears before
it says "finished", the reaper kills those pids (identified by pid *and* start
time, so a recycled pid is never hit) and exits.

``python -m pytest_bpsperf.remote.reaper --watch PID PID:START ...``
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Iterable, Sequence

from .environ import package_dir, pythonpath


def start_time(pid: int) -> "int | None":
    """Start time of ``pid`` in clock ticks since boot (field 22 of /proc/PID/stat)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode(errors="replace")
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses.
    rest = stat[stat.rfind(")") + 2 :].split()
    try:
        return int(rest[19])
    except (IndexError, ValueError):
        return None


def children(pid: int) -> list:
    """Direct children of ``pid``."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read().decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1 and fields[1] == str(pid):
            out.append(int(entry))
    return out


def descendants(pid: int) -> list:
    """Every process below ``pid`` in the process tree."""
    out: list = []
    todo = children(pid)
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children(p))
    return out


def _alive(pid: int, started: "int | None") -> bool:
    return started is not None and start_time(pid) == started


def reap(targets: Iterable[tuple], grace: float = 3.0) -> list:
    """Kill each (pid, start time) still alive: SIGTERM, then SIGKILL after ``grace``."""
    live = [(p, s) for p, s in targets if _alive(p, s)]
    for pid, _ in live:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_alive(p, s) for p, s in live):
        time.sleep(0.1)
    for pid, started in live:
        if _alive(pid, started):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return [p for p, _ in live]


@dataclass
class ReaperHandle:
    """The running reaper; :meth:`finish` tells it the driver cleaned up by itself."""

    proc: subprocess.Popen

    def finish(self) -> None:
        """Stop the reaper without it killing anything."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGUSR1)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def spawn(watch_pid: int, pids: Sequence[int], log_dir: "str | None" = None) -> ReaperHandle:
    """Start a reaper watching ``watch_pid`` that kills ``pids`` if the watched process dies."""
    targets = [f"{p}:{s}" for p in pids for s in [start_time(p)] if s is not None]
    log = open(os.path.join(log_dir, "reaper.log"), "ab") if log_dir else subprocess.DEVNULL
    try:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pytest_bpsperf.remote.reaper",
                "--watch",
                f"{watch_pid}:{start_time(watch_pid)}",
                *targets,
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C to the terminal's group must not reach it
            env={**os.environ, "PYTHONPATH": pythonpath([os.path.dirname(package_dir())], os.environ)},
        )
    finally:
        if not isinstance(log, int):  # a file of ours, not subprocess.DEVNULL
            log.close()
    return ReaperHandle(proc)


def _parse_target(text: str) -> tuple:
    pid, _, started = text.partition(":")
    return int(pid), int(started) if started.isdigit() else None


def main(argv: "Sequence[str] | None" = None) -> int:
    """Watch until the driver dies (then reap) or SIGUSR1 arrives (then just exit)."""
    parser = argparse.ArgumentParser(prog="python -m pytest_bpsperf.remote.reaper")
    parser.add_argument("--watch", required=True, help="PID:START of the driver")
    parser.add_argument("targets", nargs="*", help="PID:START of processes to kill if the driver dies")
    args = parser.parse_args(argv)
    watch = _parse_target(args.watch)
    targets = [_parse_target(t) for t in args.targets]
    finished = []
    signal.signal(signal.SIGUSR1, lambda *_: finished.append(True))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while not finished:
        if not _alive(*watch):
            killed = reap(targets)
            print(f"bpsperf reaper: driver {watch[0]} died; killed {killed}", flush=True)
            return 0
        time.sleep(0.5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
