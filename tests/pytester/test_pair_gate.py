"""Base-vs-head in pytest (``plugin/pair_gate.py``): sessions of ``--bpsperf-base`` with fed measurements.

The pytester project is a real git repository with two commits; the base arm
is a real worktree (``git worktree add --detach``) or a directory, and the
arms, the pair order, the verdicts, the reports and the clean-up are the
plugin's own. Only the runs are fed: the project's ``pytest_bpsperf_run``
returns finished records whose speed depends on the arm (``FAKE_HEAD`` is
head's throughput relative to base; ``FAKE_NOISE`` the relative noise of a
run, drawn from a seeded generator per call). The distributed runs of both
arms are in ``tests/e2e/test_e2e_pairs.py``; the pair order and the arms' import
paths, without a session, in ``tests/unit/judge/test_pairs.py`` and ``tests/unit/config/test_arms.py``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile

import pytest

from helpers.fakes import GATED_TEST, fake_run_conftest
from helpers.junit import suite_properties
from helpers.procs import wait_until
from helpers.repos import git, init, worktrees
from pytest_bpsperf.config.arms import ArmError, resolve_base
from pytest_bpsperf.judge.pairs import first_arm

#: The speed of a run by its arm, its noise, and the arms' faults, from the environment (see above).
ARMS = """
import os
import random
import time

CALLS = []


def scenario(config, spec):
    CALLS.append((spec.arm.name if spec.arm else None, spec.pair))
    rng = random.Random(len(CALLS) * 7919 + int(os.environ.get("FAKE_SEED", "0")))
    speed = 1.0 + float(os.environ.get("FAKE_NOISE", "0.02")) * rng.gauss(0, 1)
    if spec.arm is not None and spec.arm.name == "head":
        speed *= float(os.environ.get("FAKE_HEAD", "1.0"))
        if os.environ.get("FAKE_HEAD_FAILS") == "1":
            raise RuntimeError("never reached")
    fail = os.environ.get("FAKE_FAIL_ARM")
    if fail and spec.arm is not None and spec.arm.name == fail:
        from pytest_bpsperf.launch.launcher import RoleFailed
        raise RoleFailed(f"worker-0 (exit 1) of the {fail} arm died: ImportError in the code under test")
    if os.environ.get("FAKE_SLEEP"):
        open(os.environ["FAKE_SLEEP"] + ".started", "w").close()
        time.sleep(60)
    return speed
"""

#: Flat 0.25 s steps at speed 1.
CONFTEST = fake_run_conftest(step_s=0.25, warmup=1.0, wobble=0.0, extra=ARMS)

PERF_TEST = GATED_TEST

PINNED = (
    "-p",
    "no:cacheprovider",
    "--bpsperf-steps=8",
    "--bpsperf-batch-size=8",
    "--bpsperf-image-size=32",
    "--bpsperf-omp-threads=2",
    "--bpsperf-no-scaling",
)


@pytest.fixture
def fake_run() -> str:
    """This module's runs: ``CONFTEST`` (ourtester writes it)."""
    return CONFTEST


@pytest.fixture
def project(ourtester: pytest.Pytester) -> pytest.Pytester:
    """A git repository with the fake conftest and a perf test, two commits, isolated from the outer environment."""
    ourtester.makepyfile(test_x=PERF_TEST)
    ourtester.makeini("[pytest]\nmarkers =\n    perf: perf\n")
    init(ourtester.path)
    git(ourtester.path, "commit", "-q", "--allow-empty", "-m", "root")
    git(ourtester.path, "add", "-A")
    git(ourtester.path, "commit", "-q", "-m", "perf test")
    return ourtester


def run(pytester, *args):
    return pytester.runpytest(*PINNED, *args)


def doc_of(pytester, name="r.json") -> dict:
    return json.loads((pytester.path / name).read_text())


# --- the arms: revisions and worktrees ------------------------------------------------------------


def test_a_name_that_is_both_a_directory_and_a_revision_is_refused_naming_both(project, monkeypatch):
    git(project.path, "branch", "feature", "HEAD~1")
    (project.path / "feature").mkdir()
    monkeypatch.chdir(project.path)
    with pytest.raises(ArmError) as excinfo:
        resolve_base("feature", "command line option --bpsperf-base", str(project.path))
    msg = str(excinfo.value)
    sha = git(project.path, "rev-parse", "feature")
    assert (
        f"it names the directory {os.path.realpath(project.path / 'feature')} and the revision feature = {sha[:12]}"
        in msg
        and "write ./feature" in msg
        and "refs/heads/feature" in msg
    )
    # written as a path it is the directory; by its full name, the revision
    assert not resolve_base("./feature", "x", str(project.path)).is_revision
    found = resolve_base("refs/heads/feature", "x", str(project.path))
    assert found.is_revision and found.commit == sha
    result = run(project, "--bpsperf-base=feature")
    assert result.ret == pytest.ExitCode.USAGE_ERROR and "ambiguous value 'feature'" in result.stderr.str()
    assert worktrees(project.path) == [os.path.realpath(project.path)]


