"""Base-vs-head building blocks without a session: the pair order, a base outside any repository, import paths.

Sessions, worktrees and verdicts of base against head are in ``tests/pytester/test_pairs.py``.
"""

from __future__ import annotations

import pytest

from pytest_bpsperf.config.arms import Arm, ArmError, arm_import_paths, resolve_base, same_code
from pytest_bpsperf.judge.pairs import first_arm


def test_pair_order_alternates_from_a_seeded_start():
    for seed in range(20):
        orders = [first_arm(seed, "k", i) for i in range(6)]
        assert orders[0::2] == [orders[0]] * 3 and orders[1::2] == [orders[1]] * 3 and orders[0] != orders[1]
    # the start depends on the seed (and the job), so both starts occur
    assert {first_arm(seed, "k", 0) for seed in range(20)} == {"base", "head"}
    assert first_arm(7, "k", 0) == first_arm(7, "k", 0)


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
