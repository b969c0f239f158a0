"""The worker's workload in one local process (no parameter server): entry protocol, timing, errors.

Each test runs ``python -m pytest_bpsperf.remote.workload`` with MXNet; the
workload's parts that need no process are in ``tests/unit/remote/test_workload.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers.recdata import make_rec

pytest.importorskip("mxnet")


ENTRY = """
import json, os
SEEN = os.environ["SEEN_FILE"]

def build(ctx):
    import mxnet as mx
    from mxnet import autograd, gluon

    net = gluon.nn.Dense(ctx.classes)
    net.initialize(ctx=ctx.device)
    data, label = ctx.next_batch()
    net(data)
    trainer = ctx.make_trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    calls = []
    with open(SEEN, "w") as fh:
        json.dump({"backend": ctx.backend, "device": str(ctx.device), "shape": list(data.shape),
                   "data_shape": list(ctx.data_shape), "dtype": ctx.dtype, "rank": ctx.rank,
                   "num_workers": ctx.num_workers, "step_scale": ctx.step_scale,
                   "iter": type(ctx.data_iter).__name__}, fh)

    def step():
        data, label = ctx.next_batch()
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        ctx.split()
        trainer.step(ctx.step_scale)
        calls.append(1)
        with open(SEEN + ".steps", "w") as fh:
            fh.write(str(len(calls)))

    return step
