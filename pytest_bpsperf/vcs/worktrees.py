"""The checkouts of a base-vs-head session: detached git worktrees outside the checkout, removed after.

Each worktree lives in a temporary directory with an owner file (this
process's id and start time), so that a later session removes the worktrees
of one that was killed before its teardown (:func:`remove_stale_worktrees`);
nothing else of the repository is touched.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field

from ..remote.reaper import start_time
from .git import run_git

__all__ = ["WORKTREE_PREFIX", "WORKTREE_PREFIXES", "Worktree", "WorktreeError", "remove_stale_worktrees"]


class WorktreeError(ValueError):
    """git could not check a commit out; the message names the commit, the repository and git's words."""


#: Prefix of the temporary directories that hold base worktrees (stale ones are found by it).
WORKTREE_PREFIX = "bpsperf-base-"


#: ... and of either arm's (``head`` may be a revision too: ``bpsperf-head-``).
WORKTREE_PREFIXES = (WORKTREE_PREFIX, "bpsperf-head-")
_OWNER_FILE = "bpsperf-owner.json"


@dataclass
class Worktree:
    """A detached worktree of ``commit`` in a temporary directory outside the checkout.

    :meth:`create` checks it out (``git worktree add --detach``), :meth:`remove`
    deletes it and its administrative entry in the repository (idempotent). An
    owner file records this process, so that a later session removes the
    worktree of one that was killed (:func:`remove_stale_worktrees`).
    """

    repository: str
    commit: str
    path: "str | None" = None
    _holder: "str | None" = field(default=None, repr=False)
    #: the arm it is checked out for (names its directory: ``bpsperf-base-*``, ``bpsperf-head-*``)
    arm: str = "base"

    def create(self) -> str:
        """Check out the commit; returns the worktree's path. Raises :class:`WorktreeError` if git refuses."""
        if self.path is not None:
            return self.path
        holder = tempfile.mkdtemp(prefix=f"bpsperf-{self.arm}-")
        pid = os.getpid()
        with open(os.path.join(holder, _OWNER_FILE), "w", encoding="utf-8") as fh:
            json.dump({"pid": pid, "start_time": start_time(pid), "repository": self.repository}, fh)
        path = os.path.join(holder, "tree")
        proc = run_git(["worktree", "add", "--detach", "--force", path, self.commit], self.repository, timeout=600)
        if proc.returncode != 0:
            shutil.rmtree(holder, ignore_errors=True)
            run_git(["worktree", "prune"], self.repository, timeout=60)
            raise WorktreeError(
                f"git worktree add of {self.commit[:12]} in {self.repository} failed: "
                f"{(proc.stderr or proc.stdout).strip()}"
            )
        self._holder, self.path = holder, path
        # Also when pytest cannot reach its unconfigure (a closed terminal breaks its summary):
        # the interpreter's exit removes it. Only SIGKILL leaves it, for the next session.
        atexit.register(self.remove)
        return path

    def remove(self) -> None:
        """Delete the worktree and its entry in the repository (nothing else of the repository is touched)."""
        if self._holder is None:
            return
        holder, path = self._holder, self.path
        self._holder = self.path = None
        try:
            run_git(["worktree", "remove", "--force", "--force", str(path)], self.repository, timeout=120)
        except (OSError, subprocess.SubprocessError):
            pass
        shutil.rmtree(holder, ignore_errors=True)
        try:
            run_git(["worktree", "prune"], self.repository, timeout=60)
        except (OSError, subprocess.SubprocessError):
            pass


def _owner(holder: str) -> "dict | None":
    """The owner file of a worktree's directory (None where it cannot be read)."""
    try:
        with open(os.path.join(holder, _OWNER_FILE), encoding="utf-8") as fh:
            owner = json.load(fh)
    except (OSError, ValueError):
        return None
    return owner if isinstance(owner, dict) else None


def _session_runs(owner: dict) -> bool:
    """Whether the process an owner file names still runs (the same pid and start time)."""
    pid = owner.get("pid")
    return isinstance(pid, int) and start_time(pid) is not None and start_time(pid) == owner.get("start_time")


def remove_stale_worktrees(repository: str) -> "list[str]":
    """Remove arm worktrees whose session is gone (killed before its teardown): ``repository``'s, and
    any other left in the temporary directory (removed from its repository too, where that still exists).

    Only worktrees in a ``bpsperf-base-*`` (or ``bpsperf-head-*``) directory with an owner file naming a
    process that no longer runs (pid and start time) are touched. Returns their paths.
    """
    try:
        proc = run_git(["worktree", "list", "--porcelain"], repository, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return []
    removed = []
    for line in proc.stdout.splitlines():
        if not line.startswith("worktree "):
            continue
        path = line[len("worktree ") :]
        holder = os.path.dirname(path)
        if not os.path.basename(holder).startswith(WORKTREE_PREFIXES):
            continue
        if _session_runs(_owner(holder) or {}):
            continue
        run_git(["worktree", "remove", "--force", "--force", path], repository, timeout=120)
        shutil.rmtree(holder, ignore_errors=True)
        removed.append(path)
    # directories whose worktree entry is gone (git worktree prune ran, or the repository was
    # deleted) but whose files stayed: any of ours whose owner no longer runs
    tmp = tempfile.gettempdir()
    for name in os.listdir(tmp) if os.path.isdir(tmp) else ():
        holder = os.path.join(tmp, name)
        if not name.startswith(WORKTREE_PREFIXES) or not os.path.isfile(os.path.join(holder, _OWNER_FILE)):
            continue
        owner = _owner(holder)
        if owner is None or not isinstance(owner.get("pid"), int) or _session_runs(owner):
            continue  # not ours to judge (no owner), or its session still runs
        other = str(owner.get("repository") or "")
        if other != repository and os.path.isdir(other):
            try:
                run_git(["worktree", "remove", "--force", "--force", os.path.join(holder, "tree")], other, timeout=120)
                run_git(["worktree", "prune"], other, timeout=60)
            except (OSError, subprocess.SubprocessError):
                pass
        shutil.rmtree(holder, ignore_errors=True)
        removed.append(os.path.join(holder, "tree"))
    if removed:
        run_git(["worktree", "prune"], repository, timeout=60)
    return sorted(set(removed))
