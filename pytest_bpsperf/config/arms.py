"""The two arms of a base-vs-head session: where each one's code is and which interpreter runs it.

With ``base`` set, every job runs pairs of runs: the *base* arm (a git
revision of the repository that holds the tests, checked out as a detached
worktree outside the checkout, or a directory holding the base's code) and
the *head* arm (the working tree as it is, uncommitted changes included).
Only the code under test differs: each arm's tree comes first on its roles'
import path (the entry module and any package of the repository), the base
arm's roles may run under another interpreter (``base_python``), and the
harness (this plugin, the perf tests, settings, tricks, the workload spec) is
head's for both.

Driver-side, plain Python (git through subprocess). :class:`Worktree` owns the
checkout and removes it (also at the next session, should this one be
killed before it could).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Sequence

from ..remote.environ import TREE
from ..vcs.git import GitState, git_state, git_toplevel, revision_of, run_git

__all__ = ["Arm", "ArmError", "BaseSource", "arm_import_paths", "resolve_base", "same_code"]

BASE, HEAD = "base", "head"


class ArmError(ValueError):
    """A base or base interpreter cannot be used; the message says which, where from, and what is accepted."""


@dataclass(frozen=True)
class BaseSource:
    """What ``base`` named: a revision of the repository (checked out later) or a directory."""

    value: str
    origin: str
    repository: str  # the git work tree that holds the tests (for a revision), or the directory
    commit: "str | None"
    is_revision: bool
    dirty: bool = False

    def describe(self) -> str:
        if self.is_revision:
            return f"{self.value} = {self.commit[:12] if self.commit else '?'}"
        state = f" at {self.commit[:12]}{' + uncommitted changes' if self.dirty else ''}" if self.commit else ""
        return f"directory {self.repository}{state}"


def resolve_base(value: str, origin: str, rootdir: str, setting: str = BASE) -> BaseSource:
    """``base`` as a directory (when one exists there) or a git revision of the repository of ``rootdir``.

    ``setting`` names the setting in messages: ``head`` (``--bpsperf-head``) is resolved alike.
    Raises :class:`ArmError` for a value that is neither, naming it and where it came from.
    """
    text = value.strip()
    as_dir = os.path.abspath(os.path.expanduser(text))
    if os.path.isdir(as_dir):
        # a name that is both a directory and a revision (./master beside the branch master) is
        # ambiguous: measuring the wrong one would pass or fail a change on code it does not hold
        other = None if _path_like(text) else revision_of(text, rootdir)
        if other is not None:
            raise ArmError(
                f"ambiguous value {text!r} for setting 'base' from {origin}: it names the directory "
                f"{os.path.realpath(as_dir)} and the revision {text} = {other[:12]} of {git_toplevel(rootdir)}; "
                f"write ./{text} (or its absolute path) for the directory, or the revision's full name "
                f"(refs/heads/{text}, refs/remotes/{text}) or its commit {other[:12]}"
            )
        state = git_state(as_dir) if git_toplevel(as_dir) == os.path.realpath(as_dir) else GitState(None)
        return BaseSource(text, origin, os.path.realpath(as_dir), state.commit, False, state.dirty)
    top = git_toplevel(rootdir)
    if top is None:
        raise ArmError(
            f"invalid value {text!r} for setting {setting!r} from {origin}: not a directory, and "
            f"{rootdir} is in no git repository, so it cannot be a revision; accepted: a git revision of the "
            "repository that holds the tests (origin/main, HEAD~1, a commit) or a directory holding "
            f"the {setting}'s code"
        )
    if text.startswith("-"):
        raise ArmError(
            f"invalid value {text!r} for setting {setting!r} from {origin}: a revision cannot start with '-'"
        )
    try:
        proc = run_git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{text}^{{commit}}"], top, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ArmError(f"setting {setting!r} ({text!r}, from {origin}): git could not be run: {exc}") from None
    sha = proc.stdout.strip()
    if proc.returncode != 0 or not sha:
        raise ArmError(
            f"invalid value {text!r} for setting {setting!r} from {origin}: neither a directory nor a "
            f"revision of the git repository {top} (git rev-parse found no commit); accepted: a branch, "
            "tag or commit (origin/main, HEAD~1, the merge base of the pull request) or the path of "
            f"a directory holding the {setting}'s code"
        )
    return BaseSource(text, origin, top, sha, True)


def _path_like(text: str) -> bool:
    """Whether ``text`` is written as a path (``/x``, ``./x``, ``../x``, ``~/x``, ``.``): never a revision."""
    return text in (".", "..") or text.startswith(("/", "./", "../", "~"))


def arm_import_paths(tree: str, head_tree: str, search: Sequence[str]) -> "tuple[str, ...]":
    """The import path entries of an arm, relative to its tree (``TREE``-prefixed placeholders).

    The tree itself first, then the tree's counterpart of every entry of
    ``search`` (the driver's ``sys.path`` and the entry point's directory)
    that lies inside the head's tree (an editable install's ``src/``, a
    subdirectory rootdir), then ``src`` when the tree has one. So the same
    rule gives both arms their paths, each into its own tree.
    """
    head = os.path.realpath(head_tree)
    rels: "list[str]" = ["."]
    for entry in search:
        if not entry or not os.path.isabs(entry) or not os.path.isdir(entry):
            continue  # '' (the current directory) and path hooks are no places in the tree
        real = os.path.realpath(entry)
        if real == head or real.startswith(head + os.sep):
            rels.append(os.path.relpath(real, head))
    if os.path.isdir(os.path.join(tree, "src")):
        rels.append("src")
    out: "list[str]" = []
    for rel in rels:
        placeholder = TREE if rel == "." else f"{TREE}/{rel.replace(os.sep, '/')}"
        if placeholder not in out:
            out.append(placeholder)
    return tuple(out)


@dataclass(frozen=True)
class Arm:
    """One arm of a pair: its name, the root of its code, the interpreter of its roles, what it is at.

    ``tree`` is the checkout root on the driver (the worktree, the directory,
    or the head's work tree); ``paths`` the import path entries its roles put
    first (``TREE`` placeholders, see :func:`arm_import_paths`); ``entry_path``
    the entry point's directory inside the tree (``TREE``-relative, or None);
    ``python`` the interpreter of its roles (None: the nodes' own, as without
    a base).
    """

    name: str
    tree: str
    paths: "tuple[str, ...]"
    python: "str | None" = None
    commit: "str | None" = None
    dirty: bool = False
    ref: str = ""  # what the user named (base) or "working tree" (head)
    entry_path: "str | None" = None
    #: interpreter facts from the preflight: versions of the packages the roles use, executable
    facts: "dict" = field(default_factory=dict, compare=False, hash=False)

    def expand(self, text: str, tree: "str | None" = None) -> str:
        """``text`` with the ``TREE`` placeholder replaced by ``tree`` (default: this arm's local tree)."""
        return text.replace(TREE, tree if tree is not None else self.tree)

    @property
    def interpreter(self) -> str:
        """The interpreter that runs this arm's roles, in words."""
        return self.python or f"{sys.executable} (the nodes' own)"

    def describe(self) -> str:
        """``base: origin/main = 1a2b3c4d5e6f; python /venv/bin/python`` (what the report header says)."""
        if self.commit:
            state = self.commit[:12] + (" + uncommitted changes (measured as they are)" if self.dirty else "")
        else:
            state = f"{self.tree} (no git commit)"
        where = (f"{self.ref} = {state}" if self.name == BASE else f"{self.ref} at {state}") if self.ref else state
        python = self.python or "the nodes' own (as without a base)"
        return f"{self.name}: {where}; python {python}"

    def as_dict(self) -> dict:
        """JSON view (the results' ``arms``)."""
        return {
            "name": self.name,
            "tree": self.tree,
            "ref": self.ref,
            "commit": self.commit,
            "dirty": self.dirty,
            "python": self.python,
            "paths": list(self.paths),
            "versions": dict(self.facts.get("versions", {})),
            "executable": self.facts.get("executable"),
        }


def same_code(base: Arm, head: Arm) -> bool:
    """Whether both arms resolve to the same commit (head clean) and the same interpreter: an A/A run."""
    if base.commit is None or base.commit != head.commit or base.dirty or head.dirty:
        return False
    # A venv's interpreter is a link to the same binary as another's: its path, not its target, is the venv.
    b = os.path.abspath(base.python or sys.executable)
    h = os.path.abspath(head.python or sys.executable)
    return b == h
