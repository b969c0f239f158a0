"""What produced a measurement: the working tree's state with its commit, and what changed since a baseline."""

from __future__ import annotations

import subprocess

import pytest

from pytest_bpsperf.judge.verdict import VerdictSettings, decide_job, software_changes
from pytest_bpsperf.remote.provenance import current_commit, working_tree_dirty
from pytest_bpsperf.store.entries import make_session


def git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path):
    git(tmp_path, "init", "-q")
    git(tmp_path, "config", "user.email", "t@example.invalid")
    git(tmp_path, "config", "user.name", "t")
    (tmp_path / "bench.py").write_text("x = 1\n")
    git(tmp_path, "add", "bench.py")
    git(tmp_path, "commit", "-q", "-m", "one")
    return tmp_path


def test_a_changed_tracked_file_makes_the_tree_dirty_and_an_untracked_one_does_not(repo, tmp_path_factory):
    assert current_commit(repo) and working_tree_dirty(repo) is False
    (repo / "notes.txt").write_text("untracked\n")
    assert working_tree_dirty(repo) is False
    (repo / "bench.py").write_text("x = 2\n")
    assert working_tree_dirty(repo) is True
    assert working_tree_dirty(tmp_path_factory.mktemp("not-a-repo")) is None


def test_a_session_keeps_the_dirty_flag_only_when_known():
    assert make_session(samples=[1.0], commit="a" * 40, date="d", versions={}, dirty=True)["dirty"] is True
    assert "dirty" not in make_session(samples=[1.0], commit=None, date="d", versions={})


BASELINE = {"sessions": [
    {"samples": [10.0, 10.1], "date": "2026-11-01T00:00:00Z", "host": "old-box",
     "versions": {"mxnet": "1.9.0", "byteps": "0.2.5", "gluoncv": "0.10.5", "ray": "2.49.0", "python": "3.11.7"}},
    {"samples": [10.0, 10.2], "date": "2026-11-02T00:00:00Z", "host": "old-box",
     "versions": {"mxnet": "1.9.1", "byteps": "0.2.5", "gluoncv": "0.10.5", "ray": "2.49.0", "python": "3.11.7"}},
]}


def test_software_changes_compare_the_latest_recorded_session_with_today():
    now = {"versions": {"mxnet": "1.9.1", "byteps": "not installed", "gluoncv": "0.10.5", "ray": "2.60.0",
                        "python": "3.11.7"}, "host": "new-box"}
    assert software_changes(BASELINE, now) == ("byteps 0.2.5 -> not installed", "ray 2.49.0 -> 2.60.0",
                                               "host old-box -> new-box")
    # what one side does not record says nothing
    assert software_changes(BASELINE, {"versions": {"ray": "2.49.0"}}) == ()
    assert software_changes(None, now) == () and software_changes(BASELINE, None) == ()


def test_the_verdict_says_what_changed_since_the_baseline():
    settings = VerdictSettings(tolerance=0.15, confidence=0.99, session_spread=0.05, normalize="off", repeats=3,
                               max_pairs=12)
    common = dict(nodeid="t.py::t[default]", test="t.py::t", trick="default", profile_id="p", key="k",
                  samples=[10.0, 10.1, 9.9], baseline=BASELINE, settings=settings)
    verdict = decide_job(**common, now={"versions": {"mxnet": "1.9.2"}, "host": "old-box"})
    assert verdict.changed == ("mxnet 1.9.1 -> 1.9.2",)
    assert verdict.figures().endswith("; since the baseline was recorded: mxnet 1.9.1 -> 1.9.2")
    assert verdict.as_dict()["changed_since_baseline"] == ["mxnet 1.9.1 -> 1.9.2"]
    same = decide_job(**common, now={"versions": {"mxnet": "1.9.1"}, "host": "old-box"})
    assert same.changed == () and "since the baseline" not in same.figures()
