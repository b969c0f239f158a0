"""The worker's workload in one local process (no parameter server): entry protocol, timing, errors."""

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
        [sys.executable, "-m", "pytest_bpsperf.remote.workload", "--backend", "local", "--steps", "4",
         "--batch-size", "4", "--image-size", "32", "--records", str(tmp_path / "r.jsonl"), *args],
        env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=300,
    )


def _records(tmp_path: Path) -> list:
    return [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("timing", ["overlapped", "breakdown"])
def test_entry_point_gets_the_context_and_is_timed(tmp_path, timing):
    (tmp_path / "team_entry.py").write_text(ENTRY)
    rec = make_rec(tmp_path / "data", images=12, size=40)
    proc = _run(tmp_path, "--entry", "team_entry:build", "--entry-path", str(tmp_path), "--timing", timing,
                "--data", str(rec), "--data-threads", "1")
    assert proc.returncode == 0, proc.stdout
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen == {"backend": "local", "device": "cpu(0)", "shape": [4, 3, 32, 32], "data_shape": [4, 3, 32, 32],
                    "dtype": "float32", "rank": 0, "num_workers": 1, "step_scale": 4, "iter": "MXDataIter"}
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
    (tmp_path / "bad_entry.py").write_text(textwrap.dedent("""
        def build(ctx):
            raise KeyError("no such layer")
    """))
    proc = _run(tmp_path, "--entry", "bad_entry:build", "--entry-path", str(tmp_path))
    assert proc.returncode == 3
    lines = proc.stdout.strip().splitlines()
    assert "bad_entry.py" in proc.stdout  # the user's traceback
    assert lines[-1] == "bpsperf workload: entry point bad_entry:build raised in build(ctx): KeyError: 'no such layer'"


def test_float16_on_cpu_is_refused_with_the_reason(tmp_path):
    proc = _run(tmp_path, "--dtype", "float16", "--model", "resnet18_v1")
    assert proc.returncode == 2
    assert proc.stdout.strip().splitlines()[-1] == (
        "bpsperf workload: dtype float16 needs a GPU: on CPU MXNet has no FP16 gemm (backend byteps on GPUs)")


def test_missing_index_is_named(tmp_path):
    rec = make_rec(tmp_path / "data", images=4, size=40)
    rec.with_suffix(".idx").unlink()
    proc = _run(tmp_path, "--data", str(rec), "--model", "resnet18_v1")
    assert proc.returncode == 1
    assert "train.idx does not exist (a .rec needs its .idx beside it)" in proc.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("spec, backend, expected", [
    ("slowdown:25", "local", (None, 0.25)),  # a slower model slows the single-process reference too
    ("slowdown:25", "mxnet", (None, 0.25)),
    ("dist-slowdown:40", "mxnet", (None, 0.40)),
    ("dist-slowdown:40", "byteps", (None, 0.40)),
    ("dist-slowdown:40", "local", (None, 0.0)),  # only the distributed part is slower
    ("crash-at-step:3", "local", (3, 0.0)),
])
def test_fault_injection_reaches_the_processes_it_names(monkeypatch, spec, backend, expected):
    from pytest_bpsperf.remote.workload import _fault

    monkeypatch.setenv("BPSPERF_FAULT", spec)
    assert _fault(backend) == expected


def test_unknown_fault_names_the_accepted_forms(monkeypatch):
    from pytest_bpsperf.remote.workload import WorkloadError, _fault

    monkeypatch.setenv("BPSPERF_FAULT", "slowdown:lots")
    with pytest.raises(WorkloadError, match=r"BPSPERF_FAULT='slowdown:lots' is not understood; accepted: "
                                            r"crash-at-step:N, slowdown:PERCENT, dist-slowdown:PERCENT"):
        _fault("mxnet")


def test_record_data_on_a_gpu_rank_pins_its_own_gpu_and_augments_as_bytepss_example(tmp_path, monkeypatch):
    mx = pytest.importorskip("mxnet")
    from pytest_bpsperf.remote import data

    rec, idx = tmp_path / "d.rec", tmp_path / "d.idx"
    rec.write_bytes(b"")
    idx.write_bytes(b"")
    seen = {}

    def fake_iterator(**kwargs):
        seen.update(kwargs)
        return object()

    monkeypatch.setattr(mx.io, "ImageRecordIter", fake_iterator)

    class Rank3:  # what mx.gpu(3) is to the iterator
        device_type, device_id = "gpu", 3

    data.records(str(rec), batch_size=4, image_size=224, threads=4, rank=3, parts=8, device=Rank3(), dtype="float16")
    assert seen["device_id"] == 3  # not every local rank's pinned memory on GPU 0
    assert seen["random_resized_crop"] and seen["rand_mirror"] and seen["pca_noise"] == 0.1
    assert (seen["brightness"], seen["contrast"], seen["saturation"]) == (0.4, 0.4, 0.4)
    assert (seen["num_parts"], seen["part_index"]) == (8, 3)
    data.records(str(rec), batch_size=4, image_size=32, threads=1, rank=0, parts=1, device=mx.cpu(), dtype="float32")
    assert seen["device_id"] == 0


def test_sync_every_times_windows_of_steps_that_measurement_reads(tmp_path):
    from pytest_bpsperf.judge.measurement import measure_worker
    from pytest_bpsperf.judge.records import WorkerRecords

    (tmp_path / "entry_mod.py").write_text(ENTRY)
    proc = _run(tmp_path, "--entry", "entry_mod:build", "--entry-path", str(tmp_path), "--steps", "7",
                "--sync-every", "3")
    assert proc.returncode == 0, proc.stdout
    records = _records(tmp_path)
    steps = [r for r in records if r["event"] == "step"]
    # windows of 3, 3 and the last 1 step, each with its images and the last step it ran through
    assert [(s["step"], s["steps"], s["through"], s["images"]) for s in steps] == [
        (0, 3, 2, 12), (1, 3, 5, 12), (2, 1, 6, 4)]
    assert (tmp_path / "seen.json.steps").read_text() == "7"  # every training step ran
    m = measure_worker(WorkerRecords("w", "n", tuple(records)))
    steady = m.steady.steady_steps
    assert m.img_per_sec == pytest.approx(sum(steps[i]["images"] for i in steady) /
                                          sum(steps[i]["total_s"] for i in steady))


def test_sync_every_needs_overlapped_timing_and_enough_steps():
    from pytest_bpsperf.config.preflight import WorkloadSpecError, check_workload
    from pytest_bpsperf.config.settings import Hardware, Source, resolve

    def check(**values):
        s = resolve([Source("cli", "command line", {k: str(v) for k, v in values.items()})], Hardware(0, 2))
        return check_workload(s, gpus=0)

    with pytest.raises(WorkloadSpecError, match="timing=breakdown .* syncs inside every step"):
        check(sync_every=5, timing="breakdown")
    with pytest.raises(WorkloadSpecError, match="20 steps .* make fewer than 3 timed windows of 10"):
        check(sync_every=10)
    settings = check(sync_every=5)
    assert settings.workload("mxnet")["sync_every"] == 5 and "sync_every" not in check().workload("mxnet")


def test_the_scaling_reference_on_a_gpu_updates_in_fp16_with_fp32_master_weights(monkeypatch):
    from mxnet import gluon

    from pytest_bpsperf.remote import workload

    seen = {}

    class Trainer:
        def __init__(self, params, optimizer, optimizer_params, kvstore=None):
            seen.update(optimizer_params, kvstore=kvstore)

    monkeypatch.setattr(gluon, "Trainer", Trainer)
    args = workload.parse_args(["--backend", "local", "--device", "gpu", "--dtype", "float16", "--steps", "4",
                                "--batch-size", "8", "--image-size", "32", "--records", "r.jsonl"])
    device, _rank, _n, make_trainer, _scale, _facts = workload._setup_backend(args)
    make_trainer(None, "sgd", {"learning_rate": 0.1})
    assert device.device_type == "gpu" and seen["multi_precision"] is True and seen["kvstore"] is None
