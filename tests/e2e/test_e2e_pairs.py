"""Base against head with real roles, from a user's own repository.

Each test makes a throwaway git repository of its own, outside this checkout:
an entry module (a small MLP through the harness's entry-point protocol), a
perf test and a pytest.ini, no ``baselines/``. The second commit makes every
step slower through a real code change (extra matrix products per step).
pytest runs there in a subprocess of this venv, so the plugin is the installed
one (its ``pytest11`` entry point), never this tree on ``sys.path``; the roles
are real MXNet parameter-server processes on the embedded Ray.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.entries import ENTRY, USER_INI
from helpers.procs import role_processes
from helpers.repos import git, init, pytest_in, worktrees

pytest.importorskip("mxnet")
pytest.importorskip("ray")

PERF_TEST = """import pytest

pytestmark = pytest.mark.perf


def test_bench(bpsperf_train):
    bpsperf_train().assert_within_baseline()
"""


@pytest.fixture(scope="module")
def user_repo(tmp_path_factory) -> Path:
    """base: the MLP; HEAD: the same MLP with 150 extra 192x192 products per step (about 3x slower here)."""
    repo = tmp_path_factory.mktemp("user-repo")
    (repo / "bench.py").write_text(ENTRY.format(extra=0))
    (repo / "test_perf.py").write_text(PERF_TEST)
    (repo / "pytest.ini").write_text(USER_INI)
    init(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "training step")
    (repo / "bench.py").write_text(ENTRY.format(extra=150))
    git(repo, "commit", "-q", "-am", "more work per step")
    return repo


def test_the_slower_commit_fails_against_its_parent_and_passes_against_itself(user_repo, tmp_path):
    base_sha = git(user_repo, "rev-parse", "HEAD~1")
    out = tmp_path / "regression.json"
    proc = pytest_in(user_repo, "--bpsperf-base=HEAD~1", f"--bpsperf-json={out}")
    text = proc.stdout + proc.stderr
    assert proc.returncode == 1, text
    assert re.search(r"^plugins: .*bpsperf-", text, re.M), text  # loaded through its entry point
    assert "REGRESSION: head " in text and f"base HEAD~1 = {base_sha[:12]}" in text, text
    doc = json.loads(out.read_text())
    (job,) = doc["base_vs_head"]["jobs"]
    assert job["status"] == "regression" and job["ratio"] < 0.75
    # each arm imported the entry module from its own tree: the worktree for base, the checkout for head
    files = {t["arm"]: {w["entry_file"] for w in t["workers"]} for t in doc["tests"]}
    (base_file,), (head_file,) = files["base"], files["head"]
    assert head_file == str(user_repo / "bench.py")
    assert (
        base_file.endswith("/tree/bench.py")
        and "bpsperf-base-" in base_file
        and not base_file.startswith(str(user_repo))
    )
    assert not os.path.exists(base_file)  # the worktree is gone with the session
    assert len(worktrees(user_repo)) == 1
    assert role_processes(doc["session_info"]["run_id"]) == []

    out = tmp_path / "aa.json"
    proc = pytest_in(user_repo, "--bpsperf-base=HEAD", f"--bpsperf-json={out}")
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text
    assert "A/A run: both arms are the same commit and interpreter" in text and "REGRESSION" not in text, text
    (job,) = json.loads(out.read_text())["base_vs_head"]["jobs"]
    # an A/A job is never slower; on a busy runner its few pairs may not decide (inconclusive: skipped)
    assert job["aa"] is True and job["status"] in ("ok", "inconclusive"), job
    assert ("1 passed" if job["status"] == "ok" else "1 skipped") in text, text
    assert len(worktrees(user_repo)) == 1


def make_venv(path: Path, with_packages: bool) -> Path:
    """A real venv; ``with_packages``: it sees this venv's packages (MXNet, gluoncv) through a .pth file."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    python = path / "bin" / "python"
    if with_packages:
        site = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        ours = [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)]
        Path(site, "bpsperf-test-parent.pth").write_text("\n".join(ours) + "\n")
    return python


def test_the_base_arm_runs_under_its_own_interpreter(user_repo, tmp_path):
    python = make_venv(tmp_path / "base-venv", with_packages=True)
    out = tmp_path / "r.json"
    proc = pytest_in(
        user_repo,
        "--bpsperf-base=HEAD",
        f"--bpsperf-base-python={python}",
        "--bpsperf-max-pairs=3",
        f"--bpsperf-json={out}",
    )
    text = proc.stdout + proc.stderr
    assert proc.returncode in (0, 1), text  # the verdict is not the point here
    doc = json.loads(out.read_text())
    pythons = {t["arm"]: {w["python"] for w in t["workers"]} for t in doc["tests"]}
    assert pythons["base"] == {str(python)} and pythons["head"] == {sys.executable}
    base = doc["base_vs_head"]["arms"]["base"]
    assert base["python"] == str(python) and base["executable"] == str(python) and base["versions"]["mxnet"]
    # the same commit under another interpreter is no A/A run
    assert doc["base_vs_head"]["aa"] is False and "A/A run" not in text
    # every role of the base arm started under it (scheduler and server too)
    for t in doc["tests"]:
        if t["arm"] == "base":
            for role in t["roles"]:
                first = open(role["log_path"]).readline()
                assert f" {python} " in first, (role["name"], first)


def test_a_base_interpreter_without_mxnet_is_a_usage_error_before_ray_starts(user_repo, tmp_path):
    python = make_venv(tmp_path / "bare-venv", with_packages=False)
    proc = pytest_in(user_repo, "--bpsperf-base=HEAD", f"--bpsperf-base-python={python}")
    text = proc.stdout + proc.stderr
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR, text
    assert f"interpreter {python}" in text and "mxnet does not import" in text, text
    assert "'base_python'" in text
    assert not re.search(
        r"^Ray: embedded on 127\.0\.0\.1; start", text, re.M
    )  # nothing started (the header only says it would)
    assert len(worktrees(user_repo)) == 1
