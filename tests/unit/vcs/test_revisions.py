"""``vcs/revisions.py``: the commits a bisect walks (first parents of BAD back to GOOD) and a range's errors."""

from __future__ import annotations

import pytest

from helpers.repos import git, init
from pytest_bpsperf.vcs.revisions import RangeError, commit_range


@pytest.fixture
def repo(tmp_path):
    """main: c0 c1, a branch b1 b2 from c1 merged into main as m, then c3."""
    init(tmp_path)
    for name in ("c0", "c1"):
        git(tmp_path, "commit", "-q", "--allow-empty", "-m", name)
    git(tmp_path, "checkout", "-q", "-b", "topic")
    for name in ("b1", "b2"):
        git(tmp_path, "commit", "-q", "--allow-empty", "-m", name)
    git(tmp_path, "checkout", "-q", "main")
    git(tmp_path, "merge", "-q", "--no-ff", "-m", "merge topic", "topic")
    git(tmp_path, "commit", "-q", "--allow-empty", "-m", "c3")
    return tmp_path


def test_the_range_follows_the_first_parent_and_a_merge_is_one_step(repo):
    good, commits = commit_range(str(repo), "HEAD~2", "HEAD")
    assert good.subject == "c1" and [c.subject for c in commits] == ["merge topic", "c3"]
    assert [c.merge for c in commits] == [True, False]
    good, commits = commit_range(str(repo), "main~3", "main")
    assert good.subject == "c0" and len(commits) == 3


@pytest.mark.parametrize(
    "good, bad, message",
    [
        ("nope", "HEAD", "invalid GOOD 'nope': not a revision"),
        ("HEAD~1", "-x", "invalid BAD '-x'"),
        ("HEAD", "HEAD", "are the same commit"),
        ("HEAD", "HEAD~2", "is not an ancestor of BAD 'HEAD~2'"),
        ("topic~1", "main", "is not on BAD's first-parent line"),
    ],
)
def test_a_range_that_cannot_be_bisected_names_the_value(repo, good, bad, message):
    with pytest.raises(RangeError, match=message.replace("(", r"\(")):
        commit_range(str(repo), good, bad)
