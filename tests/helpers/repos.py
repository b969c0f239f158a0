"""Real git repositories for tests that start no pytest session: ``git``, its worktrees, a three-commit history."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


def git(path: "str | Path", *args: str) -> str:
    """``git ARGS`` in ``path`` with a fixed author; its stdout."""
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=path,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def worktrees(path: "str | Path") -> "list[str]":
    """The repository's worktrees, as ``git worktree list`` names them (the repository itself first)."""
    return [
        line.split(" ", 1)[1]
        for line in git(path, "worktree", "list", "--porcelain").splitlines()
        if line.startswith("worktree ")
    ]


@dataclass
class Repo:
    path: Path
    #: its commits, oldest first
    shas: "list[str]"


def three_commits(path: Path) -> Repo:
    """A repository of three commits (a file changed in each), its working tree clean at the last."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    shas = []
    for k in range(3):
        (path / "speed.txt").write_text(f"{k}\n")
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", f"commit {k}")
        shas.append(git(path, "rev-parse", "HEAD"))
    return Repo(path, shas)
