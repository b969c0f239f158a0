"""``bpsperf bisect`` over a real git history, each step a real pytest session whose runs are fed.

The project (:mod:`helpers.history`) is a real git repository; every commit's
``speed.json`` says what a step of its code costs, and the fed run reads it
from the tree of the arm it measures, so each session checks both arms out as
worktrees and decides with the paired gate exactly as for a pull request. Only
the runs are fed. The rules alone are in ``tests/unit/judge/test_bisect.py``; a
bisect of real distributed runs is in ``tests/e2e/test_e2e_bisect.py``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import matplotlib.figure  # noqa: F401 - imported once here, not again inside each pytester run
import pytest

from helpers.history import SESSION_ARGS, git, make_history
from helpers.procs import ctrl_c_as_in_a_terminal, wait_until
from pytest_bpsperf.cli import main

#: A communication regression (3x the push/pull wait) and, later, a compute regression (1.5x the compute).
COMM = {"sync_s": 0.15}
COMPUTE = {"compute_s": 0.3}
#: An entry module that imports, and one that does not (what the preflight of each arm checks).
BENCH_OK = {"bench.py": "def build(ctx):\n    return lambda: None\n"}
BENCH_BROKEN = {"bench.py": "def build(ctx:\n"}


def bisect(project, *args, pytest_args=SESSION_ARGS):
    return main(["bisect", *args, "-C", str(project.path), "--out", str(project.path / "out"), "--", *pytest_args])


def report(project) -> dict:
    return json.loads((project.path / "out" / "bisect.json").read_text())


def worktrees(project) -> list:
    return [
        line
        for line in git(project.path, "worktree", "list", "--porcelain").splitlines()
        if line.startswith("worktree ")
    ]


def test_each_culprit_is_named_with_its_ratio_against_its_parent_and_the_part_that_grew(ourtester, capsys):
    history = [
        {"subject": "good"},
        {},
        {"subject": "a larger layer", **COMM},
        COMM,
        COMM,
        {"subject": "extra compute", **COMM, **COMPUTE},
        {**COMM, **COMPUTE},
        {**COMM, **COMPUTE},
    ]
    shas = make_history(ourtester.path, history)
    assert bisect(ourtester, shas[0], "HEAD") == 0
    out = capsys.readouterr().out
    assert "7 commit(s) along BAD's first parents, about 3 step(s) after the ends" in out
    assert "step 0 (the ends, BAD against GOOD): " in out and "step 1 of about 3 (lower half): " in out
    assert out.count(" so far") == len(report(ourtester)["steps"])
    doc = report(ourtester)
    result = doc["result"]
    assert result["kind"] == "culprit" and result["exit_status"] == 0
    assert result["culprit"]["sha"] == shas[2] and result["lo"] == shas[1]
    assert result["culprit"]["subject"] == "a larger layer"
    # its own comparison against its parent: a regression of about 1 - 0.25/0.35
    v = result["verdict"]
    assert v["status"] == "regression" and v["ratio"] == pytest.approx(0.25 / 0.35, rel=0.05)
    assert v["ci_low"] < 0.90 and v["ci_low"] < v["ratio"] < v["ci_high"] < 1.0  # the gate's rule
    assert v["breakdown"]["grew_most"]["label"] == "push/pull wait"
    assert "push/pull wait +200% (push/pull wait grew most" in v["where"]
    assert f'culprit: {shas[2][:12]} "a larger layer"' in out and "where the time went: head" in out
    # every step: its verdict and pairs, from a session of its own; the totals
    assert all(
        s["status"] in ("regression", "ok") and s["pairs"] >= 3 and os.path.isfile(s["results"]) for s in doc["steps"]
    )
    assert doc["pairs"] == sum(s["pairs"] for s in doc["steps"]) and doc["total_s"] > 0
    assert doc["tolerance"] == 0.10 and doc["first_parent"] is True  # the default
    md = (ourtester.path / "out" / "bisect.md").read_text()
    assert f'**Culprit**: `{shas[2]}` "a larger layer", against its parent `{shas[1][:12]}`' in md
    assert "| step | half | base | head | verdict | head/base | interval | pairs | time |" in md
    assert "![head/base img/s per tested commit](bisect.png)" in md
    assert (ourtester.path / "out" / "bisect.png").stat().st_size > 0
    assert len(worktrees(ourtester)) == 1  # every session removed both arms' worktrees

    # from the first culprit on, the second: compute grew
    assert bisect(ourtester, shas[2], "HEAD") == 0
    result = report(ourtester)["result"]
    assert result["culprit"]["sha"] == shas[5]
    assert result["verdict"]["breakdown"]["grew_most"]["label"] == "compute"
    assert result["verdict"]["where"].startswith("head ") and "compute +50%" in result["verdict"]["where"]


def test_a_commit_that_does_not_import_is_skipped_as_git_bisect_skip_does(ourtester, capsys):
    history = [
        {"files": BENCH_OK},
        {},
        {},
        {"subject": "broken import", "files": BENCH_BROKEN},
        {"subject": "fixed", "files": BENCH_OK},
        {"subject": "slower", **COMPUTE},
        COMPUTE,
        COMPUTE,
    ]
    shas = make_history(ourtester.path, history, ini="bpsperf_entry = bench:build\n")
    assert bisect(ourtester, shas[0], "HEAD") == 0
    doc = report(ourtester)
    assert doc["result"]["culprit"]["sha"] == shas[5]
    skipped = [s for s in doc["steps"] if s["status"] == "failed"]
    assert [s["head"] for s in skipped] == [shas[3]] and skipped[0]["broken"] == "head"
    assert "does not import" in skipped[0]["reason"]
    assert [c["sha"] for c in doc["commits"] if c["skipped"]] == [shas[3]]
    assert f"skipped {shas[3][:12]}" in capsys.readouterr().out


def test_a_culprit_next_to_a_commit_that_does_not_run_is_reported_as_a_range(ourtester):
    history = [
        {},
        {},
        {},
        {"subject": "does not run", "broken": True},
        {"subject": "slower", **COMPUTE},
        COMPUTE,
        COMPUTE,
    ]
    shas = make_history(ourtester.path, history)
    assert bisect(ourtester, shas[0], "HEAD") == 4
    result = report(ourtester)["result"]
    assert result["kind"] == "range" and result["exit_status"] == 4
    assert result["range"] == shas[3:5] and result["skipped"] == [shas[3]] and result["lo"] == shas[2]
    md = (ourtester.path / "out" / "bisect.md").read_text()
    assert "## bpsperf bisect: not narrowed to one commit" in md and "(skipped: it does not import or run)" in md
    assert len(worktrees(ourtester)) == 1


def test_no_drop_at_the_ends_is_exit_1_after_one_session(ourtester):
    shas = make_history(ourtester.path, [{}, {}, {}])
    assert bisect(ourtester, shas[0], "HEAD") == 1
    doc = report(ourtester)
    assert doc["result"]["kind"] == "none" and len(doc["steps"]) == 1 and doc["steps"][0]["status"] == "ok"


def test_a_merge_on_the_first_parent_line_is_one_step_and_can_be_the_culprit(ourtester):
    shas = make_history(ourtester.path, [{}, {}])
    git(ourtester.path, "checkout", "-q", "-b", "topic")
    (ourtester.path / "speed.json").write_text(json.dumps({"compute_s": 0.3, "sync_s": 0.05}) + "\n")
    git(ourtester.path, "commit", "-q", "-am", "slower on a branch")
    git(ourtester.path, "checkout", "-q", "main")
    git(ourtester.path, "commit", "-q", "--allow-empty", "-m", "meanwhile on main")
    git(ourtester.path, "merge", "-q", "--no-ff", "-m", "merge topic", "topic")
    assert bisect(ourtester, shas[1], "HEAD") == 0
    culprit = report(ourtester)["result"]["culprit"]
    assert culprit["subject"] == "merge topic" and culprit["merge"] is True


@pytest.mark.parametrize(
    "good, bad, message",
    [
        ("no-such", "HEAD", "invalid GOOD 'no-such': not a revision of the git repository"),
        ("HEAD", "HEAD~1", "is not an ancestor of BAD 'HEAD~1'"),
    ],
)
def test_a_bad_range_is_a_usage_error_before_any_session(ourtester, capsys, good, bad, message):
    make_history(ourtester.path, [{}, {}])
    assert bisect(ourtester, good, bad) == 2
    assert message in capsys.readouterr().err and not (ourtester.path / "out").exists()


def test_pytest_arguments_that_cannot_run_are_a_usage_error_naming_the_reason(ourtester):
    shas = make_history(ourtester.path, [{}, {}])
    assert bisect(ourtester, shas[0], "HEAD", pytest_args=(*SESSION_ARGS, "--bpsperf-tolerance=lots")) == 2
    result = report(ourtester)["result"]
    assert result["kind"] == "error" and "invalid value 'lots' for setting 'tolerance'" in result["reason"]


def test_ctrl_c_ends_the_running_session_first_and_leaves_no_worktree(ourtester, tmp_path):
    shas = make_history(ourtester.path, [{}, COMPUTE])
    marker = tmp_path / "started"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_bpsperf.cli", "bisect", shas[0], "HEAD", "--out", "out", "--", *SESSION_ARGS],
        cwd=ourtester.path,
        env={**os.environ, "FAKE_SLEEP": str(marker)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=ctrl_c_as_in_a_terminal,
    )
    try:
        assert wait_until(marker.exists, timeout=60), "the session never started a run"
        os.killpg(proc.pid, signal.SIGINT)  # as Ctrl-C does: the bisect and its session
        _out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130 and "bpsperf bisect: interrupted" in err
    # the session tore itself down before the bisect ended: both arms' worktrees are gone
    assert len(worktrees(ourtester)) == 1
    logs = list((ourtester.path / "out" / "sessions").glob("*.log"))
    assert len(logs) == 1 and "KeyboardInterrupt" in logs[0].read_text()