# --- sessions ------------------------------------------------------------------------------------


def test_a_slower_head_fails_as_a_regression_naming_the_base_commit(project, monkeypatch):
    monkeypatch.setenv("FAKE_HEAD", "0.7")
    base_sha = git(project.path, "rev-parse", "HEAD~1")
    result = run(
        project,
        "--bpsperf-base=HEAD~1",
        "--bpsperf-seed=5",
        "--bpsperf-json=r.json",
        "--bpsperf-markdown=r.md",
        "--junitxml=j.xml",
    )
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            f"*REGRESSION: head * img/s vs base * img/s (medians of * pairs, base HEAD~1 = "
            f"{base_sha[:12]}): -3*% (99% interval over all looks * to *, 80% * to *), "
            "tolerance -10% (a drop of 10% fails, of 5% or less passes): a drop beyond noise "
            "(99% interval below no change) and beyond half the tolerance (80% interval below "
            "-5%); verdict after * pairs, * look*"
        ]
    )
    result.stdout.fnmatch_lines([f"base: HEAD~1 = {base_sha[:12]}; python *", "head: working tree at *"])
    doc = doc_of(project)
    section = doc["base_vs_head"]
    assert section["seed"] == 5 and section["arms"]["base"]["commit"] == base_sha and not section["aa"]
    for job in section["jobs"]:
        assert job["status"] == "regression" and 3 <= job["pairs"] <= 5 and job["looks"] == job["pairs"] - 2
        orders = [p["order"] for p in job["pair_table"]]
        assert orders[0] != orders[1] and orders[0] == orders[2]  # alternating
        assert orders[0] == (
            "base-head"
            if first_arm(5, job["key"].replace("backend=mxnet", "backend=auto"), 0) == "base"
            else "head-base"
        )
        assert all(
            p["ratio"] == pytest.approx(p["head_img_per_sec"] / p["base_img_per_sec"]) for p in job["pair_table"]
        )
    # every run is in the results with its arm and pair; the order of the runs is the order in the table
    for t in doc["tests"]:  # one log directory per run: the job's, then its pair and arm
        assert t["log_dir"].endswith(f"/pair{t['pair'] + 1}-{t['arm']}") and t["log_dir"].count("/pair") == 1
    runs = [(t["trick"], t["arm"], t["pair"]) for t in doc["tests"]]
    assert len(runs) == 2 * sum(j["pairs"] for j in section["jobs"]) and {a for _t, a, _p in runs} == {"base", "head"}
    for job in section["jobs"]:
        mine = [(a, p) for t, a, p in runs if t == job["trick"]]
        assert [f"{mine[2 * i][0]}-{mine[2 * i + 1][0]}" for i in range(job["pairs"])] == [
            p["order"] for p in job["pair_table"]
        ]
    md = (project.path / "r.md").read_text()
    assert md.index("### Base vs head") < md.index("| test | img/s")
    assert "❌ regression" in md and "| pair | order | base img/s | head img/s | head/base |" in md
    props = suite_properties(project.path / "j.xml")  # xunit2: suite-level, named NODEID::NAME
    assert props["test_x.py::test_x[default]"]["bpsperf_status"] == "regression"
    pairs = {j["nodeid"]: j["pairs"] for j in section["jobs"]}
    assert props["test_x.py::test_x[default]"]["bpsperf_pairs"] == str(pairs["test_x.py::test_x[default]"])
    # nothing left behind: the worktree is gone
    assert worktrees(project.path) == [os.path.realpath(project.path)]


def test_same_commit_is_an_aa_run_that_passes(project, monkeypatch):
    result = run(project, "-v", "--bpsperf-base=HEAD", "--bpsperf-json=r.json", "--bpsperf-plots=img")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["A/A run: both arms are the same commit and interpreter*", "OK * head * vs base *A/A run*"]
    )
    doc = doc_of(project)
    assert doc["base_vs_head"]["aa"] is True
    assert {j["status"] for j in doc["base_vs_head"]["jobs"]} == {"ok"}
    pictures = sorted(p.name for p in (project.path / "img").glob("pairs-*.png"))
    assert len(pictures) == 2
    # the matrix and the per-run lines are the head arm's; the base runs are labelled
    result.stdout.fnmatch_lines(["test_x.py::test_x[[]default[]] (base, pair 1): * img/s*"])
    heads = [t for t in doc["tests"] if t["arm"] == "head"]
    assert sum(r["runs"] for m in doc["matrix"] for r in m["rows"]) == len(heads)


