"""``remote/workload.py`` without a process: faults, record data on a GPU rank, sync_every, fp16, start records.

The workload run in one local process is in ``tests/e2e/test_e2e_workload_local.py``.
"""

from __future__ import annotations

import pytest

from pytest_bpsperf.remote.workload import diagnostic_fields

pytest.importorskip("mxnet")


@pytest.mark.parametrize(
    "spec, backend, expected",
    [
        ("slowdown:25", "local", (None, 0.25)),  # a slower model slows the single-process reference too
        ("slowdown:25", "mxnet", (None, 0.25)),
        ("dist-slowdown:40", "mxnet", (None, 0.40)),
        ("dist-slowdown:40", "byteps", (None, 0.40)),
        ("dist-slowdown:40", "local", (None, 0.0)),  # only the distributed part is slower
        ("crash-at-step:3", "local", (3, 0.0)),
    ],
)
def test_fault_injection_reaches_the_processes_it_names(monkeypatch, spec, backend, expected):
    from pytest_bpsperf.remote.workload import _fault

    monkeypatch.setenv("BPSPERF_FAULT", spec)
    assert _fault(backend) == expected


def test_unknown_fault_names_the_accepted_forms(monkeypatch):
    from pytest_bpsperf.remote.workload import WorkloadError, _fault

    monkeypatch.setenv("BPSPERF_FAULT", "slowdown:lots")
    with pytest.raises(
        WorkloadError,
        match=r"BPSPERF_FAULT='slowdown:lots' is not understood; accepted: "
        r"crash-at-step:N, slowdown:PERCENT, dist-slowdown:PERCENT",
    ):
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


def test_sync_every_needs_overlapped_timing_and_enough_steps():
    from pytest_bpsperf.config.settings import Hardware, Source, resolve
    from pytest_bpsperf.config.workload_spec import WorkloadSpecError, check_workload

    def check(**values):
        s = resolve([Source("cli", "command line", {k: str(v) for k, v in values.items()})], Hardware(0, 2))
        return check_workload(s)

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
    args = workload.parse_args(
        [
            "--backend",
            "local",
            "--device",
            "gpu",
            "--dtype",
            "float16",
            "--steps",
            "4",
            "--batch-size",
            "8",
            "--image-size",
            "32",
            "--records",
            "r.jsonl",
        ]
    )
    device, _rank, _n, make_trainer, _scale, _facts = workload._setup_backend(args)
    make_trainer(None, "sgd", {"learning_rate": 0.1})
    assert device.device_type == "gpu" and seen["multi_precision"] is True and seen["kvstore"] is None


def test_start_records_say_where_a_rank_may_run(tmp_path):
    from pytest_bpsperf.remote.workload import cpu_placement

    (tmp_path / "node0").mkdir()
    (tmp_path / "node0" / "cpulist").write_text("0-1023\n")
    (tmp_path / "node1").mkdir()
    (tmp_path / "node1" / "cpulist").write_text("4096-4100\n")
    found = cpu_placement(str(tmp_path))
    assert found["cpu_affinity"] and found["numa_nodes"] == [0]
    assert cpu_placement(str(tmp_path / "absent"))["numa_nodes"] is None


def test_the_marks_of_a_diagnostic_step_make_its_parts():
    assert diagnostic_fields(10.0, 10.5, 12.0, 13.0) == {
        "total_s": 3.0,
        "input_s": 0.5,
        "compute_s": 1.5,
        "sync_s": 1.0,
        "unsplit_s": None,
    }
    # no ctx.next_batch(): the input wait is part of compute; no ctx.split(): compute and push/pull are one
    assert diagnostic_fields(10.0, None, 12.0, 13.0)["compute_s"] == 2.0
    assert diagnostic_fields(10.0, 10.5, None, 13.0) == {
        "total_s": 3.0,
        "input_s": 0.5,
        "compute_s": None,
        "sync_s": None,
        "unsplit_s": 2.5,
    }
