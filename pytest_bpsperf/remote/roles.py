"""One role process on its node: start it, watch it, read what it wrote, kill it.

:class:`RoleProcess` is plain Python so that it can be tested and used without
Ray; the launcher wraps it with ``ray.remote`` so each instance is a Ray actor
living on the role's node. The process it starts:

- gets exactly the environment the plan gives it on top of the node's clean
  environment (Ray's ``OMP_NUM_THREADS=1`` and any inherited ``OMP_*``/``DMLC_*``
  are removed first, because OpenMP reads them once, when it loads);
- runs in its own session, so that teardown kills its whole process group;
- dies with the actor (``PR_SET_PDEATHSIG`` through ``setpriv``), so a killed
  driver or actor leaves no role behind; on a node without ``setpriv`` it does
  not, and its log, :meth:`RoleProcess.info` and the run's notes say so;
- writes its output to its own log file on the node.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Mapping, Sequence

from .cpuload import cpu_snapshot
from .environ import (
    IMPORT_PATH,
    PYTHON,
    RECORDS,
    SCRATCH,
    TREE,
    hide_in_text,
    package_dir,
    pythonpath,
    rank_records_path,
    scrub,
)

_SETPRIV = shutil.which("setpriv")

#: ``tree`` of a role actor whose arm's tree was shipped by Ray (``runtime_env`` working_dir):
#: the tree is the directory Ray started the actor in.
SHIPPED_TREE = "shipped"


def harness_root(directory: str) -> str:
    """A directory holding only this package (a link to it): the harness on a role's import path.

    Base-vs-head runs put the harness first and each arm's tree after it; the
    directory this package was installed in (a checkout, site-packages) would
    bring other packages ahead of the arm's tree. Made once in ``directory``.
    """
    root = os.path.join(directory, ".bpsperf-harness")
    link = os.path.join(root, "pytest_bpsperf")
    target = package_dir()
    if os.path.realpath(link) != os.path.realpath(target):
        os.makedirs(root, exist_ok=True)
        tmp = f"{link}.{os.getpid()}.tmp"
        try:
            os.symlink(target, tmp)
            os.replace(tmp, link)
        except OSError:
            if os.path.lexists(tmp):
                os.unlink(tmp)
            if os.path.realpath(link) != os.path.realpath(target):
                raise
    return root


def scratch_dir(run_id: str) -> str:
    """This run's scratch directory on this node (what ``SCRATCH`` stands for): short, for socket paths."""
    safe = "".join(c for c in run_id if c.isalnum() or c in "-_") or "run"
    return os.path.join(tempfile.gettempdir(), f"bpsperf-{safe}")


def with_scratch(env: Mapping[str, str]) -> "tuple[dict[str, str], str | None]":
    """``env`` with ``SCRATCH`` replaced, and the scratch directory (None when no value names it).

    Every directory a value names under it is created (0700); BytePS creates none of its own.
    """
    if not any(SCRATCH in str(v) for v in env.values()):
        return dict(env), None
    root = scratch_dir(str(env.get("BPSPERF_RUN_ID", "")))
    out = {k: str(v).replace(SCRATCH, root) for k, v in env.items()}
    for key, value in env.items():
        if str(value).startswith(SCRATCH):
            os.makedirs(out[key], mode=0o700, exist_ok=True)
    return out, root


#: SIOCGIFADDR: the IPv4 address of a network interface (linux/sockios.h).
_SIOCGIFADDR = 0x8915