def test_a_directory_base_and_the_offline_command_decide_the_same(project, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_HEAD", "0.8")
    other = tmp_path / "elsewhere"
    other.mkdir()
    result = run(project, f"--bpsperf-base={other}", "--bpsperf-json=r.json")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([f"base: directory = {other} (no git commit); python *"])
    from pytest_bpsperf.cli import main

    assert main(["check", str(project.path / "r.json")]) == 1
    assert main(["compare", str(project.path / "r.json")]) == 1
    from pytest_bpsperf.judge.offline import pair_verdicts

    offline = {
        v.nodeid: (v.status, v.comparison.pairs, round(v.comparison.ci_high, 9)) for v in pair_verdicts(doc_of(project))
    }
    online = {
        j["nodeid"]: (j["status"], j["pairs"], round(j["ci_high"], 9)) for j in doc_of(project)["base_vs_head"]["jobs"]
    }
    assert offline == online and len(online) == 2


def test_undecided_is_inconclusive_skipped_and_strict_fails_it(project, monkeypatch):
    monkeypatch.setenv("FAKE_NOISE", "0.25")
    monkeypatch.setenv("FAKE_HEAD", "0.85")
    result = run(project, "-v", "--bpsperf-base=HEAD", "--bpsperf-max-pairs=3", "--bpsperf-json=r.json")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(
        [
            "INCONCLUSIVE test_x.py::test_x[[]default[]]: head *: the data cannot tell yet: *; "
            "verdict after 3 pairs, 1 look (inconclusive after 3 pairs, the most max_pairs "
            "allows)*"
        ]
    )
    assert {j["status"] for j in doc_of(project)["base_vs_head"]["jobs"]} == {"inconclusive"}
    result = run(project, "-v", "--bpsperf-base=HEAD", "--bpsperf-max-pairs=3", "--bpsperf-strict")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*--bpsperf-strict: an inconclusive verdict fails*"])


def test_a_failed_base_run_drops_its_pair_and_a_failure_of_head_only_fails(project, monkeypatch):
    monkeypatch.setenv("FAKE_FAIL_ARM", "base")
    result = run(project, "-v", "--bpsperf-base=HEAD~1", "--bpsperf-json=r.json", "--bpsperf-tricks=default")
    # every base run fails: pairs are dropped (never read as "head is faster"), the job stops undecided
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["INCONCLUSIVE*3 pairs dropped: a base run failed*stopped after 3 failed base runs*"])
    doc = doc_of(project)
    assert [p.get("dropped", "")[:15] for p in doc["base_vs_head"]["jobs"][0]["pair_table"]] == ["base run failed"] * 3
    assert all("base arm, pair" in f["reason"] for f in doc["failures"])
    monkeypatch.setenv("FAKE_FAIL_ARM", "head")
    result = run(project, "-v", "--bpsperf-base=HEAD~1", "--bpsperf-tricks=default")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*head arm, pair 1: *the head arm died*", "*a failure of head only: the base run of the same pair passed*"]
    )
    assert "REGRESSION" not in result.stdout.str()
    assert worktrees(project.path) == [os.path.realpath(project.path)]  # a failed run leaves no worktree


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ("--bpsperf-base=nope",),
            "invalid value 'nope' for setting 'base' from command line option --bpsperf-base: "
            "neither a directory nor a revision",
        ),
        # passed to git, it would be an option: refused (and git gets --end-of-options anyway)
        (
            ("--bpsperf-base=--output=/x",),
            "invalid value '--output=/x' for setting 'base' from command line option "
            "--bpsperf-base: a revision cannot start with '-'",
        ),
        (
            ("--bpsperf-base=HEAD", "--bpsperf-update-baselines"),
            "--bpsperf-update-baselines cannot be used with setting 'base'",
        ),
        (
            ("--bpsperf-base=HEAD", "--bpsperf-base-python=/no/such/python"),
            "invalid value '/no/such/python' for setting 'base_python'",
        ),
    ],
)
def test_bad_input_is_a_usage_error_before_anything_runs(project, args, message):
    result = run(project, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
    assert worktrees(project.path) == [os.path.realpath(project.path)]


@pytest.mark.parametrize("value", ["", "  ", "none", "None"], ids=["empty", "blank", "none", "None"])
def test_an_empty_base_is_a_usage_error_not_a_session_without_a_base(project, value):
    # a CI step whose merge-base came out empty must fail the job, not gate against stored
    # baselines (none on a fresh runner: every test skipped and the job green)
    result = run(project, f"--bpsperf-base={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        f"invalid value {value!r} for setting 'base' from command line option --bpsperf-base: the base is empty"
    ) in result.stderr.str()
    assert "skipped" not in result.stdout.str()


def test_an_empty_bpsperf_base_variable_is_a_usage_error(project, monkeypatch):
    monkeypatch.setenv("BPSPERF_BASE", "")
    result = run(project)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "invalid value '' for setting 'base' from environment variable BPSPERF_BASE: the base is empty"
        in result.stderr.str()
    )


