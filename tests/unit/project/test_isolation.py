"""The tests' own environment (:mod:`helpers.isolation`) and git (:mod:`helpers.repos`): a developer's shell and
git config change no test.

That an inner session started from such a shell sees none of it is in
``tests/pytester/test_inner_environment.py``.
"""

from __future__ import annotations

import os
import subprocess

from helpers.isolation import AUTHOR, GITCONFIG, isolated
from helpers.repos import git, init, three_commits

#: A developer's global git config: commits and tags signed by a program that always fails, another
#: default branch.
SIGNING = (
    "[user]\n\tname = Dev\n\temail = dev@example.invalid\n[commit]\n\tgpgsign = true\n[tag]\n\tgpgsign = true\n"
    "[gpg]\n\tprogram = false\n[init]\n\tdefaultBranch = trunk\n"
)


def test_the_developers_plugin_ray_github_and_git_variables_are_left_outside(tmp_path):
    environ = {
        "PATH": "/usr/bin",
        "BPSPERF_STEPS": "3",
        "BPSPERF_CHROMIUM": "chromium-of-the-developer",
        "RAY_ADDRESS": "10.0.0.1:6379",
        "RAY_JOB_ID": "02000000",
        "RAY_JOB_CONFIG_JSON_ENV_VAR": "{}",
        "RAY_AUTH_MODE": "token",
        "GITHUB_ACTIONS": "true",
        "GITHUB_STEP_SUMMARY": "summary.md",
        "CI": "true",
        "BUILD_NUMBER": "7",
        "FAKE_SPEED": "0.5",
        "GIT_DIR": ".git",
        "GIT_CONFIG_GLOBAL": "developer.gitconfig",
        "GIT_AUTHOR_NAME": "Dev",
    }
    changes = isolated(environ, tmp_path / "gitconfig", ceilings=[str(tmp_path)])
    after = {k: v for k, v in {**environ, **changes}.items() if v is not None}
    assert after == {
        "PATH": "/usr/bin",
        "BPSPERF_CHROMIUM": "chromium-of-the-developer",  # the suite's own knob, not the plugin's setting
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        "RAY_AUTH_MODE": "disabled",
        "GIT_CONFIG_GLOBAL": str(tmp_path / "gitconfig"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": AUTHOR[0],
        "GIT_AUTHOR_EMAIL": AUTHOR[1],
        "GIT_COMMITTER_NAME": AUTHOR[0],
        "GIT_COMMITTER_EMAIL": AUTHOR[1],
        "GIT_CEILING_DIRECTORIES": os.path.realpath(tmp_path),
    }


def test_this_session_runs_in_it(tmp_path):
    assert not [k for k in os.environ if k.startswith(("RAY_JOB", "GITHUB_")) or k in ("RAY_ADDRESS", "CI")]
    assert open(os.environ["GIT_CONFIG_GLOBAL"], encoding="utf-8").read() == GITCONFIG
    # plain git, as the plugin calls it: the tests' author, nothing signed
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "c"], cwd=tmp_path, check=True)
    assert git(tmp_path, "log", "-1", "--format=%an <%ae> %G?") == f"{AUTHOR[0]} <{AUTHOR[1]}> N"


def test_the_tests_commit_where_the_developers_git_signs_every_commit(tmp_path, monkeypatch):
    # as with a git older than 2.32, which reads the developer's global config whatever GIT_CONFIG_GLOBAL says
    config = tmp_path / "signing.gitconfig"
    config.write_text(SIGNING)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    plain = tmp_path / "plain"
    plain.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=plain, check=True)
    signed = subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "x"], cwd=plain, capture_output=True)
    assert signed.returncode != 0 and b"sign" in signed.stderr, signed.stderr  # this config signs, and fails
    repo = three_commits(tmp_path / "repo")
    git(repo.path, "checkout", "-q", "-b", "topic")
    git(repo.path, "commit", "-q", "--allow-empty", "-m", "on topic")
    git(repo.path, "checkout", "-q", "main")
    git(repo.path, "merge", "-q", "--no-ff", "-m", "merge topic", "topic")
    git(repo.path, "tag", "-a", "-m", "v1", "v1")
    assert git(repo.path, "rev-list", "--count", "HEAD") == "5"


def test_a_new_repository_is_on_main_whatever_the_default_branch(tmp_path, monkeypatch):
    config = tmp_path / "signing.gitconfig"
    config.write_text(SIGNING)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    init(tmp_path / "a")
    init(tmp_path / "b", branch="feature")
    assert git(tmp_path / "a", "symbolic-ref", "HEAD") == "refs/heads/main"
    assert git(tmp_path / "b", "symbolic-ref", "HEAD") == "refs/heads/feature"
