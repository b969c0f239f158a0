"""The GitHub Actions recipe under examples/ uses only options and commands that exist (``pytest --help``).

The workflows' structure, actionlint on them and the steps' scripts that start no session are in
``tests/unit/project/test_ci_recipe.py``.
"""

from __future__ import annotations

import re

import pytest

from helpers.workflows import GATES, WORKFLOWS, all_runs, bash, load, pr_step

yaml = pytest.importorskip("yaml")  # PyYAML comes with Ray


def test_every_option_and_command_used_exists(pytester):
    used = set()
    for path in WORKFLOWS:
        used |= set(re.findall(r"--bpsperf-[a-z-]+", path.read_text()))
    result = pytester.runpytest("--help")
    help_text = result.stdout.str()
    assert sorted(o for o in used if o not in help_text) == []

    from pytest_bpsperf.cli import _parser

    runs = "\n".join(all_runs(load(p)) for p in GATES)
    # a folded command (>-) continues on the lines that start with an option
    from pytest_bpsperf.cli import split_pytest_args

    for command in re.findall(r"bin/bpsperf ([^\n]*(?:\n *--[^\n]*)*)", runs):
        args, _pytest_args = split_pytest_args(command.replace('"', "").replace("\\\n", " ").split())
        _parser().parse_args(args)  # exits (fails the test) on an unknown command or option


def test_the_pull_request_job_fails_on_results_without_a_base_vs_head_session(results, tmp_path):
    script = pr_step("Base vs head, offline, from the results")
    # the stored-baseline gate's results (a session that ran without --bpsperf-base)
    proc = bash(script, results.parent, OUT=".")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "holds no base-vs-head session" in proc.stderr
    # and when the session wrote no results at all
    missing = bash(script, tmp_path, OUT=str(tmp_path))
    assert missing.returncode == 2 and "does not exist" in missing.stderr
