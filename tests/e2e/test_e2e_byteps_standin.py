"""Code written for BytePS's MXNet plugin, run under the stand-in that enforces BytePS's rules.

The stand-in (``tests/helpers/standin/byteps/mxnet``) runs on CPU MXNet and
aborts where BytePS 0.2.5 aborts; each rule cites BytePS's source there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from helpers.paths import HELPERS

from pytest_bpsperf.backends.byteps import PUSH_PULL

STANDIN = HELPERS / "standin"


def _run_worker_script(script: str, records: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DMLC_", "BYTEPS_", "PYTHONPATH"))}
    env.update({"PYTHONPATH": str(STANDIN), "DMLC_NUM_WORKER": "1", "DMLC_NUM_SERVER": "1", "DMLC_WORKER_ID": "0",
                "BYTEPS_LOCAL_RANK": "0", "BYTEPS_LOCAL_SIZE": "1", "DMLC_ROLE": "worker"})
    return subprocess.run([sys.executable, "-c", script, records], env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def test_the_preflight_declares_its_tensor_before_the_push_pull(tmp_path):
    records = tmp_path / "records.jsonl"
    proc = _run_worker_script(PUSH_PULL, str(records))
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [json.loads(line) for line in records.read_text().splitlines()]
    assert [line["event"] for line in lines] == ["start", "step", "end"]
    assert lines[1]["value"] == 1.0


def test_the_stand_in_aborts_a_push_pull_of_an_undeclared_tensor_as_byteps_does(tmp_path):
    undeclared = "\n".join(line for line in PUSH_PULL.splitlines() if "byteps_declare_tensor" not in line)
    assert undeclared != PUSH_PULL
    proc = _run_worker_script(undeclared, str(tmp_path / "records.jsonl"))
    assert proc.returncode < 0  # SIGABRT, as BPS_CHECK's abort()
    assert "byteps.bpsperf.preflight is not initialized" in proc.stderr
