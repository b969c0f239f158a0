"""End-to-end: real Ray, real MXNet parameter-server processes, small workload.

Each test runs pytest in a subprocess on a small perf suite, as a user would,
and checks what the roles really did and that nothing is left behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.procs import alive, ctrl_c_as_in_a_terminal, role_processes, snapshot_tree, wait_until

pytest.importorskip("mxnet")
pytest.importorskip("ray")

PERF_TEST = """
import pytest

pytestmark = pytest.mark.perf


@pytest.mark.bpsperf_tricks({tricks})
def test_train(bpsperf_train):
    result = bpsperf_train()
    assert result.img_per_sec > 0
"""

SMALL_INI = """
[pytest]
bpsperf_steps = {steps}
bpsperf_batch_size = 4
bpsperf_image_size = 32
bpsperf_workers = 2
bpsperf_omp_threads = 2
bpsperf_scaling = off
bpsperf_define_tricks =
    crash: worker:BPSPERF_FAULT=crash-at-step:2 -- the workers die at step 2
"""


@pytest.fixture
def perf_project(pytester: pytest.Pytester):
    def make(tricks: str = '"default", "omp-passive"', steps: int = 6) -> pytest.Pytester:
        pytester.makeini(SMALL_INI.format(steps=steps))
        pytester.makepyfile(test_perf=PERF_TEST.format(tricks=tricks))
        return pytester

    return make


#: A token in the session's environment (the recording workflow's BPSPERF_PR_TOKEN): the roles inherit it
TOKEN = "ghp_s3cr3tV4lueThatMustNeverBeWritten"


def test_two_workers_one_server_end_to_end(perf_project, tmp_path, monkeypatch):
    project = perf_project()
    out = tmp_path / "result.json"
    monkeypatch.setenv("BPSPERF_PR_TOKEN", TOKEN)
    result = project.runpytest_subprocess(
        "-p", "no:cacheprovider", "-m", "perf", "--bpsperf-json", str(out), "--bpsperf-scaling"
    )
    result.assert_outcomes(passed=2)
    # Live progress without -v: the roles of each run are up.
    result.stdout.fnmatch_lines(
        [
            "bpsperf: test_train*(trick default, repeat 1/1): 4 roles up in *s, training 6 steps",
            "bpsperf: test_train*(trick omp-passive, repeat 1/1): 4 roles up in *s, training 6 steps",
        ]
    )
    from pytest_bpsperf.store.results import read_document

    doc = read_document(out, "results")  # valid against the results schema
    assert doc["schema_version"] >= 1
    tests = {t["trick"]: t for t in doc["tests"]}
    assert set(tests) == {"default", "omp-passive"}
    for entry in tests.values():
        assert entry["img_per_sec"] > 0
        assert set(entry["per_worker_img_per_sec"]) == {"worker-0", "worker-1"}
        assert abs(sum(entry["per_worker_img_per_sec"].values()) - entry["img_per_sec"]) < 1e-6
        assert entry["settings"]["steps"] == 6
        # overlapped timing by default: one sync per step, no compute/sync split
        assert entry["timing"] == entry["settings"]["timing"] == "overlapped"
        assert entry["compute_s_per_step"] is None and entry["sync_s_per_step"] is None
        roles = {r["name"]: r for r in entry["roles"]}
        assert set(roles) == {"scheduler", "server-0", "worker-0", "worker-1"}
        for role in roles.values():
            # every role exited by itself, status 0, after the last step
            assert role["exit_code"] == 0 and not role["killed"], role
            assert role["env"]["DMLC_PS_ROOT_URI"] == "127.0.0.1"
            assert role["env"]["DMLC_NODE_HOST"] == "127.0.0.1"
            # the configured OpenMP threads, not Ray's silent OMP_NUM_THREADS=1
            assert role["env"]["OMP_NUM_THREADS"] == "2"
        assert entry["warmup_steps"]["worker-0"][0] == 0
        assert entry["bringup_s"] > 0 and entry["teardown_s"] >= 0
    # the trick's environment reached the roles it targets, read back from the processes
    passive = {r["name"]: r["env"] for r in tests["omp-passive"]["roles"]}
    assert passive["server-0"].get("OMP_WAIT_POLICY") == "PASSIVE"
    assert passive["worker-0"].get("OMP_WAIT_POLICY") == "PASSIVE"
    assert "OMP_WAIT_POLICY" not in passive["scheduler"]
    assert all("OMP_WAIT_POLICY" not in r["env"] for r in tests["default"]["roles"])
    # and each worker echoes what it saw from inside
    logs = tests["omp-passive"]["log_dir"]
    start = json.loads(open(os.path.join(logs, "worker-1.records.jsonl")).readline())
    assert start["env"]["OMP_WAIT_POLICY"] == "PASSIVE" and start["env"]["OMP_NUM_THREADS"] == "2"
    assert start["num_workers"] == 2
    assert [n["ip"] for n in doc["session_info"]["nodes"]] == ["127.0.0.1"]  # Ray itself, not only the roles
    # the scaling reference: one worker node alone (on CPUs one process, no kvstore), under the same trick,
    # run by the launcher as a plan of its own
    for trick, entry in tests.items():
        assert entry["node_img_per_sec"] > 0 and entry["node_img_per_sec"] == entry["single_img_per_sec"]
        ref = json.loads(open(_reference_records(entry["log_dir"], trick)).readline())
        assert ref["backend"] == "local" and (ref["env"].get("OMP_WAIT_POLICY") == "PASSIVE") == (trick != "default")
    (matrix,) = doc["matrix"]
    rows = {r["trick"]: r for r in matrix["rows"]}
    assert rows["omp-passive"]["scaling_efficiency"] == pytest.approx(
        rows["omp-passive"]["img_per_sec_median"] / (2 * tests["omp-passive"]["node_img_per_sec"])
    )
    assert rows["omp-passive"]["scaling_efficiency_per_gpu"] is None
    run_id = doc["session_info"]["run_id"]
    assert role_processes(run_id) == []
    result.stdout.fnmatch_lines(["*bpsperf*", "*test_train?default?: * img/s*", "*trick matrix*"])
    # the token's name is in the records and results, its value in none of the files the session wrote
    assert start["env"]["BPSPERF_PR_TOKEN"] == "***" and roles["worker-0"]["env"]["BPSPERF_PR_TOKEN"] == "***"
    written = [out] + [p for e in tests.values() for p in Path(e["log_dir"]).rglob("*") if p.is_file()]
    assert len(written) > 8 and [str(p) for p in written if TOKEN.encode() in p.read_bytes()] == []
    assert TOKEN not in result.stdout.str() + result.stderr.str()


def test_crashing_worker_fails_with_role_and_log_tail(perf_project, tmp_path):
    project = perf_project(tricks='"crash"', steps=8)
    out = tmp_path / "result.json"
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "-m", "perf", "--bpsperf-json", str(out))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*bpsperf run failed (mxnet, trick crash): role(s) exited with an error: *worker-* (exit 86)*",
            "*--- role worker-? on node *: exit code 86; log *worker-?.log",
            "*BPSPERF_FAULT: crashing at step 2 as asked*",
        ]
    )
    doc = json.loads(out.read_text())
    assert doc["failures"] and "exit 86" in doc["failures"][0]["reason"]
    assert role_processes(doc["session_info"]["run_id"]) == []


def test_run_timeout_fails_and_cleans_up(perf_project, tmp_path):
    project = perf_project(tricks='"default"', steps=5000)
    out = tmp_path / "result.json"
    result = project.runpytest_subprocess(
        "-p", "no:cacheprovider", "-m", "perf", "--bpsperf-timeout", "12", "--bpsperf-json", str(out)
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*run timed out after 12s (setting 'timeout'); still running: *worker-0*"])
    doc = json.loads(out.read_text())
    assert role_processes(doc["session_info"]["run_id"]) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill-9"])
def test_interrupted_driver_leaves_no_process(perf_project, sig):
    """Ctrl-C tears down in order; SIGKILL leaves it to pdeathsig and the reaper."""
    project = perf_project(tricks='"default"', steps=5000)
    driver = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "perf", "-q"],
        cwd=str(project.path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=ctrl_c_as_in_a_terminal,
    )
    try:

        def training():
            tree = snapshot_tree(driver.pid)
            return tree if any("pytest_bpsperf.remote.workload" in cmd for _, _, cmd in tree) else None

        tree = wait_until(training, timeout=180)
        assert tree, "the workers never started"
        assert any("raylet" in cmd for _, _, cmd in tree), tree
        os.kill(driver.pid, sig)
        driver.wait(timeout=120)
        left = wait_until(lambda: not alive(tree), timeout=60)
        assert left, f"still running after the driver ended: {alive(tree)}"
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait()


def _reference_records(run_log_dir: str, trick: str) -> str:
    """The records file of the scaling reference of ``trick`` (beside the runs' log directories)."""
    return os.path.join(os.path.dirname(run_log_dir), "reference", f"{trick}-node", "single.records.jsonl")
