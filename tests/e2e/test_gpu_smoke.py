"""The GPU smoke check's parts that need no GPU, run here as they run on an accelerator machine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.gpu_sim import standin_env
from helpers.paths import ROOT

SCRIPT = ROOT / "scripts" / "gpu_smoke.py"


@pytest.mark.skipif(
    not (Path(sys.executable).parent / "bpslaunch").exists(),
    reason="needs bpslaunch: scripts/install-byteps-server.sh installs it",
)
def test_cpu_parts_of_the_gpu_smoke_check(tmp_path):
    out = tmp_path / "facts.json"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--cpu-only", "--out", str(out)], capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    facts = json.loads(out.read_text())
    assert facts["machine"]["python"] and "cores" in facts["machine"]
    plan = facts["plugin"]["byteps_plan"]
    # a single GPU machine's defaults plan one worker node with all its GPUs
    assert plan["ok"] and plan["workers"] == 1
    assert plan["worker_env"][0]["CUDA_VISIBLE_DEVICES"] == "0" and plan["worker_env"][0]["BYTEPS_LOCAL_SIZE"]
    launch = facts["bpslaunch"]
    assert launch["exit"] == 0 and [r["steps"] for r in launch["ranks"]] == [6, 6]
    assert launch["max_steps_seen"] >= 2  # progress read from the ranks' own records while they ran
    assert all(r["pinning"] for r in launch["ranks"])
    assert "role_gpu" not in facts and facts["seconds"] < 200
    # no BytePS here: the smoke check says what it skipped and why, and what the stack would run on
    byteps = facts["byteps"]
    assert byteps["skipped"].startswith("byteps.mxnet does not import here") and "preflight" not in byteps
    assert byteps["documented_stack"]


def test_the_smoke_checks_byteps_preflight_and_training_steps_where_byteps_imports(tmp_path):
    """Under the BytePS stand-in (CPU MXNet), the part that runs BytePS on a GPU machine runs here."""
    out = tmp_path / "facts.json"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--cpu-only", "--parts", "byteps", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env=standin_env(tmp_path),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    byteps = json.loads(out.read_text())["byteps"]
    assert "error" not in byteps, byteps.get("traceback")  # the part's own failure, not only its absence
    assert "skipped" not in byteps and "BytePS stand-in" in byteps["simulation"]
    assert byteps["preflight"]["value"] == 1.0 and set(byteps["preflight"]["exit"].values()) == {0}
    training = byteps["training"]
    assert set(training["exit"].values()) == {0} and training["worker-0.0"]["img_per_sec"] > 0
    assert training["worker-0.0"]["windows"] == 3  # 6 steps, a sync every 2: the GPU default's window
