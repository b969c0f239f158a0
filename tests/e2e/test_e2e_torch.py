"""End to end: backend torch: real Ray, real torch.distributed (two gloo ranks on the CPU), small images.

The sessions run pytest in a subprocess, as a user would: the perf suite's trick matrix, the
parameters the ranks end with (equal on both, unlike one process training on rank 0's data alone:
only real gradient averaging gives both), a killed rank, and a base-vs-head session whose head
commit is slower, from a repository of the user's own with their own torch code.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.entries import USER_INI
from helpers.procs import role_processes
from helpers.repos import git, init, pytest_in

pytest.importorskip("torch")
pytest.importorskip("torchvision")
pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parents[2]

SMALL_INI = """
[pytest]
bpsperf_backend = torch
bpsperf_steps = {steps}
bpsperf_batch_size = 4
bpsperf_image_size = 32
bpsperf_workers = 2
bpsperf_omp_threads = 1
bpsperf_scaling = {scaling}
"""

#: rank 1 is killed (SIGKILL, as the OOM killer would) in its third step; rank 0 then waits in its allreduce
KILLED_RANK = """
import os, signal


def build(ctx):
    from pytest_bpsperf.remote.torch_workload import build_model

    step = build_model(ctx)
    count = [0]

    def killed():
        count[0] += 1
        if ctx.rank == 1 and count[0] == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        step()

    return killed
"""


def records(log_dir: str, name: str) -> "list[dict]":
    with open(os.path.join(log_dir, f"{name}.records.jsonl"), encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def end_of(rows: "list[dict]") -> dict:
    return next(r for r in rows if r["event"] == "end")


def test_two_gloo_ranks_average_their_gradients_and_give_a_trick_matrix(pytester, tmp_path):
    pytester.makeini(SMALL_INI.format(steps=6, scaling="on"))
    pytester.makepyfile(test_resnet50=(ROOT / "perf_tests" / "test_resnet50.py").read_text())  # the shipped suite
    out = tmp_path / "result.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-m", "perf", "-rs", f"--bpsperf-json={out}")
    text = result.stdout.str()
    # default and omp-passive train; the tricks that add servers are skipped and say why (DDP has none)
    result.assert_outcomes(passed=0, skipped=4)
    assert text.count("adds servers and backend torch has none") == 2, text
    assert "trick matrix: test_resnet50.py::test_resnet50_throughput (torch, resnet50, batch 4" in text, text
    assert "no servers (2 rank(s))" in text
    doc = json.loads(out.read_text())
    tests = {t["trick"]: t for t in doc["tests"]}
    assert set(tests) == {"default", "omp-passive"}
    for trick, entry in tests.items():
        assert set(entry["per_worker_img_per_sec"]) == {"worker-0", "worker-1"} and entry["img_per_sec"] > 0
        roles = {r["name"]: r for r in entry["roles"]}
        assert set(roles) == {"worker-0", "worker-1"}  # no scheduler, no servers
        for name, role in roles.items():
            assert role["exit_code"] == 0 and not role["killed"], role
            env = role["env"]
            assert env["MASTER_ADDR"] == "127.0.0.1" and env["WORLD_SIZE"] == "2" and env["RANK"] == name[-1]
            assert env["OMP_NUM_THREADS"] == "1" and (env.get("OMP_WAIT_POLICY") == "PASSIVE") == (trick != "default")
        ranks = {name: records(entry["log_dir"], name) for name in roles}
        for name, rows in ranks.items():
            start = rows[0]
            assert start["event"] == "start" and start["framework"] == "torch" and start["dist_backend"] == "gloo"
            assert start["world_size"] == 2 and start["rank"] == int(name[-1]) and start["precision"] == "float32"
            assert start["env"]["GLOO_SOCKET_IFNAME"] == "lo"  # the rendezvous listens where the ranks are
            assert len([r for r in rows if r["event"] == "step"]) == 6
        # after the steps both ranks hold the same parameters (DDP averaged the gradients every step) ...
        sums = {name: end_of(rows)["param_checksum"] for name, rows in ranks.items()}
        assert sums["worker-0"] == pytest.approx(sums["worker-1"], rel=1e-9)
        # ... and not those of one process alone on rank 0's data (the scaling reference, same seed, same steps)
        ref_dir = os.path.join(os.path.dirname(entry["log_dir"]), "reference", f"{trick}-node")
        reference = records(ref_dir, "single")
        assert reference[0]["backend"] == "local" and reference[0]["framework"] == "torch"
        assert abs(end_of(reference)["param_checksum"] - sums["worker-0"]) > 1e-3 * abs(sums["worker-0"])
        assert entry["node_img_per_sec"] > 0
    (matrix,) = doc["matrix"]
    assert {r["trick"] for r in matrix["rows"]} == {"default", "omp-passive"}
    assert all(r["scaling_efficiency"] is not None for r in matrix["rows"])
    assert role_processes(doc["session_info"]["run_id"]) == []


def test_a_killed_rank_fails_the_run_at_once_naming_it(pytester, tmp_path):
    pytester.makeini(SMALL_INI.format(steps=40, scaling="off") + "bpsperf_entry = killed:build\n")
    pytester.makepyfile(killed=KILLED_RANK)
    pytester.makepyfile(
        test_perf="import pytest\n\n\n@pytest.mark.perf\ndef test_train(bpsperf_train):\n    bpsperf_train()\n"
    )
    out = tmp_path / "result.json"
    # a timeout and a stall allowance far beyond the run: the failure must be the rank's death, not a wait
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-m", "perf", f"--bpsperf-json={out}", "--bpsperf-timeout=900",
        "--bpsperf-stall-timeout=600",
    )  # fmt: skip
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert re.search(r"worker-1 .*(signal 9|SIGKILL|-9)", text), text
    assert "timed out" not in text and "stalled" not in text, text
    doc = json.loads(out.read_text())
    assert role_processes(doc["session_info"]["run_id"]) == []


BENCH = '''"""The user's own torch training code: a small CNN; SLOW extra matrix products per step."""

