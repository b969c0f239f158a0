"""One measurement at a time per machine: an advisory lock that sessions wait on.

Two bpsperf sessions on one machine (two terminals, ``pytest -n 2``, two CI
jobs) would otherwise train on the same cores at once and each measure the
other. A session holds :class:`MachineLock` from before it starts Ray until it
stops it; another waits (and says so) before starting anything, so waiting is
never measured. ``flock`` is released by the kernel when the holder dies, even
by SIGKILL; the lock file is opened close-on-exec, so the processes Ray execs do
not inherit it, and without following a symbolic link: the lock directories are
shared, and a link planted at the lock path would make the session create,
truncate and lock the file it points to. Driver-side, plain Python.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import time
from typing import Callable

#: Where the lock files live: /run/lock when it exists (a tmpfs cleared at boot), else /tmp.
LOCK_DIRS = ("/run/lock", "/tmp")


class LockError(RuntimeError):
    """The measurement lock cannot be taken; the message names its path."""


class LockTimeout(LockError):
    """The machine stayed busy with another measurement for longer than allowed."""


def lock_path(scope: str = "") -> str:
    """The lock file for ``scope`` ('' for this machine's own Ray; a cluster address otherwise)."""
    base = next((d for d in LOCK_DIRS if os.path.isdir(d) and os.access(d, os.W_OK)), "/tmp")
    suffix = "" if not scope else "-" + hashlib.sha1(scope.encode()).hexdigest()[:10]
    return os.path.join(base, f"bpsperf-measure{suffix}.lock")


class MachineLock:
    """An exclusive ``flock`` on :func:`lock_path`; :meth:`acquire` waits, :meth:`release` is idempotent."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: "int | None" = None
        self.waited_s = 0.0

    @property
    def held(self) -> bool:
        """Whether this object holds the lock now."""
        return self._fd is not None

    def holder(self) -> str:
        """What the lock file says about its holder (pid and command), for the waiting message."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
            with open(fd, encoding="utf-8", errors="replace") as fh:
                return fh.read().strip() or "another session"
        except OSError:
            return "another session"

    def _open(self) -> int:
        """The lock file's descriptor, created if need be; a symbolic link there is a LockError."""
        flags = os.O_CLOEXEC | os.O_NOFOLLOW
        try:
            try:
                return os.open(self.path, os.O_RDWR | os.O_CREAT | flags, 0o666)
            except PermissionError:  # another user's lock file: flock works on a read-only descriptor too
                return os.open(self.path, os.O_RDONLY | flags)
        except OSError as exc:
            if exc.errno == errno.ELOOP or os.path.islink(self.path):
                try:
                    target = f" (to {os.readlink(self.path)!r})"
                except OSError:
                    target = ""
                raise LockError(
                    f"the measurement lock {self.path} is a symbolic link{target}; bpsperf does "
                    "not follow it: remove the link (the lock is a plain file that bpsperf creates)"
                ) from None
            raise

    def acquire(self, timeout: float, say: "Callable[[str], None] | None" = None, poll: float = 0.5) -> float:
        """Take the lock, waiting up to ``timeout`` seconds (telling ``say`` once); returns seconds waited."""
        if self._fd is not None:
            return 0.0
        fd = self._open()
        t0 = time.monotonic()
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if not told and say is not None:
                    say(
                        f"waiting for the measurement lock {self.path} (held by {self.holder()}): "
                        "another bpsperf session is measuring on this machine; waiting is not measured"
                    )
                    told = True
                if time.monotonic() - t0 > timeout:
                    os.close(fd)
                    raise LockTimeout(
                        f"the measurement lock {self.path} was still held by {self.holder()} after {timeout:.0f}s"
                    ) from None
                time.sleep(poll)
        try:  # who holds it, for the waiting session's message
            os.ftruncate(fd, 0)
            os.write(fd, f"pid {os.getpid()} since {time.strftime('%H:%M:%S')}\n".encode())
        except OSError:
            pass
        self._fd = fd
        self.waited_s = time.monotonic() - t0
        return self.waited_s

    def release(self) -> None:
        """Let the next session measure."""
        if self._fd is None:
            return
        try:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            os.close(self._fd)
            self._fd = None
