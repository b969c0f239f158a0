"""``bpsperf bisect`` of real distributed runs: a short history whose middle commit computes more per step.

The repository is the one ``scripts/bisect_measurement.py`` builds for the
measurement (:func:`build_repository`), at its smallest: GOOD, the culprit
(extra matrix products in every step's forward pass) and a commit that changes
a text file. Each step of the bisect is a real pytest session in a subprocess
of this venv (the installed plugin), whose roles are real MXNet
parameter-server processes on an embedded Ray; two sessions of three pairs
each (a slowdown this large is decided at the first look): the ends, then the
culprit against its parent.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.paths import ROOT
from helpers.procs import role_processes

pytest.importorskip("mxnet")
pytest.importorskip("ray")

_spec = importlib.util.spec_from_file_location("bisect_measurement", ROOT / "scripts" / "bisect_measurement.py")
measurement = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(measurement)


def test_a_real_bisect_names_the_commit_that_computes_more_and_says_compute_grew(tmp_path):
    repo = tmp_path / "user-repo"
    # 150 products of 192x192 per step: a step of the small MLP about three times as long on two cores
    shas = measurement.build_repository(
        repo, commits=2, comm_at=0, compute_at=1, extra=150, pad=0, steps=8, tolerance="25%"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BPSPERF_", "PYTEST_", "GITHUB_"))}
    env.pop("PYTHONPATH", None)  # the installed plugin, not this checkout
    out = tmp_path / "bisect"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_bpsperf.cli",
            "bisect",
            shas[0],
            shas[2],
            "--out",
            str(out),
            "--retries=0",
            "--",
            "-p",
            "no:cacheprovider",
            "--bpsperf-max-pairs=3",
        ],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text
    doc = json.loads((out / "bisect.json").read_text())
    result = doc["result"]
    assert result["culprit"]["sha"] == shas[1] and result["lo"] == shas[0], text
    assert [(s["why"], s["status"]) for s in doc["steps"]] == [("ends", "regression"), ("lower half", "regression")]
    grew = result["verdict"]["breakdown"]["grew_most"]
    assert grew["label"] == "compute", result["verdict"]["where"]
    assert f'culprit: {shas[1][:12]} "extra compute per step"' in proc.stdout
    # each session left nothing: no worktree, no role process
    assert (
        subprocess.run(["git", "worktree", "list"], cwd=repo, capture_output=True, text=True, check=True).stdout.count(
            "\n"
        )
        == 1
    )
    for step in doc["steps"]:
        run_id = json.loads(Path(step["results"]).read_text())["session_info"]["run_id"]
        assert role_processes(run_id) == []
