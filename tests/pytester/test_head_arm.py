"""Any two commits as the arms: ``--bpsperf-head=REV|DIR`` beside ``--bpsperf-base``.

The project is a real git history (:mod:`helpers.history`) whose commits each
say how fast their code is; the fed run reads that from the tree of the arm it
measures, so these sessions show which tree each arm really was: a worktree of
head's revision (not the working tree), or head's directory. The harness (the
conftest, the perf test, the settings) stays the working tree's.
"""

from __future__ import annotations

import json
import os

import pytest

from helpers.history import SESSION_ARGS, make_history
from helpers.repos import worktrees

SLOW = {"compute_s": 0.4}


def run(project, *args):
    return project.runpytest(*SESSION_ARGS, *args)


@pytest.fixture
def project(ourtester):
    """Three commits: fast, slow (the middle one), fast again (the working tree is the last)."""
    ourtester.shas = make_history(ourtester.path, [{}, {"subject": "slow", **SLOW}, {"subject": "fast again"}])
    return ourtester


def test_head_as_a_revision_is_a_worktree_of_it_not_the_working_tree(project):
    shas = project.shas
    result = run(project, "--bpsperf-base=HEAD~2", "--bpsperf-head=HEAD~1", "--bpsperf-json=r.json")
    result.assert_outcomes(failed=1)  # the slow commit, though the working tree is fast
    result.stdout.fnmatch_lines(
        [
            f"*REGRESSION: head * img/s vs base * (medians of * pairs, base HEAD~2 = {shas[0][:12]})*",
            f"base: HEAD~2 = {shas[0][:12]}; python *",
            f"head: HEAD~1 at {shas[1][:12]}; python *",
        ]
    )
    result.stdout.fnmatch_lines(["bpsperf gate: *base HEAD~2, head HEAD~1*"])
    doc = json.loads((project.path / "r.json").read_text())
    head = doc["base_vs_head"]["arms"]["head"]
    assert head["commit"] == shas[1] and head["ref"] == "HEAD~1" and head["dirty"] is False
    trees = {t["arm"] for t in doc["tests"]}
    assert trees == {"base", "head"} and "bpsperf-head-" in head["tree"] and not os.path.exists(head["tree"])
    assert worktrees(project.path) == [os.path.realpath(project.path)]  # both worktrees gone


def test_the_same_revision_as_both_arms_is_an_aa_run(project):
    result = run(project, "--bpsperf-base=HEAD~1", "--bpsperf-head=HEAD~1")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["A/A run: both arms are the same commit and interpreter*"])


def test_head_as_a_directory(project, tmp_path):
    other = tmp_path / "head-code"
    other.mkdir()
    (other / "speed.json").write_text(json.dumps({"compute_s": 0.4, "sync_s": 0.05}))
    result = run(project, "--bpsperf-base=HEAD", f"--bpsperf-head={other}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"head: directory at {other} (no git commit); python *"])


@pytest.mark.parametrize(
    "args, env, message",
    [
        (
            ("--bpsperf-base=HEAD", "--bpsperf-head=nope"),
            {},
            "invalid value 'nope' for setting 'head' from command "
            "line option --bpsperf-head: neither a directory nor a "
            "revision",
        ),
        (
            ("--bpsperf-base=HEAD", "--bpsperf-head="),
            {},
            "invalid value '' for setting 'head' from command line option --bpsperf-head: the head is empty",
        ),
        (
            ("--bpsperf-base=HEAD",),
            {"BPSPERF_HEAD": ""},
            "invalid value '' for setting 'head' from environment variable BPSPERF_HEAD: the head is empty",
        ),
        (
            ("--bpsperf-head=HEAD~1",),
            {},
            "setting 'head' (HEAD~1, from command line option --bpsperf-head) needs setting 'base'",
        ),
    ],
)
def test_a_bad_head_is_a_usage_error_naming_value_and_origin(project, monkeypatch, args, env, message):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    result = run(project, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
    assert worktrees(project.path) == [os.path.realpath(project.path)]
