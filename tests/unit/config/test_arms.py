"""``config/arms.py`` without a session: a base outside any repository, the arms' import paths.

Worktrees are in ``tests/unit/vcs/test_worktrees.py``; sessions and verdicts of base against head in
``tests/pytester/test_pair_gate.py``.
"""

from __future__ import annotations

import pytest

from helpers.repos import git
from pytest_bpsperf.config.arms import Arm, ArmError, arm_import_paths, resolve_base, same_code


def test_a_directory_outside_any_repository_is_no_revision(tmp_path):
    (tmp_path / "proj").mkdir()
    with pytest.raises(ArmError, match="in no git repository"):
        resolve_base("main", "x", str(tmp_path / "proj"))


def test_import_paths_map_the_heads_places_into_each_tree(tmp_path):
    head, base = tmp_path / "head", tmp_path / "base"
    for root in (head, base):
        (root / "src").mkdir(parents=True)
        (root / "tests").mkdir()
    paths = arm_import_paths(str(base), str(head), [str(head / "tests"), "/usr/lib/python3", "", "hook-entry"])
    assert paths == ("{tree}", "{tree}/tests", "{tree}/src")
    a = Arm("base", str(base), paths, None, "c" * 40)
    b = Arm("head", str(head), paths, None, "c" * 40)
    assert same_code(a, b)
    assert not same_code(a, Arm("head", str(head), paths, None, "c" * 40, dirty=True))
    assert not same_code(Arm("base", str(base), paths, "/other/python", "c" * 40), b)


def test_resolve_base_names_a_bad_revision_and_where_it_came_from(git_repo):
    with pytest.raises(ArmError) as excinfo:
        resolve_base("no-such-branch", "command line option --bpsperf-base", str(git_repo.path))
    msg = str(excinfo.value)
    assert "'no-such-branch'" in msg and "--bpsperf-base" in msg and "origin/main, HEAD~1" in msg
    found = resolve_base("HEAD~1", "x", str(git_repo.path))
    assert found.is_revision and found.commit == git(git_repo.path, "rev-parse", "HEAD~1")
    found = resolve_base(str(git_repo.path), "x", str(git_repo.path))
    assert not found.is_revision and found.commit == git(git_repo.path, "rev-parse", "HEAD")
