"""``vcs/worktrees.py``: a detached worktree outside the checkout, removed after, and the stale ones of
killed sessions removed by the next (real git repositories; no pytest session).

The sessions that check worktrees out and remove them (Ctrl-C, SIGTERM, a closed terminal) are in
``tests/pytester/test_pair_gate.py`` and ``tests/pytester/test_head_arm.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys

from helpers.repos import git, worktrees
from pytest_bpsperf.vcs.worktrees import Worktree, remove_stale_worktrees


def test_worktree_is_detached_outside_the_checkout_and_removed_without_a_trace(git_repo):
    repo = str(git_repo.path)
    sha = git(repo, "rev-parse", "HEAD~1")
    tree = Worktree(repo, sha)
    path = tree.create()
    assert not path.startswith(repo) and os.path.isdir(path)
    assert git(path, "rev-parse", "HEAD") == sha and git(path, "rev-parse", "--abbrev-ref", "HEAD") == "HEAD"
    assert len(worktrees(repo)) == 2
    tree.remove()
    tree.remove()  # idempotent
    assert worktrees(repo) == [os.path.realpath(repo)] and not os.path.exists(path)
    assert git(repo, "status", "--porcelain") == ""


def test_a_killed_sessions_worktree_is_removed_by_the_next_one(git_repo):
    repo = str(git_repo.path)
    # a worktree whose owner process is gone (a session killed before its teardown)
    code = (
        "import os; from pytest_bpsperf.vcs.worktrees import Worktree; "
        f"print(Worktree({repo!r}, {git(repo, 'rev-parse', 'HEAD')!r}).create(), flush=True); "
        "os._exit(0)"
    )  # as a SIGKILL would: no teardown, no atexit
    path = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert os.path.isdir(path) and len(worktrees(repo)) == 2
    # a live session's worktree is left alone
    mine = Worktree(repo, git(repo, "rev-parse", "HEAD"))
    mine.create()
    try:
        assert path in remove_stale_worktrees(repo)
        assert not os.path.exists(os.path.dirname(path)) and os.path.isdir(mine.path)
        assert len(worktrees(repo)) == 2
    finally:
        mine.remove()


def test_a_worktree_left_by_an_exit_that_skips_unconfigure_goes_with_the_interpreter(git_repo):
    repo = str(git_repo.path)
    # create and exit without removing it (as when pytest cannot reach its unconfigure)
    code = (
        "from pytest_bpsperf.vcs.worktrees import Worktree; import os; "
        f"w = Worktree({repo!r}, {git(repo, 'rev-parse', 'HEAD')!r}); print(w.create(), flush=True)"
    )
    path = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert not os.path.exists(path)
    assert worktrees(repo) == [os.path.realpath(repo)]


def test_a_killed_sessions_head_worktree_is_removed_by_the_next_one(git_repo):
    repo = str(git_repo.path)
    code = (
        "import os; from pytest_bpsperf.vcs.worktrees import Worktree; "
        f"print(Worktree({repo!r}, {git_repo.shas[1]!r}, arm='head').create(), flush=True); os._exit(0)"
    )
    path = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert "bpsperf-head-" in path and len(worktrees(repo)) == 2
    assert path in remove_stale_worktrees(repo)
    assert worktrees(repo) == [os.path.realpath(repo)] and not os.path.exists(os.path.dirname(path))
    mine = Worktree(repo, git_repo.shas[0], arm="head")
    assert "bpsperf-head-" in mine.create()
    mine.remove()


def test_a_commit_git_cannot_check_out_is_an_error_naming_it_and_leaves_nothing(git_repo, tmp_path, monkeypatch):
    import tempfile

    import pytest

    from pytest_bpsperf.vcs.worktrees import WorktreeError

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where the worktree's directory would be made
    with pytest.raises(WorktreeError) as excinfo:
        Worktree(str(git_repo.path), "0" * 40).create()
    assert f"git worktree add of {'0' * 12} in {git_repo.path} failed" in str(excinfo.value)
    assert list(scratch.iterdir()) == []
    assert worktrees(git_repo.path) == [os.path.realpath(git_repo.path)]
