"""End-to-end (mxnet backend, real roles): timing modes, record data, the team's own training code.

One pytest session in a subprocess runs small perf tests on the embedded
Ray: the breakdown diagnostic, a generated ``.rec`` read by every worker's shard, and the
example's custom Gluon model (``examples/custom_model.py``) on that data, plus
an entry point whose step raises.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers.paths import ROOT
from helpers.procs import role_processes
from helpers.recdata import make_rec

pytest.importorskip("mxnet")
pytest.importorskip("ray")

EXAMPLE = ROOT / "examples" / "custom_model.py"

PERF_TESTS = """
import pytest

pytestmark = pytest.mark.perf


@pytest.mark.bpsperf(timing="breakdown")
def test_breakdown(bpsperf_train):
    assert bpsperf_train().img_per_sec > 0


@pytest.mark.bpsperf(data={rec!r}, data_threads=1)
def test_records(bpsperf_train):
    assert bpsperf_train().img_per_sec > 0


@pytest.mark.bpsperf(entry="custom_model:build", data={rec!r}, data_threads=1)
def test_custom(bpsperf_train):
    assert bpsperf_train().img_per_sec > 0


@pytest.mark.bpsperf(entry="broken_model:build")
def test_custom_broken(bpsperf_train):
    bpsperf_train()


@pytest.mark.bpsperf(entry="two_pass:build", tricks="omp-passive", steps=8, batch_size=8)
def test_extra_forward_passes(bpsperf_train):
    assert bpsperf_train().img_per_sec > 0
"""

#: A step that runs two more inference passes after backward: this made MXNet's server abort in
#: every run ("Check failed: !stored.is_none(): init K first") before the harness initialised the
#: kvstore itself before the first step.
TWO_PASS = """
def build(ctx):
    import mxnet as mx
    from mxnet import autograd, gluon
    from gluoncv.model_zoo import get_model

    net = get_model("resnet18_v2", classes=ctx.classes, pretrained=False)
    net.initialize(mx.init.Xavier(), ctx=ctx.device)
    net.hybridize()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    data, _ = ctx.next_batch()
    net(data)
    trainer = ctx.make_trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})

    def step():
        data, label = ctx.next_batch()
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        net(data)
        net(data)
        trainer.step(ctx.step_scale)

    return step
"""

BROKEN = """
def build(ctx):
    calls = []

    def step():
        calls.append(1)
        if len(calls) == 3:
            raise ValueError("shapes do not match in the team's layer")

    return step
"""

INI = """
[pytest]
bpsperf_steps = 6
bpsperf_batch_size = 4
bpsperf_image_size = 32
bpsperf_workers = 2
bpsperf_omp_threads = 2
bpsperf_scaling = off
bpsperf_model = resnet18_v1
"""


def test_timing_modes_record_data_and_custom_entry_end_to_end(pytester, tmp_path):
    rec = make_rec(tmp_path / "data", images=24, size=40)
    pytester.makeini(INI)
    pytester.makepyfile(
        test_perf=PERF_TESTS.format(rec=str(rec)),
        custom_model=EXAMPLE.read_text(),
        broken_model=BROKEN,
        two_pass=TWO_PASS,
    )
    out = tmp_path / "result.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-m", "perf", f"--bpsperf-json={out}")
    result.assert_outcomes(passed=4, failed=1)
    doc = json.loads(out.read_text())
    tests = {t["test"].split("::")[-1]: t for t in doc["tests"]}
    assert set(tests) == {"test_breakdown", "test_records", "test_custom", "test_extra_forward_passes"}
    # the user's step with extra passes trained every step; the server did not abort
    assert all(r["exit_code"] == 0 for r in tests["test_extra_forward_passes"]["roles"])

    def starts(entry):
        return [
            json.loads(Path(entry["log_dir"], f"worker-{i}.records.jsonl").read_text().splitlines()[0])
            for i in range(2)
        ]

    # overlapped by default (also checked by test_e2e_mxnet): no split, recorded as such
    over = tests["test_records"]
    assert over["timing"] == "overlapped" and over["settings"]["timing"] == "overlapped"
    assert over["compute_s_per_step"] is None and over["sync_s_per_step"] is None
    assert {s["timing"] for s in starts(over)} == {"overlapped"}
    # breakdown: every step split into compute and sync that add up to the step
    brk = tests["test_breakdown"]
    assert brk["timing"] == "breakdown" and brk["compute_s_per_step"] > 0 and brk["sync_s_per_step"] > 0
    records = [json.loads(line) for line in Path(brk["log_dir"], "worker-0.records.jsonl").read_text().splitlines()]
    steps = [r for r in records if r["event"] == "step"]
    assert len(steps) == brk["settings"]["steps"]
    assert all(abs(s["compute_s"] + s["sync_s"] - s["total_s"]) < 1e-6 for s in steps)
    # after the timed steps, the diagnostic ones (breakdown_steps), never counted as steps; then the end
    assert [r["event"] for r in records[len(steps) + 1 :]] == ["diagnostic"] * 3 + ["end"]
    assert brk["breakdown"]["steps"] == 3 and brk["breakdown"]["compute_s"] > 0
    result.stdout.fnmatch_lines(
        [
            "*test_breakdown*compute*sync*(timing breakdown: serialized steps)*",
            "*timing breakdown (diagnostic: each step serialized*",
        ]
    )
    # record data: each worker decoded its own shard of the .rec
    for name in ("test_records", "test_custom"):
        got = starts(tests[name])
        assert [s["data"] for s in got] == ["records", "records"]
        assert sorted(s["rank"] for s in got) == [0, 1] and {s["num_workers"] for s in got} == {2}
        assert tests[name]["settings"]["data"] == str(rec)
    # the team's own code ran, not the model zoo
    assert {s["entry"] for s in starts(tests["test_custom"])} == {"custom_model:build"}
    assert tests["test_custom"]["settings"]["entry"] == "custom_model:build"
    # an error in user code fails its test naming the function, with the role's log tail
    result.stdout.fnmatch_lines(
        [
            "*test_custom_broken*",
            "*--- role worker-? on node *: exit code 3; log *worker-?.log",
            "*ValueError: shapes do not match in the team's layer",
            "*bpsperf workload: entry point broken_model:build raised in step(): ValueError: shapes do not match*",
        ]
    )
    assert role_processes(doc["session_info"]["run_id"]) == []
    assert os.path.isfile(rec)
