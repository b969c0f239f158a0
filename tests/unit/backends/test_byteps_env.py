"""``backends/byteps_env.py``: BytePS role environments, as bpslaunch would give each process.

``worker_env``/``server_env`` against bpslaunch's rules, the trace window's variables, and the server
library found without importing it. The same rules checked against bpslaunch itself are in
``tests/e2e/test_e2e_byteps.py``.
"""

from __future__ import annotations

import os
import sys

import pytest

from pytest_bpsperf.backends.byteps_env import (
    TRAINER_MIN_START_STEP,
    BytePSEnvError,
    TraceWindow,
    bpslaunch_node_env,
    server_env,
    server_library,
    worker_env,
)

# -- worker_env / server_env: bpslaunch's rules ---------------------------------


def test_worker_env_for_one_local_rank():
    env = worker_env(worker_id=1, local_rank=2, local_size=4, num_workers=3)
    assert env == {
        "DMLC_WORKER_ID": "1",
        "BYTEPS_LOCAL_RANK": "2",
        "BYTEPS_LOCAL_SIZE": "4",
        "NVIDIA_VISIBLE_DEVICES": "0,1,2,3",
        "CUDA_VISIBLE_DEVICES": "0,1,2,3",
        "BYTEPS_NUMA_ON": "0",
        # the node's local ranks' sockets: a directory of this run and worker node (see socket_path)
        "BYTEPS_SOCKET_PATH": "{scratch}/byteps-w1",
    }


def test_local_size_is_the_number_of_visible_gpus():
    # bpslaunch: local_size = len(NVIDIA_VISIBLE_DEVICES.split(","))
    for size in (1, 2, 8):
        env = worker_env(worker_id=0, local_rank=size - 1, local_size=size, num_workers=2)
        assert len(env["NVIDIA_VISIBLE_DEVICES"].split(",")) == int(env["BYTEPS_LOCAL_SIZE"]) == size


def test_explicit_gpus_are_the_nodes_gpus():
    env = worker_env(worker_id=0, local_rank=1, local_size=2, num_workers=2, gpus=[4, 6])
    assert env["NVIDIA_VISIBLE_DEVICES"] == env["CUDA_VISIBLE_DEVICES"] == "4,6"
    assert env["BYTEPS_LOCAL_RANK"] == "1"


@pytest.mark.parametrize("workers, forced", [(1, True), (2, False), (4, False)])
def test_one_worker_job_is_forced_distributed(workers, forced):
    env = worker_env(worker_id=0, local_rank=0, local_size=1, num_workers=workers)
    assert (env.get("BYTEPS_FORCE_DISTRIBUTED") == "1") is forced


def test_numa_binding_is_off_unless_asked():
    assert worker_env(worker_id=0, local_rank=0, local_size=1, num_workers=1)["BYTEPS_NUMA_ON"] == "0"
    assert worker_env(worker_id=0, local_rank=0, local_size=1, num_workers=1, numa=True)["BYTEPS_NUMA_ON"] == "1"


def test_trace_window_variables():
    window = TraceWindow(start_step=5, end_step=9, dir="/data/trace/w0")
    env = worker_env(worker_id=0, local_rank=1, local_size=2, num_workers=2, trace=window)
    assert {k: v for k, v in env.items() if k.startswith("BYTEPS_TRACE_")} == {
        "BYTEPS_TRACE_ON": "1",
        "BYTEPS_TRACE_START_STEP": "5",
        "BYTEPS_TRACE_END_STEP": "9",
        "BYTEPS_TRACE_DIR": "/data/trace/w0",
    }
    assert window.steps == 5
    assert window.rank_dir(1) == os.path.join("/data/trace/w0", "1")
    assert "BYTEPS_TRACE_ON" not in worker_env(worker_id=0, local_rank=0, local_size=1, num_workers=1)