def interface_address(name: str) -> str:
    """The IPv4 address of network interface ``name`` on this node: what ps-lite binds to with
    ``DMLC_INTERFACE`` (and what the role's ``DMLC_NODE_HOST`` must then say). Raises ValueError
    naming the node's interfaces when it has no such interface or no IPv4 address on it."""
    import fcntl
    import struct

    names = [n for _i, n in socket.if_nameindex()]
    where = f"node {socket.gethostname()} (interfaces: {', '.join(names) or 'none'})"
    if name not in names:
        raise ValueError(f"DMLC_INTERFACE={name}: no such network interface on {where}")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            packed = fcntl.ioctl(sock.fileno(), _SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
        except OSError:
            raise ValueError(f"DMLC_INTERFACE={name} has no IPv4 address on {where}") from None
    return socket.inet_ntoa(packed[20:24])


def hold_port(host: str) -> socket.socket:
    """A socket bound to a TCP port that was free on ``host``, held for the ps-lite scheduler.

    While it is held, no other process gets the port (``bind`` to port 0 skips it, a plain bind
    to it fails), and the scheduler still can take it: ps-lite's ZeroMQ listener sets
    ``SO_REUSEADDR``, as this socket does, and Linux lets such sockets share a port while the
    other one does not listen. So the port cannot be lost between choosing it and the
    scheduler binding it (a port only found free, then closed, could be). Not inherited by children.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, 0))
    except OSError:
        sock.close()
        raise
    return sock


def listening(port: int) -> "bool | None":
    """Whether some socket of this machine listens on TCP ``port`` (``/proc/net/tcp*``); None where unknown."""
    found = None
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as fh:
                rows = fh.read().splitlines()[1:]
        except OSError:
            continue
        found = bool(found)
        for row in rows:
            fields = row.split()
            if len(fields) > 3 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                return True
    return found


def kill_group(pid: int, grace: float = 5.0) -> None:
    """SIGTERM the process group led by ``pid``, then SIGKILL what is left after ``grace``."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 0.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.killpg(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)


def read_environ(pid: int) -> "dict | None":
    """The environment a live process started with, read from ``/proc``."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    out = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            out[key.decode(errors="replace")] = value.decode(errors="replace")
    return out


def process_state(pid: int) -> "str | None":
    """The state letter of ``pid`` in ``/proc`` (R, S, D, T, Z, ...), None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0].decode()
    except (OSError, IndexError):
        return None


