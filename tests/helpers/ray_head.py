"""A Ray head of its own on loopback (``ray start --head --block``), with the Jobs server, stopped by pid.

``ray stop`` cannot be scoped: it kills every Ray process of the user by name,
other sessions' included. So the head runs in a process group of its own with
a temporary directory and ports of its own, and :meth:`RayHead.stop` signals that
group, then kills what it recorded as the head's descendants (pid and start
time), and checks that no process names the head's temporary directory.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import urllib.request
from dataclasses import dataclass, field

from helpers.procs import alive, cmdline_of, snapshot_tree, wait_until

#: the head's listening ports, each chosen free here (another Ray on this machine keeps its own)
PORTS = (
    "port",
    "dashboard-port",
    "node-manager-port",
    "object-manager-port",
    "ray-client-server-port",
    "dashboard-agent-listen-port",
    "dashboard-agent-grpc-port",
    "runtime-env-agent-port",
    "metrics-export-port",
)

#: a throw-away cluster on loopback, without token authentication (tests/conftest.py says why)
LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def has_jobs_server(python: str) -> "str | None":
    """None when ``python`` can run Ray's Jobs server and CLI (ray[default]); else what it lacks."""
    code = "import aiohttp, aiohttp_cors, ray.dashboard.modules.job.cli, ray.dashboard.modules.job.job_head"
    try:
        proc = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    return None if proc.returncode == 0 else (proc.stderr.strip().splitlines() or ["?"])[-1]


@dataclass
class RayHead:
    """``ray start --head`` under ``python``, on 127.0.0.1, in a temporary directory of its own."""

    python: str
    env: dict
    num_cpus: int = 2
    temp_dir: str = ""
    ports: dict = field(default_factory=dict)
    proc: "subprocess.Popen | None" = None
    log: str = ""

    @property
    def address(self) -> str:
        """The GCS address (what ``ray.init`` and ``--bpsperf-ray-address`` take)."""
        return f"127.0.0.1:{self.ports['port']}"

    @property
    def jobs_address(self) -> str:
        """The Jobs API (what ``ray job submit --address`` takes)."""
        return f"http://127.0.0.1:{self.ports['dashboard-port']}"

    def ray(self, *args: str) -> "list[str]":
        """The ``ray`` CLI of ``python`` with ``args``."""
        return [self.python, "-m", "ray.scripts.scripts", *args]

    def start(self, timeout: float = 120.0) -> "RayHead":
        # short: Ray's socket paths under the session directory must stay below the Unix limit
        self.temp_dir = tempfile.mkdtemp(prefix="bpsperf-rj-", dir="/tmp")
        self.ports = {name: free_port() for name in PORTS}
        low = free_port()
        args = [
            "start",
            "--head",
            "--block",
            "--node-ip-address=127.0.0.1",
            "--dashboard-host=127.0.0.1",
            "--include-dashboard=true",
            f"--temp-dir={self.temp_dir}",
            f"--num-cpus={self.num_cpus}",
            "--disable-usage-stats",
            f"--min-worker-port={low}",
            f"--max-worker-port={low + 200}",
            *[f"--{name}={port}" for name, port in self.ports.items()],
        ]
        self.log = os.path.join(self.temp_dir, "ray-start.log")
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                self.ray(*args),
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        if not wait_until(self._ready, timeout, interval=1.0):
            tail = self.tail()
            self.stop()
            raise RuntimeError(f"the Ray head did not come up within {timeout:.0f}s:\n{tail}")
        return self

    def _ready(self) -> bool:
        if self.proc is None or self.proc.poll() is not None:
            raise RuntimeError(
                f"ray start --head exited ({self.proc.returncode if self.proc else '?'}):\n" + self.tail()
            )
        try:
            with urllib.request.urlopen(f"{self.jobs_address}/api/version", timeout=2) as reply:
                return reply.status == 200 and bool(json.loads(reply.read()))
        except (OSError, ValueError):
            return False

    def tail(self, lines: int = 40) -> str:
        try:
            with open(self.log, encoding="utf-8", errors="replace") as fh:
                return "".join(fh.readlines()[-lines:])
        except OSError:
            return ""

    def processes(self) -> "list[tuple[int, str]]":
        """(pid, cmdline) of live processes that name this head's temporary directory."""
        out = []
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) != os.getpid():
                cmd = cmdline_of(int(entry))
                if self.temp_dir and self.temp_dir in cmd:
                    out.append((int(entry), cmd))
        return out

    def stop(self, grace: float = 15.0) -> None:
        """SIGTERM the head's process group, then SIGKILL what is left of its recorded descendants."""
        if self.proc is None:
            return
        recorded = snapshot_tree(self.proc.pid)
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
        wait_until(lambda: not alive(recorded), grace / 2)
        for pid, _cmd in alive(recorded):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        wait_until(lambda: not alive(recorded), 10)
        self.proc = None

    def remove(self) -> None:
        """Delete the temporary directory (after :meth:`stop`)."""
        if self.temp_dir:
            shutil.rmtree(self.temp_dir, ignore_errors=True)