@pytest.mark.parametrize(
    "start, end, message",
    [
        (0, 5, "start_step must be >= 1"),  # BytePS aborts the worker (BPS_CHECK)
        (-1, 5, "start_step must be >= 1"),
        (5, 5, "end_step must be greater"),
        (6, 5, "end_step must be greater"),
        (1.5, 5, "must be an integer"),
        (True, 5, "must be an integer"),
    ],
)
def test_trace_window_is_validated(start, end, message):
    with pytest.raises(BytePSEnvError, match=message):
        TraceWindow(start_step=start, end_step=end, dir="trace")


@pytest.mark.parametrize("path", ["", "  "])
def test_trace_window_needs_a_directory(path):
    with pytest.raises(BytePSEnvError, match="dir"):
        TraceWindow(start_step=3, end_step=5, dir=path)


def test_trace_window_for_distributed_trainer():
    TraceWindow(TRAINER_MIN_START_STEP, 6, "t").check_for_trainer(training_steps=6)
    with pytest.raises(BytePSEnvError, match="start at step 3 or later"):
        TraceWindow(2, 6, "t").check_for_trainer(training_steps=20)
    with pytest.raises(BytePSEnvError, match="trains only 5 steps"):
        TraceWindow(3, 6, "t").check_for_trainer(training_steps=5)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(worker_id=2, local_rank=0, local_size=1, num_workers=2), "worker_id 2 is out of range"),
        (dict(worker_id=-1, local_rank=0, local_size=1, num_workers=2), "worker_id must be"),
        (dict(worker_id=0, local_rank=2, local_size=2, num_workers=1), "local_rank 2 is out of range"),
        (dict(worker_id=0, local_rank=0, local_size=0, num_workers=1), "local_size must be"),
        (dict(worker_id=0, local_rank=0, local_size=1, num_workers=0), "num_workers must be"),
        (dict(worker_id=0, local_rank=0, local_size=2, num_workers=1, gpus=[0]), "one GPU per local rank"),
        (dict(worker_id=0, local_rank=0, local_size=2, num_workers=1, gpus=[1, 1]), "distinct"),
        (dict(worker_id=0, local_rank=0, local_size=1, num_workers=1, gpus=[-1]), "GPU id"),
        (dict(worker_id=0, local_rank=0, local_size=1, num_workers=1, trace=(1, 2, "t")), "TraceWindow"),
    ],
)
def test_worker_env_rejects_what_bytep_would_not_run(kwargs, message):
    with pytest.raises(BytePSEnvError, match=message):
        worker_env(**kwargs)


def test_server_env():
    assert server_env(num_workers=1) == {"BYTEPS_SERVER_ENGINE_THREAD": "4", "BYTEPS_FORCE_DISTRIBUTED": "1"}
    assert server_env(num_workers=3, engine_threads=8)["BYTEPS_SERVER_ENGINE_THREAD"] == "8"
    with pytest.raises(BytePSEnvError, match="engine_threads"):
        server_env(num_workers=1, engine_threads=0)  # the C++ server aborts (CHECK_GE 1)
    with pytest.raises(BytePSEnvError, match="num_workers"):
        server_env(num_workers=0)


def test_server_library_is_found_without_importing_the_server(tmp_path, monkeypatch):
    pkg = tmp_path / "byteps"
    (pkg / "server").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    # importing byteps.server would start a ps-lite node; the lookup must not run it
    (pkg / "server" / "__init__.py").write_text("raise SystemExit('byteps.server was imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "byteps", raising=False)
    assert server_library() is None
    lib = pkg / "server" / "c_lib.cpython-39-x86_64-linux-gnu.so"
    lib.write_bytes(b"")
    assert server_library() == str(lib)
    assert "byteps.server" not in sys.modules


# -- the preflight: its plan and what it finds -------------------------------------


def test_bpslaunch_node_env_is_worker_env_without_the_per_rank_part():
    window = TraceWindow(3, 6, "trace/worker-1")
    node = bpslaunch_node_env(worker_id=1, local_size=2, num_workers=2, trace=window)
    rank0 = worker_env(worker_id=1, local_rank=0, local_size=2, num_workers=2, trace=window)
    assert node == {
        k: v for k, v in rank0.items() if k not in ("BYTEPS_LOCAL_RANK", "BYTEPS_LOCAL_SIZE", "BYTEPS_NUMA_ON")
    }
