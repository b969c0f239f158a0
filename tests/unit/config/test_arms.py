"""``config/arms.py`` without a session: a base outside any repository, the arms' import paths.

Sessions, worktrees and verdicts of base against head are in ``tests/pytester/test_pair_gate.py``.
"""

from __future__ import annotations

import pytest

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