def test_a_base_tree_without_the_entry_module_is_a_usage_error_naming_it(project):
    project.makepyfile(mybench="def build(ctx):\n    return lambda: None\n")
    project.makeini("[pytest]\nmarkers =\n    perf: perf\nbpsperf_entry = mybench:build\n")
    # mybench.py is not committed: the base (HEAD) has no entry module
    result = run(project, "--bpsperf-base=HEAD")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "base arm" in err and "entry point mybench:build: module 'mybench' does not import" in err
    assert worktrees(project.path) == [os.path.realpath(project.path)]


def test_a_dirty_working_tree_is_measured_as_it_is_and_says_so(project, monkeypatch):
    (project.path / "notes.txt").write_text("uncommitted\n")
    result = run(project, "--bpsperf-base=HEAD", "--bpsperf-tricks=default", "--bpsperf-json=r.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["head: working tree at * + uncommitted changes (measured as they are)*"])
    assert "A/A run" not in result.stdout.str()
    assert doc_of(project)["base_vs_head"]["arms"]["head"]["dirty"] is True


def test_ctrl_c_mid_session_removes_the_worktree(project, monkeypatch):
    monkeypatch.setenv("FAKE_HEAD", "1.0")
    project.makeconftest(
        CONFTEST.replace(
            "    return speed\n", "    if len(CALLS) == 3:\n        raise KeyboardInterrupt\n    return speed\n"
        )
    )
    # in a subprocess: an interrupt of an inline run would reach this session too
    result = project.runpytest_subprocess(*PINNED, "--bpsperf-base=HEAD~1")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert worktrees(project.path) == [os.path.realpath(project.path)]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["sigterm", "sighup"])
def test_sigterm_or_sighup_mid_session_removes_the_worktree(project, monkeypatch, tmp_path, sig):
    marker = tmp_path / "sleep"
    env = dict(os.environ, FAKE_SLEEP=str(marker))
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", *PINNED, "--bpsperf-base=HEAD~1"],
        cwd=project.path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert wait_until(lambda: os.path.exists(str(marker) + ".started"), 60)
        assert len(worktrees(project.path)) == 2
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert worktrees(project.path) == [os.path.realpath(project.path)]
    assert holders_of(project.path) == []


def holders_of(repo) -> list:
    """The base-worktree directories in the temp dir that belong to ``repo``."""
    tmp = tempfile.gettempdir()
    out = []
    for name in os.listdir(tmp):
        owner = os.path.join(tmp, name, "bpsperf-owner.json")
        if name.startswith("bpsperf-base-") and os.path.isfile(owner):
            if json.load(open(owner))["repository"] == os.path.realpath(repo):
                out.append(name)
    return out


def test_a_terminal_closed_mid_session_leaves_no_worktree(project, tmp_path):
    marker = tmp_path / "sleep"
    project.makeconftest(CONFTEST.replace("        time.sleep(60)", "        time.sleep(3)"))
    env = dict(os.environ, FAKE_SLEEP=str(marker))
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", *PINNED, "--bpsperf-base=HEAD~1"],
        cwd=project.path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_until(lambda: os.path.exists(str(marker) + ".started"), 60)
        proc.stdout.close()  # the reader went away: pytest's summary meets a broken pipe
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert worktrees(project.path) == [os.path.realpath(project.path)]
    assert holders_of(project.path) == []


def test_the_history_keeps_the_base_arm_at_the_base_commit_never_the_head(project, tmp_path, monkeypatch):
    from pytest_bpsperf.store.history import HistoryStore, session_groups

    base_sha = git(project.path, "rev-parse", "HEAD~1")
    for seed in range(2):  # two pull requests' sessions on the same merge base
        # other measurements each time: a fed session has no Ray run id, and its record is named by its content
        monkeypatch.setenv("FAKE_SEED", str(seed))
        result = run(project, "--bpsperf-base=HEAD~1", "--bpsperf-tricks=default", f"--bpsperf-history={tmp_path}/h")
        assert result.ret in (0, 1)
    records = HistoryStore(tmp_path / "h").load()
    assert len(records) == 2 and {r["commit"] for r in records} == {base_sha}
    assert all(r["branch"] is None and len(r["runs"]) >= 3 for r in records)
    # the same commit measured in two sessions: what the stored-baseline gate pools as the spread between sessions
    (group,) = session_groups(records, profile_id=records[0]["profile"]["id"])
    assert len(group) == 2