"""


def _run(tmp_path: Path, *args: str, env: "dict | None" = None) -> subprocess.CompletedProcess:
    import os

    full_env = {**os.environ, "OMP_NUM_THREADS": "1", "SEEN_FILE": str(tmp_path / "seen.json"), **(env or {})}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_bpsperf.remote.workload",
            "--backend",
            "local",
            "--steps",
            "4",
            "--batch-size",
            "4",
            "--image-size",
            "32",
            "--records",
            str(tmp_path / "r.jsonl"),
            *args,
        ],
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        universal_newlines=True,
        timeout=300,
    )


def _records(tmp_path: Path) -> list:
    return [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("timing", ["overlapped", "breakdown"])
def test_entry_point_gets_the_context_and_is_timed(tmp_path, timing):
    (tmp_path / "team_entry.py").write_text(ENTRY)
    rec = make_rec(tmp_path / "data", images=12, size=40)
    proc = _run(
        tmp_path,
        "--entry",
        "team_entry:build",
        "--entry-path",
        str(tmp_path),
        "--timing",
        timing,
        "--data",
        str(rec),
        "--data-threads",
        "1",
    )
    assert proc.returncode == 0, proc.stdout
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen == {
        "backend": "local",
        "device": "cpu(0)",
        "shape": [4, 3, 32, 32],
        "data_shape": [4, 3, 32, 32],
        "dtype": "float32",
        "rank": 0,
        "num_workers": 1,
        "step_scale": 4,
        "iter": "MXDataIter",
    }
    assert (tmp_path / "seen.json.steps").read_text() == "4"  # 4 steps over a 12-image .rec: it starts over
    recs = _records(tmp_path)
    assert recs[0]["entry"] == "team_entry:build" and recs[0]["timing"] == timing and recs[0]["data"] == "records"
    steps = [r for r in recs if r["event"] == "step"]
    assert len(steps) == 4 and recs[-1]["event"] == "end"
    if timing == "breakdown":
        assert all(abs(s["compute_s"] + s["sync_s"] - s["total_s"]) < 1e-9 for s in steps)
    else:
        assert all("compute_s" not in s and "sync_s" not in s for s in steps)


def test_error_in_build_names_the_entry_point_last(tmp_path):
    (tmp_path / "bad_entry.py").write_text(
        textwrap.dedent("""
        def build(ctx):
            raise KeyError("no such layer")
    """)
    )
    proc = _run(tmp_path, "--entry", "bad_entry:build", "--entry-path", str(tmp_path))
    assert proc.returncode == 3
    lines = proc.stdout.strip().splitlines()
    assert "bad_entry.py" in proc.stdout  # the user's traceback
    assert lines[-1] == "bpsperf workload: entry point bad_entry:build raised in build(ctx): KeyError: 'no such layer'"


def test_float16_on_cpu_is_refused_with_the_reason(tmp_path):
    proc = _run(tmp_path, "--dtype", "float16", "--model", "resnet18_v1")
    assert proc.returncode == 2
    assert proc.stdout.strip().splitlines()[-1] == (
        "bpsperf workload: dtype float16 needs a GPU: on CPU MXNet has no FP16 gemm (backend byteps on GPUs)"
    )


def test_missing_index_is_named(tmp_path):
    rec = make_rec(tmp_path / "data", images=4, size=40)
    rec.with_suffix(".idx").unlink()
    proc = _run(tmp_path, "--data", str(rec), "--model", "resnet18_v1")
    assert proc.returncode == 1
    assert "train.idx does not exist (a .rec needs its .idx beside it)" in proc.stdout.strip().splitlines()[-1]


def test_sync_every_times_windows_of_steps_that_measurement_reads(tmp_path):
    from pytest_bpsperf.judge.measurement import measure_worker
    from pytest_bpsperf.runs.output import WorkerRecords

    (tmp_path / "entry_mod.py").write_text(ENTRY)
    proc = _run(
        tmp_path, "--entry", "entry_mod:build", "--entry-path", str(tmp_path), "--steps", "7", "--sync-every", "3"
    )
    assert proc.returncode == 0, proc.stdout
    records = _records(tmp_path)
    steps = [r for r in records if r["event"] == "step"]
    # windows of 3, 3 and the last 1 step, each with its images and the last step it ran through
    assert [(s["step"], s["steps"], s["through"], s["images"]) for s in steps] == [
        (0, 3, 2, 12),
        (1, 3, 5, 12),
        (2, 1, 6, 4),
    ]
    assert (tmp_path / "seen.json.steps").read_text() == "7"  # every training step ran
    m = measure_worker(WorkerRecords("w", "n", tuple(records)))
    steady = m.steady.steady_steps
    assert m.img_per_sec == pytest.approx(
        sum(steps[i]["images"] for i in steady) / sum(steps[i]["total_s"] for i in steady)
    )


def test_the_start_record_names_secret_looking_variables_and_hides_their_values(tmp_path):
    token = "ghp_s3cr3tV4lueThatMustNeverBeWritten"
    (tmp_path / "entry_mod.py").write_text(ENTRY)
    proc = _run(
        tmp_path,
        "--entry",
        "entry_mod:build",
        "--entry-path",
        str(tmp_path),
        env={
            "BPSPERF_PR_TOKEN": token,
            "BPSPERF_CHOSEN_VARS": "HF_TOKEN,OMP_WAIT_POLICY",
            "HF_TOKEN": token,
            "OMP_WAIT_POLICY": "PASSIVE",
        },
    )
    assert proc.returncode == 0, proc.stdout
    env = _records(tmp_path)[0]["env"]  # what the role process itself wrote
    assert env["BPSPERF_PR_TOKEN"] == env["HF_TOKEN"] == "***" and env["OMP_WAIT_POLICY"] == "PASSIVE"
    assert token not in (tmp_path / "r.jsonl").read_text() and token not in proc.stdout


#: An entry whose step is mostly compute: EXTRA products before ctx.split() (its forward and backward).
HEAVY = ENTRY.replace(
    "        loss.backward()\n        ctx.split()",
    "        loss.backward()\n        for _ in range(40):\n            mx.nd.dot(big, big)\n        ctx.split()",
).replace("    calls = []", "    calls = []\n    big = mx.nd.ones((160, 160), ctx=ctx.device)")


@pytest.mark.parametrize("split", [True, False], ids=["split", "no-split"])
def test_diagnostic_steps_follow_the_timed_ones_and_split_each_part(tmp_path, split):
    from pytest_bpsperf.judge.breakdown import run_breakdown
    from pytest_bpsperf.judge.measurement import measure
    from pytest_bpsperf.runs.output import RunOutput, WorkerRecords

    source = HEAVY if split else HEAVY.replace("        ctx.split()\n", "")
    (tmp_path / "heavy.py").write_text(source)
    rec = make_rec(tmp_path / "data", images=12, size=40)
    proc = _run(
        tmp_path,
        "--entry",
        "heavy:build",
        "--entry-path",
        str(tmp_path),
        "--diagnostic-steps",
        "3",
        "--data",
        str(rec),
        "--data-threads",
        "1",
    )
    assert proc.returncode == 0, proc.stdout
    records = _records(tmp_path)
    events = [r["event"] for r in records]
    # the timed steps first, untouched (overlapped: no split), then the diagnostic steps, then the end
    assert events == ["start"] + ["step"] * 4 + ["diagnostic"] * 3 + ["end"]
    assert all("compute_s" not in r for r in records if r["event"] == "step")
    assert (tmp_path / "seen.json.steps").read_text() == "7"
    diag = [r for r in records if r["event"] == "diagnostic"]
    assert all(r["input_s"] > 0 for r in diag)  # decoding a .rec batch is waited for
    if split:
        # both parts measured, each its own figure (which one is larger is the machine's load, not the rule)
        assert all(r["unsplit_s"] is None and r["compute_s"] > 0 and r["sync_s"] >= 0 for r in diag)
        assert all(r["input_s"] + r["compute_s"] + r["sync_s"] == pytest.approx(r["total_s"]) for r in diag)
    else:  # without ctx.split() compute and push/pull are one figure
        assert all(r["compute_s"] is None and r["sync_s"] is None and r["unsplit_s"] > 0 for r in diag)
    worker = WorkerRecords("w", "n", tuple(records))
    found = run_breakdown([worker])
    assert found.steps == 3 and found.workers == 1 and (found.compute_s is not None) == split
    # the diagnostic steps never count as throughput: img/s is the timed steps' alone
    m = measure(
        RunOutput(workers=(worker,), roles=(), bringup_s=0, teardown_s=0, wall_s=1, log_dir="", backend="local")
    )
    assert len(m.workers[0].step_seconds) == 4 and m.breakdown == found