SLOW = {slow}


def build(ctx):
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = ctx.distribute(
        nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, ctx.classes)
        )
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=ctx.lr)
    loss_fn = nn.CrossEntropyLoss()
    a = torch.rand(160, 160)

    def step():
        data, label = ctx.next_batch()
        optimizer.zero_grad(set_to_none=True)
        with ctx.autocast():
            loss = loss_fn(model(data), label)
        for _ in range(SLOW):
            a.matmul(a)
        ctx.backward(loss)
        ctx.step(optimizer)

    return step
'''

#: the pytest.ini of the MXNet base-vs-head tests, with backend torch
PAIRS_INI = USER_INI + "bpsperf_backend = torch\n"


def test_a_slower_commit_of_the_users_torch_code_is_a_regression_against_its_base(tmp_path):
    repo = tmp_path / "user-repo"
    repo.mkdir()
    (repo / "bench.py").write_text(BENCH.format(slow=0))
    (repo / "test_perf.py").write_text(
        "import pytest\n\npytestmark = pytest.mark.perf\n\n\n"
        "def test_bench(bpsperf_train):\n    bpsperf_train().assert_within_baseline()\n"
    )
    (repo / "pytest.ini").write_text(PAIRS_INI)
    init(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "training step")
    (repo / "bench.py").write_text(BENCH.format(slow=120))
    git(repo, "commit", "-q", "-am", "more work per step")
    out = tmp_path / "pairs.json"
    proc = pytest_in(repo, "--bpsperf-base=HEAD~1", f"--bpsperf-json={out}", "--bpsperf-breakdown-steps=2", timeout=900)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 1, text
    assert "REGRESSION: head " in text, text
    doc = json.loads(out.read_text())
    (job,) = doc["base_vs_head"]["jobs"]
    assert job["status"] == "regression" and job["ratio"] < 0.75, job
    files = {t["arm"]: {w["entry_file"] for w in t["workers"]} for t in doc["tests"]}
    assert files["head"] == {str(repo / "bench.py")} and files["base"] != files["head"]
    # where the time went: the split steps give compute and allreduce parts on both ranks
    head = next(t for t in doc["tests"] if t["arm"] == "head")
    diagnostic = [r for r in records(head["log_dir"], "worker-1") if r["event"] == "diagnostic"]
    assert len(diagnostic) == 2 and all(r["compute_s"] > 0 and r["sync_s"] > 0 for r in diagnostic), diagnostic
    assert role_processes(doc["session_info"]["run_id"]) == []


def test_the_documented_example_of_ones_own_torch_code_trains_and_splits_its_steps(tmp_path):
    records_file = tmp_path / "records.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_bpsperf.remote.workload", "--backend", "local", "--framework", "torch"]
        + ["--entry", "examples.custom_torch_model:build", "--entry-path", str(ROOT), "--steps", "4"]
        + ["--batch-size", "4", "--image-size", "32", "--dtype", "bfloat16", "--diagnostic-steps", "2"]
        + ["--records", str(records_file)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in records_file.read_text().splitlines()]
    assert rows[0]["entry_file"] == str(ROOT / "examples" / "custom_torch_model.py")
    assert rows[0]["precision"] == "bfloat16" and len([r for r in rows if r["event"] == "step"]) == 4
    diagnostic = [r for r in rows if r["event"] == "diagnostic"]
    assert len(diagnostic) == 2 and all(r["compute_s"] > 0 for r in diagnostic)  # ctx.backward marks compute
    assert end_of(rows)["param_checksum"] is not None
