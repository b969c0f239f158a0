"""Code written for BytePS's MXNet plugin, run under the stand-in that enforces BytePS's rules.

The stand-in (``tests/helpers/standin``) runs on CPU MXNet and fails where BytePS 0.2.5 fails; each
rule cites BytePS's source there (checked against it by ``tests/unit/project/test_standin_sources.py``).
Here each rule is seen to hold in real processes: the preflight's worker, a wrong order of calls, a
node of two local ranks whose DistributedTrainer broadcasts the parameters itself. Runs through the
plugin on a simulated GPU cluster are in ``test_e2e_gpu_sim.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys

from helpers.gpu_sim import STANDIN, standin_env
from pytest_bpsperf.remote import byteps_preflight

PREFLIGHT = byteps_preflight.__file__


def _run(code_or_path: "str | list[str]", tmp_path, **env: str) -> subprocess.CompletedProcess:
    argv = code_or_path if isinstance(code_or_path, list) else ["-c", code_or_path]
    return subprocess.run(
        [sys.executable, *argv],
        env=standin_env(tmp_path, **env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


ONE_WORKER = {
    "DMLC_NUM_WORKER": "1",
    "DMLC_NUM_SERVER": "1",
    "DMLC_WORKER_ID": "0",
    "BYTEPS_LOCAL_RANK": "0",
    "BYTEPS_LOCAL_SIZE": "1",
    "DMLC_ROLE": "worker",
}


def test_the_preflight_declares_its_tensor_before_the_push_pull(tmp_path):
    records = tmp_path / "records.jsonl"
    proc = _run([PREFLIGHT, str(records)], tmp_path, **ONE_WORKER)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [json.loads(line) for line in records.read_text().splitlines()]
    assert [line["event"] for line in lines] == ["start", "step", "end"]
    assert lines[1]["value"] == 1.0


def test_the_stand_in_aborts_a_push_pull_of_an_undeclared_tensor_as_byteps_does(tmp_path):
    source = open(PREFLIGHT).read()
    undeclared = "\n".join(line for line in source.splitlines() if "bps.byteps_declare_tensor(" not in line)
    assert undeclared != source
    proc = _run(["-c", undeclared, str(tmp_path / "records.jsonl")], tmp_path, **ONE_WORKER)
    assert proc.returncode < 0  # SIGABRT, as BPS_CHECK's abort()
    assert "byteps.bpsperf.preflight is not initialized" in proc.stderr


RULE = """
import os, sys
import mxnet as mx
import byteps.mxnet as bps
case = sys.argv[1]
if case == "raises":  # the rules BytePS's Python enforces with an exception: all in this one process
    for what, call in (("rank", bps.rank), ("trainer-list", None), ("broadcast-gluon", None)):
        if what == "rank":
            try:
                bps.rank()
            except ValueError as exc:
                print("rank before init:", exc)
            bps.init()
            continue
        net = mx.gluon.nn.Dense(2, in_units=2)
        net.initialize(ctx=mx.gpu(0))
        try:
            if what == "trainer-list":
                bps.DistributedTrainer(list(net.collect_params().values()), "sgd")
            else:
                bps.broadcast_parameters(net.collect_params())
        except TypeError as exc:
            print(what + ":", exc)
    sys.exit(0)
bps.init()
x = mx.nd.ones((4,), ctx=mx.gpu(bps.local_rank()))
if case == "two-shapes":
    bps.byteps_declare_tensor("t")
    bps.byteps_push_pull(x, name="t")
    bps.byteps_push_pull(mx.nd.ones((5,)), name="t")
if case == "no-name":
    bps.byteps_declare_tensor("t")
    bps.byteps_push_pull(x)
if case == "average":
    bps.byteps_declare_tensor("a")
    bps.byteps_push_pull(x, name="a", is_average=True)
    print("value", x.asnumpy()[0], "size", bps.size(), "rank", bps.rank())
