"""Real git repositories for the tests: ``git``, a new repository (``init``), its worktrees, a three-commit history.

Every git command of the tests goes through :func:`git`. The environment is
already the tests' own (:mod:`helpers.isolation`: author, no signing, no hooks or
templates of the developer's); the command line says the same again for a git
older than 2.32, which reads the developer's global config all the same.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from helpers.isolation import AUTHOR

#: Set on every command line: who commits, and that no commit, merge or tag is signed.
CONFIG = (f"user.name={AUTHOR[0]}", f"user.email={AUTHOR[1]}", "commit.gpgsign=false", "tag.gpgsign=false")


def git(path: "str | Path", *args: str) -> str:
    """``git ARGS`` in ``path`` with the tests' author and no signing; its stdout (raises when git fails)."""
    options = [item for setting in CONFIG for item in ("-c", setting)]
    return subprocess.run(
        ["git", *options, *args],
        cwd=path,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def init(path: "str | Path", branch: str = "main") -> None:
    """A new repository at ``path`` (made if missing) whose first commit goes to ``branch``.

    ``git init -b`` needs git 2.28; naming the unborn branch works with any git.
    """
    Path(path).mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    git(path, "symbolic-ref", "HEAD", f"refs/heads/{branch}")


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
    init(path)
    shas = []
    for k in range(3):
        (path / "speed.txt").write_text(f"{k}\n")
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", f"commit {k}")
        shas.append(git(path, "rev-parse", "HEAD"))
    return Repo(path, shas)


def pytest_in(repo: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """pytest in a user's repository, in a subprocess of this venv: the installed plugin (its ``pytest11``
    entry point), never this checkout on ``sys.path``, and none of this session's own settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BPSPERF_", "PYTEST_", "GITHUB_"))}
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
