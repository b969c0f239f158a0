"""``bpsperf bisect`` of real distributed runs: a short history whose middle commit computes more per step.

The repository is the one ``scripts/bisect_measurement.py`` builds for the
measurement (:func:`build_repository`), at its smallest: GOOD, the culprit
(extra matrix products in every step's forward pass) and a commit that changes
a text file. Each step of the bisect is a real pytest session in a subprocess
of this venv (the installed plugin), whose roles are real MXNet
parameter-server processes on an embedded Ray; two sessions of three pairs
each (a slowdown this large is decided at the first look): the ends, then the
culprit against its parent.

On a busy machine a comparison may stay inconclusive, and the bisect then ends,
honestly, on the range it could not narrow. What holds either way is checked;
an inconclusive end only where other processes used more CPU while the session
ran than the session's foreign load allows: then the test skips naming the load
(:mod:`helpers.machine_load`); on a quiet machine it is a failure.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.machine_load import OthersWatch, foreign_cores, too_busy
from helpers.paths import ROOT
from helpers.procs import role_processes
from helpers.repos import worktrees
from pytest_bpsperf.config.settings import OPTIONS_BY_NAME

pytest.importorskip("mxnet")
pytest.importorskip("ray")

_spec = importlib.util.spec_from_file_location("bisect_measurement", ROOT / "scripts" / "bisect_measurement.py")
measurement = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(measurement)

#: The foreign load (cores) a run may see, the sessions' default: beyond it the plugin names a run's load.
FOREIGN_LIMIT = OPTIONS_BY_NAME["foreign_load"].default


def test_a_real_bisect_names_the_commit_that_computes_more_and_says_compute_grew(tmp_path):
    repo = tmp_path / "user-repo"
    # 150 products of 192x192 per step: a step of the small MLP about three times as long on two cores
    shas = measurement.build_repository(
        repo, commits=2, comm_at=0, compute_at=1, extra=150, pad=0, steps=8, tolerance="25%"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BPSPERF_", "PYTEST_", "GITHUB_"))}
    env.pop("PYTHONPATH", None)  # the installed plugin, not this checkout
    out = tmp_path / "bisect"
    with OthersWatch() as others:
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
    print(f"other processes' CPU while the bisect ran: up to {others.peak:.2f} cores over {others.window:g} s")
    assert (out / "bisect.json").exists(), text
    doc = json.loads((out / "bisect.json").read_text())
    result = doc["result"]
    # each session left nothing, however it ended: no worktree, no role process
    assert len(worktrees(repo)) == 1
    steps = [json.loads(Path(step["results"]).read_text()) for step in doc["steps"]]
    for step in steps:
        assert role_processes(step["session_info"]["run_id"]) == []
    # never a guess: a culprit, or the range it could not narrow (which holds the culprit), nothing else
    assert result["kind"] in ("culprit", "range"), text
    if result["kind"] == "range":
        assert proc.returncode == 4 and doc["steps"][-1]["status"] == "inconclusive", text
        assert shas[1] in result["range"] and "inconclusive" in result["reason"], result
        assert "not narrowed to one commit: " in proc.stdout, text
        # most of these short runs record no foreign load of their own: the other processes' CPU says more
        busy = too_busy([c for step in steps for c in foreign_cores(step)], FOREIGN_LIMIT, others)
        if busy:
            pytest.skip(f"{busy}: the bisect ended, honestly, on the range {result['lo'][:12]}..{result['hi'][:12]}")
    assert proc.returncode == 0, text
    assert result["culprit"]["sha"] == shas[1] and result["lo"] == shas[0], text
    assert [(s["why"], s["status"]) for s in doc["steps"]] == [("ends", "regression"), ("lower half", "regression")]
    grew = result["verdict"]["breakdown"]["grew_most"]
    assert grew["label"] == "compute", result["verdict"]["where"]
    assert f'culprit: {shas[1][:12]} "extra compute per step"' in proc.stdout
