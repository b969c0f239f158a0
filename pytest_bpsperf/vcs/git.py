"""The git repository that holds the tests: its root, the commit and state of a tree, what a name resolves to.

Through the ``git`` command (subprocess); no git library. A failing or
missing git reads as "no repository" where that is an answer (a directory
outside any repository), and as the error it is everywhere else.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from typing import Sequence

__all__ = ["GitState", "git_state", "git_toplevel", "revision_of", "run_git"]


def run_git(args: Sequence[str], cwd: str, timeout: float = 120.0) -> "subprocess.CompletedProcess[str]":
    """``git ARGS`` in ``cwd``, its output captured as text; git's own exit status never raises."""
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)


def git_toplevel(path: str) -> "str | None":
    """The root of the git work tree that holds ``path``, or None (no repository, no git)."""
    try:
        proc = run_git(["rev-parse", "--show-toplevel"], path, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    top = proc.stdout.strip()
    return os.path.realpath(top) if proc.returncode == 0 and top else None


@dataclass(frozen=True)
class GitState:
    """The commit a tree is at and what it holds besides (``dirty``: changed or untracked, not ignored)."""

    commit: "str | None"
    dirty: bool = False
    changed: "tuple[str, ...]" = ()

    def describe(self) -> str:
        if self.commit is None:
            return "no git commit"
        if not self.dirty:
            return self.commit[:12]
        n = len(self.changed)
        return f"{self.commit[:12]} + uncommitted changes ({n} file{'s' if n != 1 else ''})"


def git_state(path: str) -> GitState:
    """Commit and dirty flag of the work tree at ``path`` (untracked, not ignored files count as dirty)."""
    try:
        head = run_git(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], path, timeout=10)
        status = run_git(["status", "--porcelain", "--untracked-files=normal"], path, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return GitState(None)
    commit = head.stdout.strip() if head.returncode == 0 else None
    changed = tuple(line[3:] for line in status.stdout.splitlines() if line.strip()) if status.returncode == 0 else ()
    return GitState(commit, bool(changed), changed)


def revision_of(text: str, rootdir: str) -> "str | None":
    """The commit that ``text`` names in the repository of ``rootdir``, or None (no repository, no such revision)."""
    top = git_toplevel(rootdir)
    if top is None or text.startswith("-"):
        return None
    try:
        proc = run_git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{text}^{{commit}}"], top, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() or None if proc.returncode == 0 else None
