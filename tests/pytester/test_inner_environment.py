"""Inner sessions see none of the developer's environment: no Ray job, no settings of the plugin, no git config.

``tests/conftest.py`` applies :mod:`helpers.isolation` to the test process, and
every inner session inherits it. The second test starts this suite as a
developer whose shell holds a Ray job's variables, ``BPSPERF_*`` settings,
GitHub's variables and a git that signs every commit (with a signing program
that always fails), and checks that the first still passes there.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from subprocess import PIPE

import pytest

from helpers.paths import ROOT

#: What a developer's shell may hold, and no inner session may see.
HOSTILE = {
    "RAY_ADDRESS": "10.0.0.1:6379",
    "RAY_JOB_ID": "02000000",
    "RAY_JOB_CONFIG_JSON_ENV_VAR": '{"runtime_env": {}, "metadata": {"job_submission_id": "raysubmit_X"}}',
    "BPSPERF_STEPS": "abc",
    "GITHUB_ACTIONS": "true",
    "CI": "true",
}

#: The inner session's test: the environment, and a commit by plain git (as the plugin's own git calls see it).
PROBE = f"""
import os
import subprocess

HOSTILE = {sorted(HOSTILE)!r}


def git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def test_none_of_the_developers_environment(tmp_path):
    assert [key for key in HOSTILE if key in os.environ] == []
    git(tmp_path, "init", "-q")
    git(tmp_path, "commit", "-q", "--allow-empty", "-m", "unsigned")
    assert git(tmp_path, "config", "--get", "commit.gpgsign") == "false"
"""

#: A developer's global git config: every commit signed, by a program that always fails.
SIGNING = "[user]\n\tname = Dev\n\temail = dev@example.invalid\n[commit]\n\tgpgsign = true\n[gpg]\n\tprogram = false\n"


def test_an_inner_session_sees_none_of_the_developers_environment(pytester):
    pytester.makepyfile(test_probe=PROBE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


#: What the session below runs from the developer's environment.
INNER = test_an_inner_session_sees_none_of_the_developers_environment


def test_a_developers_ray_job_settings_and_signing_git_stay_outside_the_inner_sessions(tmp_path: Path):
    config = tmp_path / "signing.gitconfig"
    config.write_text(SIGNING)
    # with this config alone, a commit fails: else the session below would prove nothing
    sanity = tmp_path / "sanity"
    sanity.mkdir()
    env = {**os.environ, "GIT_CONFIG_GLOBAL": str(config)}
    subprocess.run(["git", "init", "-q"], cwd=sanity, env=env, check=True)
    signed = subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "x"], cwd=sanity, env=env, stderr=PIPE)
    assert signed.returncode != 0 and b"sign" in signed.stderr, signed.stderr
    # the developer's environment: this one without what pytest and the tests' isolation set, and HOSTILE
    developer = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GIT_"))}
    developer.update(HOSTILE, GIT_CONFIG_GLOBAL=str(config))
    test = Path(__file__).resolve().relative_to(ROOT)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"{test}::{INNER.__name__}"],
        cwd=ROOT,
        env=developer,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == pytest.ExitCode.OK, proc.stdout + proc.stderr
