"""The commits a bisect walks: GOOD..BAD along BAD's first parents, each with its subject.

A merge on the first-parent line is one step of it (its branch's commits are
not walked: the merge is the change that reached the line), as ``git bisect
--first-parent`` does. GOOD must be on that line, so that every commit of the
range has its predecessor in the range. Driver-side, plain Python (git
through subprocess).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Sequence

__all__ = ["Commit", "RangeError", "commit_range", "resolve_commit"]


class RangeError(ValueError):
    """GOOD..BAD cannot be bisected; the message names the value, where it came from and what is accepted."""


@dataclass(frozen=True)
class Commit:
    """One commit of the range: its id, its subject line, and whether it is a merge."""

    sha: str
    subject: str = ""
    merge: bool = False

    @property
    def short(self) -> str:
        """The first 12 hex digits (what the reports show)."""
        return self.sha[:12]

    def describe(self) -> str:
        """``1a2b3c4d5e6f "subject"`` (and ``(merge)``)."""
        return f'{self.short} "{self.subject}"' + (" (merge)" if self.merge else "")

    def as_dict(self) -> dict:
        """JSON view."""
        return {"sha": self.sha, "subject": self.subject, "merge": self.merge}


def _git(args: Sequence[str], repository: str) -> "subprocess.CompletedProcess[str]":
    try:
        return subprocess.run(["git", *args], cwd=repository, capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise RangeError(f"git could not be run in {repository}: {exc}") from None


def resolve_commit(value: str, what: str, repository: str) -> str:
    """The commit ``value`` names in ``repository`` (``what``: the operand, for messages)."""
    text = value.strip()
    if not text or text.startswith("-"):
        raise RangeError(f"invalid {what} {value!r}: expected a git revision (a branch, a tag, a commit, HEAD~8)")
    proc = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{text}^{{commit}}"], repository)
    sha = proc.stdout.strip()
    if proc.returncode != 0 or not sha:
        raise RangeError(
            f"invalid {what} {value!r}: not a revision of the git repository {repository} (git "
            "rev-parse found no commit); expected a branch, a tag or a commit (HEAD~8, origin/main)"
        )
    return sha


def commit_range(repository: str, good: str, bad: str) -> "tuple[Commit, list[Commit]]":
    """GOOD and the commits after it up to BAD along BAD's first parents, oldest first (BAD last).

    Raises :class:`RangeError` when either is no commit, when they are the
    same, or when GOOD is not on BAD's first-parent line.
    """
    good_sha = resolve_commit(good, "GOOD", repository)
    bad_sha = resolve_commit(bad, "BAD", repository)
    if good_sha == bad_sha:
        raise RangeError(f"GOOD {good!r} and BAD {bad!r} are the same commit ({good_sha[:12]}): nothing to bisect")
    if _git(["merge-base", "--is-ancestor", good_sha, bad_sha], repository).returncode != 0:
        raise RangeError(
            f"GOOD {good!r} ({good_sha[:12]}) is not an ancestor of BAD {bad!r} ({bad_sha[:12]}); "
            "expected an older commit of BAD's history (swap them if BAD is the older one)"
        )
    proc = _git(["log", "--first-parent", "--reverse", "--format=%H%x00%P%x00%s", f"{good_sha}..{bad_sha}"], repository)
    if proc.returncode != 0:
        raise RangeError(f"git log {good_sha[:12]}..{bad_sha[:12]} failed: {proc.stderr.strip()}")
    commits, parents = [], []
    for line in proc.stdout.splitlines():
        sha, parent_list, subject = (line.split("\x00") + ["", ""])[:3]
        commits.append(Commit(sha, subject, len(parent_list.split()) > 1))
        parents.append(parent_list.split()[:1])
    if not commits or parents[0] != [good_sha]:
        raise RangeError(
            f"GOOD {good!r} ({good_sha[:12]}) is not on BAD's first-parent line (it is on a branch "
            f"merged into it): a bisect walks BAD's first parents, merges as one step; pick GOOD from "
            f"git log --first-parent {bad}"
        )
    subject = _git(["log", "-1", "--format=%s", good_sha], repository).stdout.strip()
    return Commit(good_sha, subject), commits