class RoleProcess:
    """Owner of one role's process on the node where this object lives."""

    def __init__(self, name: str, log_dir: str, tree: "str | None" = None) -> None:
        self.name = name
        self.log_dir = log_dir
        # the root of the arm's source tree here (base-vs-head runs), or None
        self.tree = os.getcwd() if tree == SHIPPED_TREE else tree
        os.makedirs(log_dir, exist_ok=True)
        self.log_path = os.path.join(log_dir, f"{name}.log")
        self.records_path = os.path.join(log_dir, f"{name}.records.jsonl")
        self.proc: "subprocess.Popen | None" = None
        self.environ: "dict | None" = None
        self.started_at = 0.0
        self.ended_at: "float | None" = None
        self.killed = False
        #: whether the role dies with this actor (setpriv --pdeathsig); None before it is started
        self.pdeathsig: "bool | None" = None
        # per records file (one, or one per local rank under bpslaunch): bytes read, progress
        self._offsets: "dict[str, int]" = {}
        self._progress: "dict[str, dict]" = {}
        #: this run's scratch directory on the node, when the role's environment names it (removed at stop)
        self.scratch: "str | None" = None
        #: the scheduler's port, held from :meth:`pick_port` until the scheduler listens on it
        self._held_port: "socket.socket | None" = None

    def rename(self, name: str) -> None:
        """Take another role's name before starting (the launcher matches GPU ids to local ranks)."""
        if self.proc is not None:
            raise RuntimeError(f"role {self.name} already started")
        self.name = name
        self.log_path = os.path.join(self.log_dir, f"{name}.log")
        self.records_path = os.path.join(self.log_dir, f"{name}.records.jsonl")

    # -- placement facts -------------------------------------------------
    def where(self) -> dict:
        """Where this actor runs as Ray placed it: node id, address, host name, the GPU ids Ray assigned."""
        try:
            import ray

            context = ray.get_runtime_context()
            return {
                "node_id": context.get_node_id(),
                "ip": ray.util.get_node_ip_address(),
                "hostname": socket.gethostname(),
                "gpu_ids": [int(g) for g in ray.get_gpu_ids()],
                "pid": os.getpid(),
            }
        except Exception:  # noqa: BLE001 - outside Ray: this machine on loopback
            return {
                "node_id": "",
                "ip": "127.0.0.1",
                "hostname": socket.gethostname(),
                "gpu_ids": [],
                "pid": os.getpid(),
            }

    def pick_port(self, host: str) -> int:
        """Choose the scheduler's port here, on the scheduler's own node, and hold it (:func:`hold_port`)
        until the scheduler listens on it (seen by :meth:`status`) or the role is stopped."""
        self._release_port()
        self._held_port = hold_port(host)
        return self._held_port.getsockname()[1]

    def _release_port(self, *, unless_unused: bool = False) -> None:
        """Close the held port; with ``unless_unused``, only once something listens on it (or none can tell)."""
        sock = self._held_port
        if sock is None:
            return
        if unless_unused and listening(sock.getsockname()[1]) is False:
            return
        sock.close()
        self._held_port = None

    def address_of(self, interface: str) -> dict:
        """``{"ip": ...}`` of ``interface`` on this node, or ``{"error": why}`` (see :func:`interface_address`)."""
        try:
            return {"ip": interface_address(interface)}
        except ValueError as exc:
            return {"error": str(exc)}

    # -- lifecycle ---------------------------------------------------------
    def start(self, command: Sequence[str], env: Mapping[str, str]) -> int:
        """Start the role; returns its pid. ``command`` may use the PYTHON/RECORDS placeholders."""
        if self.proc is not None:
            raise RuntimeError(f"role {self.name} already started")
        tree = self.tree or ""
        argv = [
            sys.executable if a == PYTHON else a.replace(RECORDS, self.records_path).replace(TREE, tree)
            for a in command
        ]
        if _SETPRIV:
            argv = [_SETPRIV, "--pdeathsig", "KILL", "--", *argv]
        full_env = scrub(os.environ)
        env, self.scratch = with_scratch(env)
        full_env.update(env)
        arm_paths = full_env.pop(IMPORT_PATH, "")
        if arm_paths:
            # base-vs-head: the harness alone, then the arm's code, then what the node has
            first = [harness_root(self.log_dir)] + [p.replace(TREE, tree) for p in arm_paths.split(os.pathsep) if p]
        else:
            # The plugin's own package must import in the role (the worker runs it
            # with -m) wherever the actor found it, e.g. shipped by Ray's py_modules.
            first = [os.path.dirname(package_dir())]
        full_env["PYTHONPATH"] = pythonpath(first, full_env)
        full_env["PYTHONUNBUFFERED"] = "1"
        for stale in [self.records_path, *self._rank_records_paths()]:
            if os.path.exists(stale):
                os.unlink(stale)
        self._offsets, self._progress = {}, {}
        self.pdeathsig = bool(_SETPRIV)
        with open(self.log_path, "ab") as log:
            if not self.pdeathsig:
                log.write(
                    f"# bpsperf: setpriv not found: {self.name} does not die with its actor (no "
                    "PR_SET_PDEATHSIG); a killed driver or actor may leave it running: install util-linux "
                    "on this node\n".encode()
                )
            log.write(f"# bpsperf: starting {self.name}: {hide_in_text(' '.join(argv))}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                argv,
                env=full_env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=self.log_dir,
            )
        self.started_at = time.time()
        # Popen returns after exec, so /proc shows what the role itself received.
        self.environ = read_environ(self.proc.pid) or dict(full_env)
        return self.proc.pid

    def poll(self) -> "int | None":
        """Exit status, or None while running."""
        if self.proc is None:
            return None
        code = self.proc.poll()
        if code is not None and self.ended_at is None:
            self.ended_at = time.time()
        return code

    def _progress_files(self) -> "list[str]":
        """The records files that show progress: one per local rank when a launcher spawned them, else one."""
        return self._rank_records_paths() or [self.records_path]

    def status(self) -> dict:
        """Exit status (None while running), process state, and the worker's progress so far.

        ``steps`` counts step records, ``last_step`` is the last one's index, ``step_s``
        its duration; ``state`` is the process's /proc state letter (``T``: stopped);
        ``cpu`` the node's and this role's CPU seconds now (:func:`.cpuload.cpu_snapshot`).
        A role whose launcher spawned one training process per GPU (bpslaunch) writes
        one records file per local rank: its progress is the slowest rank's (``ranks``
        says how many files were read). Reads only what each file gained since the last call.
        """
        code = self.poll()
        self._release_port(unless_unused=code is None)  # the scheduler took it (or exited): let go
        state = process_state(self.proc.pid) if self.proc is not None and code is None else None
        files = self._progress_files()
        for path in files:
            try:
                with open(path, "rb") as fh:
                    fh.seek(self._offsets.get(path, 0))
                    chunk = fh.read()
            except OSError:
                chunk = b""
            complete = chunk[: chunk.rfind(b"\n") + 1]
            self._offsets[path] = self._offsets.get(path, 0) + len(complete)
            progress = self._progress.setdefault(path, {"steps": 0, "last_step": None, "step_s": None, "ended": False})
            for line in complete.splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get("event") == "step":
                    progress.update(steps=progress["steps"] + 1, last_step=rec.get("step"), step_s=rec.get("total_s"))
                elif rec.get("event") == "diagnostic":  # progress too (after the timed steps), not a step
                    progress.update(steps=progress["steps"] + 1)
                elif rec.get("event") == "end":
                    progress["ended"] = True
        slowest = dict(min((self._progress[p] for p in files), key=lambda pr: pr["steps"]))
        # finished: every training process wrote its end record (what a later exit status cannot undo)
        slowest["finished"] = all(self._progress[p]["ended"] for p in files)
        del slowest["ended"]
        # the node's CPU and this role's, read now: the launcher's foreign load of the run comes from these
        cpu = cpu_snapshot(self.proc.pid if self.proc is not None and code is None else None)
        return {"code": code, "state": state, **slowest, "ranks": len(files), "cpu": cpu}

    def wait(self, timeout: float) -> "int | None":
        """Wait up to ``timeout`` seconds for the role to exit; its status or None."""
        if self.proc is None:
            return None
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        return self.poll()

    def stop(self, grace: float = 3.0) -> "int | None":
        """Kill the role's process group (if still running); returns its exit status."""
        self._release_port()
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.killed = True
        kill_group(self.proc.pid, grace)
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
            pass
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
        return self.poll()

    # -- what the role left ------------------------------------------------
    def info(self) -> dict:
        """Pid, exit status, log path, the environment the process started with, whether it dies with the actor."""
        return {
            "name": self.name,
            "pid": self.proc.pid if self.proc else None,
            "exit_code": self.poll(),
            "killed": self.killed,
            "pdeathsig": self.pdeathsig,
            "log_path": self.log_path,
            "environ": self.environ or {},
            "started_at": self.started_at,
            "ended_at": self.ended_at,
        }

    def log_tail(self, lines: int = 30) -> str:
        """The last ``lines`` lines of the role's log."""
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                fh.seek(max(0, fh.tell() - 64 * 1024))
                text = fh.read().decode(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _rank_records_paths(self) -> "list[str]":
        """Records files written per local rank (processes spawned by bpslaunch), in rank order."""
        found: "list[str]" = []
        while os.path.exists(rank_records_path(self.records_path, len(found))):
            found.append(rank_records_path(self.records_path, len(found)))
        return found

    def process_records(self) -> list:
        """``[(name suffix, records)]``: ``[("", ...)]`` for one process, ``[(".0", ...), ...]`` per local rank."""
        ranked = self._rank_records_paths()
        if not ranked:
            return [("", self.records())]
        return [(f".{rank}", self.records(path)) for rank, path in enumerate(ranked)]

    def records(self, path: "str | None" = None) -> list:
        """The worker's JSON-lines records (a torn last line from a crash is skipped)."""
        out = []
        try:
            with open(path or self.records_path, encoding="utf-8") as fh:
                for line in fh:
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        continue
        except OSError:
            pass
        return out

    def latest_record(self) -> "dict | None":
        """The last complete record the worker wrote so far (for live progress), or None.

        With one records file per local rank (bpslaunch), the slowest rank's. Reads only
        the end of each file, so asking every few seconds costs the node nothing.
        """
        latest = [_last_record(path) for path in self._progress_files()]
        if any(r is None for r in latest):
            return None  # a rank that wrote nothing yet is the slowest

        def done(record: dict) -> float:
            if record.get("event") == "end":
                return float("inf")
            return float(record.get("step", -1)) if record.get("event") == "step" else -1.0

        return min(latest, key=done)  # type: ignore[arg-type]

    def read_files(self, pattern_dir: str) -> dict:
        """Contents of the files under ``pattern_dir`` (relative to the log dir), for traces."""
        root = os.path.join(self.log_dir, pattern_dir)
        out = {}
        for base, _dirs, files in os.walk(root):
            for fname in files:
                path = os.path.join(base, fname)
                try:
                    with open(path, encoding="utf-8", errors="replace") as fh:
                        out[os.path.relpath(path, self.log_dir)] = fh.read()
                except OSError:
                    continue
        return out


def _last_record(path: str) -> "dict | None":
    """The last complete JSON record of a records file, reading only its end (None before the first)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 8192))
            lines = fh.read().decode(errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a line being written, or cut by the seek
        if isinstance(record, dict):
            return record
    return None