"""

#: (case of RULE, variables over ONE_WORKER's, what the process says as it fails): each aborts its process
ABORTS = [
    ("init", {"DMLC_WORKER_ID": None}, 'Check failed: getenv("DMLC_WORKER_ID") error: env DMLC_WORKER_ID not set'),
    (
        "init",
        {"DMLC_NUM_SERVER": None, "BYTEPS_FORCE_DISTRIBUTED": "1"},
        "launch distributed job, but env DMLC_NUM_SERVER not set",
    ),
    (
        "init",
        {"BYTEPS_LOCAL_RANK": "1", "BYTEPS_LOCAL_SIZE": "2", "CUDA_VISIBLE_DEVICES": "3"},
        "cudaSetDevice(1): invalid device ordinal",
    ),
    ("two-shapes", {}, "byteps.t was push_pulled as ((4,), 'float32'), now as ((5,), 'float32')"),
    ("no-name", {}, "byteps.noname.1 is not initialized"),
]


def test_the_stand_in_fails_where_byteps_fails(tmp_path):
    """Each rule broken once: the aborts in a process each, the exceptions in one (all at once: each costs
    an MXNet import)."""
    cases = [*ABORTS, ("raises", {}, "")]
    procs = []
    for i, (case, env, _failure) in enumerate(cases):
        (tmp_path / str(i)).mkdir()
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", RULE, case],
                env=standin_env(tmp_path / str(i), **{**ONE_WORKER, **env}),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    outs = [p.communicate(timeout=180) for p in procs]
    wrong = [
        f"{case} {env}: exit {proc.returncode}, expected {failure!r}: {err[-600:]}"
        for (case, env, failure), proc, (_out, err) in zip(ABORTS, procs, outs)
        if proc.returncode >= 0 or failure not in err
    ]  # an abort: killed by SIGABRT
    assert wrong == []
    out, err = outs[-1]
    assert procs[-1].returncode == 0, err
    assert "rank before init: BytePS has not been initialized; use bps.init()." in out
    assert "trainer-list: DistributedTrainer takes a gluon ParameterDict" in out
    assert "broadcast-gluon: For gluon users, you should not call this function." in out


def test_is_average_divides_the_sum_by_size(tmp_path):
    # one node of its own (non-distributed): BytePS reduces there; the sum of one process, divided by 1
    proc = _run(["-c", RULE, "average"], tmp_path, **{**ONE_WORKER, "DMLC_WORKER_ID": "3", "BYTEPS_GLOBAL_RANK": "5"})
    assert proc.returncode == 0, proc.stderr
    assert "value 1.0 size 1 rank 5" in proc.stdout  # BYTEPS_GLOBAL_RANK wins over worker id and local rank


NODE = """
import sys
import mxnet as mx
import byteps.mxnet as bps
from mxnet import autograd, gluon
bps.init()
ctx = mx.gpu(bps.local_rank())
net = gluon.nn.Dense(3, in_units=4)
mx.random.seed(1 + bps.rank())  # each rank starts from other parameters
net.initialize(mx.init.Uniform(), ctx=ctx)
before = net.weight.data().asnumpy().sum()
trainer = bps.DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
x = mx.nd.ones((2, 4), ctx=ctx) * (1 + bps.local_rank())
for _ in range(2):
    with autograd.record():
        loss = net(x).sum()
    loss.backward()
    trainer.step(2)
mx.nd.waitall()
print("rank", bps.rank(), "before", before, "after", net.weight.data().asnumpy().tolist(), flush=True)
"""


def test_a_node_of_two_local_ranks_trains_as_one_after_the_trainers_own_broadcast(tmp_path):
    """DistributedTrainer broadcasts rank 0's parameters at its first step, then sums the gradients of both
    ranks (each computed on other data): after two steps both hold the same parameters."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", NODE],
            env=standin_env(
                tmp_path,
                DMLC_NUM_WORKER="1",
                DMLC_WORKER_ID="0",
                BYTEPS_LOCAL_RANK=str(rank),
                BYTEPS_LOCAL_SIZE="2",
                CUDA_VISIBLE_DEVICES="0,1",
                DMLC_ROLE="worker",
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in (0, 1)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-1500:] for _o, err in outs]
    got = {}
    for out, err in outs:
        words = out.split()
        got[int(words[1])] = (float(words[3]), words[5:])
        assert "DistributedTrainer broadcast 2 parameters from rank 0 at its first step" in err
    assert got[0][0] != got[1][0]  # they started apart ...
    assert got[0][1] == got[1][1]  # ... and train as one


def test_two_jobs_on_one_socket_path_are_refused(tmp_path):
    """BytePS would unlink a live job's socket and take it over (communicator.cc:146-147): the stand-in aborts."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import socket, sys, time; s = socket.socket(socket.AF_UNIX, "
            "socket.SOCK_DGRAM); s.bind(sys.argv[1]); print('bound', flush=True); time.sleep(60)",
            str(tmp_path / "socket_send_0"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "bound"
        proc = _run([PREFLIGHT, str(tmp_path / "r.jsonl")], tmp_path, **ONE_WORKER)
    finally:
        holder.kill()
        holder.wait()
    assert proc.returncode < 0
    assert f"{tmp_path}/socket_send_0 is bound by a live process: another BytePS job" in proc.stderr
    assert STANDIN.is_dir()
