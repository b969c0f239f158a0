"""``report/exports.py``: the commit info of an export is what pytest-benchmark's own code gives."""

from __future__ import annotations

import json
import subprocess

import matplotlib.figure  # noqa: F401 - imported once here, not again inside each pytester run

from helpers.paths import pytest_benchmark_tool
from helpers.repos import git, init
from pytest_bpsperf.report import exports


def test_commit_info_is_pytest_benchmarks_own(tmp_path, monkeypatch):
    repo = tmp_path / "my-project-checkout"
    init(repo, branch="feature")
    git(repo, "remote", "add", "origin", "git@example.invalid:team/the-project.git")
    (repo / "a.txt").write_text("one\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "one")
    monkeypatch.chdir(repo)
    clean = exports.commit_info()
    assert clean == {
        "id": git(repo, "rev-parse", "HEAD"),
        "time": git(repo, "show", "-s", "--format=%cI"),
        "author_time": git(repo, "show", "-s", "--format=%aI"),
        "dirty": False,
        "project": "the-project",
        "branch": "feature",
    }
    (repo / "a.txt").write_text("two\n")
    assert exports.commit_info()["dirty"] is True
    python = pytest_benchmark_tool("python")
    proc = subprocess.run(
        [
            str(python),
            "-c",
            "import json; from pytest_benchmark.utils import get_commit_info; print(json.dumps(get_commit_info()))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == exports.commit_info()
    git(repo, "checkout", "-q", "--detach")
    assert exports.commit_info()["branch"] == "(detached head)"
