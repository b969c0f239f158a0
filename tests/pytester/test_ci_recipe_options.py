"""The GitHub Actions recipe under examples/ uses only options and commands that exist (``pytest --help``).

The workflows' structure, and actionlint on them, are in ``tests/unit/test_ci_recipe.py``.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from helpers.workflows import GATES, WORKFLOWS, all_runs, load

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


def _step(name: str) -> str:
    """The ``run`` script of the pull-request job's step ``name``."""
    from helpers.workflows import PR, steps

    (step,) = [s for s in steps(load(PR), "base-vs-head") if s.get("name") == name]
    return step["run"]


def _bash(script: str, cwd, **env: str) -> "subprocess.CompletedProcess[str]":
    import os

    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    # GitHub runs a step's script as `bash -e {0}`; .venv/bin is where the workflow installed the plugin
    return subprocess.run(["bash", "-e", "-c", script.replace(".venv/bin/", "")], cwd=cwd, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PATH": path, **env})


def test_the_pull_request_job_fails_when_no_merge_base_is_found(tmp_path):
    import subprocess

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "only"], check=True)
    output = tmp_path / "github-output"
    proc = _bash(_step("Merge base of the pull request"), tmp_path, BASE_REF="main", GITHUB_OUTPUT=str(output))
    assert proc.returncode != 0  # no origin/main: the job stops here
    assert not output.exists() or "sha=\n" not in output.read_text()


def test_the_pull_request_job_fails_on_results_without_a_base_vs_head_session(results, tmp_path):
    script = _step("Base vs head, offline, from the results")
    # the stored-baseline gate's results (a session that ran without --bpsperf-base)
    proc = _bash(script, results.parent, OUT=".")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "holds no base-vs-head session" in proc.stderr
    # and when the session wrote no results at all
    missing = _bash(script, tmp_path, OUT=str(tmp_path))
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def _bisect_step(name: str) -> str:
    from helpers.workflows import BISECT, steps

    (step,) = [s for s in steps(load(BISECT), "bisect") if s.get("name") == name]
    return step["run"]


@pytest.mark.parametrize("regressed", [True, False], ids=["regression", "no-regression"])
def test_the_bisect_job_takes_good_from_the_last_passing_nightly_and_the_tests_that_regressed(tmp_path, regressed):
    import json
    import os
    import stat

    results = {"verdicts": [{"nodeid": "perf/test_a.py::test_a[default]", "status": "regression" if regressed
                             else "ok"}, {"nodeid": "perf/test_b.py::test_b[default]", "status": "ok"}]}
    (tmp_path / "results.json").write_text(json.dumps(results))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gh = bin_dir / "gh"  # what the GitHub CLI answers: the last passing run's commit, the failed run's artifact
    gh.write_text("#!/bin/sh\ncase \"$1 $2\" in\n  'run list') echo 1111111111111111111111111111111111111111 ;;\n"
                  f"  'run download') mkdir -p failed && cp {tmp_path / 'results.json'} failed/ ;;\nesac\n")
    gh.chmod(gh.stat().st_mode | stat.S_IEXEC)
    output = tmp_path / "github-output"
    script = _bisect_step("The range and the tests to bisect")
    proc = _bash(script, tmp_path, PATH=f"{bin_dir}{os.pathsep}{os.path.dirname(sys.executable)}{os.pathsep}"
                 f"{os.environ['PATH']}", GITHUB_OUTPUT=str(output), PROFILE="p", FAILED_RUN="7",
                 FAILED_SHA="2222222222222222222222222222222222222222", INPUT_GOOD="")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    values = dict(line.split("=", 1) for line in output.read_text().splitlines())
    if regressed:
        assert values == {"good": "1" * 40, "bad": "2" * 40, "tests": "perf/test_a.py::test_a[default]"}
    else:
        assert values == {"skip": "1"} and "nothing to bisect" in proc.stdout
