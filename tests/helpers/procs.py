"""Finding the processes a bpsperf run started, to check that none is left."""

from __future__ import annotations

import os
import signal
import time

from pytest_bpsperf.remote.reaper import descendants, start_time
from pytest_bpsperf.remote.roles import read_environ


def cmdline_of(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def role_processes(run_id: "str | None" = None) -> list:
    """(pid, cmdline) of live processes started as a bpsperf role (of one run, or of any)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        env = read_environ(int(entry)) or {}
        rid = env.get("BPSPERF_RUN_ID")
        if rid and (run_id is None or rid == run_id):
            out.append((int(entry), cmdline_of(int(entry))))
    return out


def snapshot_tree(pid: int) -> list:
    """(pid, start time, cmdline) of every process below ``pid`` now."""
    return [(p, start_time(p), cmdline_of(p)) for p in descendants(pid)]


def alive(snapshot: list) -> list:
    """The entries of ``snapshot`` that are still the same live process (zombies excluded)."""
    out = []
    for pid, started, cmd in snapshot:
        if started is None or start_time(pid) != started:
            continue
        try:
            with open(f"/proc/{pid}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.append((pid, cmd))
    return out


def wait_until(predicate, timeout: float, interval: float = 0.25):
    """Poll ``predicate`` until it returns a truthy value or ``timeout`` passes; return its last value."""
    deadline = time.monotonic() + timeout
    value = predicate()
    while not value and time.monotonic() < deadline:
        time.sleep(interval)
        value = predicate()
    return value


def ctrl_c_as_in_a_terminal() -> None:
    """A child's ``preexec_fn``: SIGINT back to its default, as a terminal's foreground job has it.

    A shell starts a background job (``make test &``, a CI step's ``cmd &``) with SIGINT ignored,
    and the ignoring is inherited through every exec; Python then installs no Ctrl-C handler, so a
    test that sends SIGINT to a child must give it the disposition a user's Ctrl-C meets.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)
