"""``judge/bisect.py``: the bisect's rules without sessions: what it asks next and how it ends.

How ``bpsperf bisect`` reads a step's session is in ``tests/unit/cli/test_bisect.py``, the range in git
in ``tests/unit/vcs/test_revisions.py``. A bisect of real sessions (fed runs over a real git history) is
in ``tests/pytester/test_bisect.py``, one of real distributed runs in ``tests/e2e/test_e2e_bisect.py``.
"""

from __future__ import annotations

import pytest

from pytest_bpsperf.judge.bisect import CULPRIT, ERROR, NONE, RANGE, Bisection, Outcome, exit_status


def drive(n, speed, *, broken=(), undecided=(), retries=1):
    """Bisect positions 0..n where ``speed[k]`` is commit k's throughput (a step of it below 0.85 of another
    is a regression); ``broken`` commits fail as head; ``undecided`` (base, head) pairs stay inconclusive."""
    b = Bisection(n, retries=retries)
    asked = []
    while (c := b.next()) is not None:
        asked.append((c.base, c.head, c.why, c.attempt))
        if c.head in broken:
            outcome = Outcome("failed", reason="ImportError", broken="head")
        elif (c.base, c.head) in undecided:
            outcome = Outcome("inconclusive", ratio=0.9, pairs=12)
        else:
            ratio = speed[c.head] / speed[c.base]
            outcome = Outcome("regression" if ratio < 0.85 else "ok", ratio=ratio, pairs=3)
        b.record(c, outcome)
    return b, asked


def test_one_slower_commit_is_found_in_about_log2_steps_each_resting_on_a_decided_regression():
    speed = [1.0] * 5 + [0.75] * 12  # commit 5 of 16 is 25% slower
    b, asked = drive(16, speed)
    assert b.result.kind == CULPRIT and b.result.culprit == 5 and b.result.lo == 4
    assert b.result.verdict.ratio == pytest.approx(0.75)  # its own comparison against its parent
    assert asked[0] == (0, 16, "ends", 1)
    assert b.midpoints == 4 and len(asked) <= 1 + 2 * 4
    for base, head, _why, _attempt in asked[1:]:  # a midpoint compared with one end of the range
        assert base < head
    assert exit_status(b.result.kind) == 0


def test_the_first_of_two_drops_is_the_culprit_and_the_second_is_found_from_it():
    speed = [1.0] * 4 + [0.7] * 6 + [0.5] * 7  # commit 4 (communication) and commit 10 (compute)
    b, _ = drive(16, speed)
    assert b.result.culprit == 4
    speed_after = speed[4:]
    b, _ = drive(12, speed_after)
    assert b.result.culprit + 4 == 10


def test_no_drop_at_the_ends_is_exit_1_after_one_comparison():
    b, asked = drive(8, [1.0] * 9)
    assert b.result.kind == NONE and len(asked) == 1 and exit_status(NONE) == 1


def test_a_broken_midpoint_is_skipped_for_the_nearest_other_commit():
    speed = [1.0] * 6 + [0.7] * 3  # culprit 6 of 8; commit 4 does not import
    b, asked = drive(8, speed, broken={4})
    assert b.result.kind == CULPRIT and b.result.culprit == 6 and 4 in b.skipped
    heads = [h for _b, h, why, _a in asked if why == "lower half"]
    assert heads[:2] == [4, 3]  # after 4 failed, the commit nearest the middle that is left


def test_a_culprit_next_to_skipped_commits_is_a_range_not_a_guess():
    speed = [1.0] * 4 + [0.7] * 5  # culprit 4; 3 does not run
    b, _ = drive(8, speed, broken={3})
    assert b.result.kind == RANGE and (b.result.lo, b.result.hi) == (2, 4) and b.result.skipped == (3,)
    assert "skipped" in b.result.reason and exit_status(RANGE) == 4


def test_an_inconclusive_step_is_asked_again_with_more_pairs_then_reported_as_a_range():
    speed = [1.0] * 3 + [0.7] * 6
    b, asked = drive(8, speed, undecided={(0, 4)})
    assert [(a[0], a[1], a[3]) for a in asked if a[:2] == (0, 4)] == [(0, 4, 1), (0, 4, 2)]
    assert b.result.kind == RANGE and (b.result.lo, b.result.hi) == (0, 8)
    b, asked = drive(8, speed, undecided={(0, 4)}, retries=0)
    assert [a for a in asked if a[:2] == (0, 4)] == [(0, 4, "lower half", 1)]


def test_a_drop_spread_over_two_commits_none_beyond_the_tolerance_alone_is_a_range():
    speed = [1.0] * 3 + [0.9] * 3 + [0.81] * 3  # 10% at commit 3 and at commit 6: 19% at the ends
    b, _ = drive(8, speed)
    assert b.result.kind == RANGE and "spread" in b.result.reason


def test_ends_that_cannot_be_compared_are_an_error():
    b, _ = drive(4, [1.0] * 5, broken={4})
    assert b.result.kind == ERROR and exit_status(ERROR) == 2


def test_only_the_comparison_asked_for_is_taken():
    b = Bisection(4)
    with pytest.raises(ValueError, match="is not the comparison asked for"):
        from pytest_bpsperf.judge.bisect import Comparison

        b.record(Comparison(0, 2, "lower half"), Outcome("ok"))
    with pytest.raises(ValueError, match="at least one commit"):
        Bisection(0)
