"""``backends/torch.py``: PyTorch DDP ranks: one per worker node on CPUs, one per reserved GPU; what it refuses."""

from __future__ import annotations

import pytest

from pytest_bpsperf import backends
from pytest_bpsperf.backends import PlanError, check_settings
from pytest_bpsperf.backends import resolve as resolve_backend
from pytest_bpsperf.backends.torch import TorchBackend
from pytest_bpsperf.config.settings import Hardware, Source, resolve
from pytest_bpsperf.runs.plan import Node

CPU_NODE = Node("c", "127.0.0.1", 2, 0, "node-0")
GPU_NODE = Node("g", "10.0.0.7", 16, 4, "node-1")


def settings(hardware=None, **values):
    hardware = hardware or Hardware(gpus=0, cores=2)
    return resolve(
        [Source("cli", "command line", {"backend": "torch", **values})], hardware, backends.workload_defaults
    )


def test_it_is_registered_without_servers_and_takes_gpus_where_there_are_some():
    torch = backends.get("torch")
    assert isinstance(torch, TorchBackend)
    assert not backends.has_servers(torch) and backends.gpu_when_present(torch)
    assert backends.has_servers(backends.get("mxnet")) and not backends.gpu_when_present(backends.get("mxnet"))


def test_on_a_cpu_node_a_worker_node_is_one_rank_numbered_by_node():
    s = settings()
    assert s.workers == 2 and s.model == "resnet50"  # torchvision's ResNet-50 (v1.5), not gluoncv's resnet50_v2
    (p0,) = TorchBackend().worker_processes(s, 0, CPU_NODE, [])
    (p1,) = TorchBackend().worker_processes(s, 1, CPU_NODE, [])
    assert (p0.suffix, p0.gpus) == ("", 0)
    assert dict(p0.env) == {"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1"}
    assert dict(p1.env)["RANK"] == "1" and "CUDA_VISIBLE_DEVICES" not in p1.env


def test_on_a_gpu_node_every_reserved_gpu_is_one_rank_that_sees_it_alone():
    s = settings(hardware=Hardware(gpus=4, cores=16, gpu_nodes=2), workers=2)
    ranks = [p for w in range(2) for p in TorchBackend().worker_processes(s, w, GPU_NODE, [6, 3])]
    assert [p.suffix for p in ranks] == [".0", ".1", ".0", ".1"]
    assert [p.env["RANK"] for p in ranks] == ["0", "1", "2", "3"]
    assert {p.env["WORLD_SIZE"] for p in ranks} == {"4"}
    assert [p.env["CUDA_VISIBLE_DEVICES"] for p in ranks] == ["3", "6", "3", "6"]  # sorted: local rank k, k-th id
    assert all(p.gpus == 1 for p in ranks)


@pytest.mark.parametrize(
    "values, message",
    [
        ({"data": "/data/train.rec"}, r"setting 'data' \(/data/train.rec, from command line.*accepted: synthetic"),
        ({"model": "resnet50_v2"}, r"gluoncv's ResNet-50 v2, which backend torch does not have.*resnet50 \(v1.5\)"),
        ({"launch": "bpslaunch"}, r"needs backend byteps, not torch"),
    ],
)
def test_what_torch_does_not_run_is_refused_naming_the_setting(values, message):
    with pytest.raises(PlanError, match=message):
        TorchBackend().check(settings(**values))


def test_bfloat16_is_torchs_alone_and_float16_needs_a_gpu():
    TorchBackend().check(settings(dtype="bfloat16"))  # CPU and GPU
    for name in ("mxnet", "byteps"):
        mx = resolve([Source("cli", "command line", {"backend": name, "dtype": "bfloat16"})], Hardware(gpus=0, cores=2))
        with pytest.raises(PlanError, match=rf"'dtype' \(bfloat16, .*not trained by backend {name}.*backend torch"):
            backends.get(name).check(mx)
    with pytest.raises(
        PlanError, match=r"float16.*no GPU: backend torch trains on its CPUs here; use float32 or bfloat16"
    ):
        check_settings(settings(dtype="float16"), gpus=0)
    check_settings(settings(dtype="float16", hardware=Hardware(gpus=1, cores=16)), gpus=1)


def test_auto_on_gpus_that_byteps_cannot_run_picks_torch_and_says_why():
    def probe(backend, node):
        return None if backend.name == "torch" else "byteps.mxnet does not import: ImportError: libcudart.so.11.0"

    backend, reason = resolve_backend("auto", [CPU_NODE, GPU_NODE], probe)
    assert backend == "torch"
    assert reason == (
        "auto -> torch: on node-1, byteps.mxnet does not import: ImportError: libcudart.so.11.0; "
        "torch trains on its GPUs"
    )


def test_auto_falls_back_to_the_cpu_pick_when_torch_cannot_run_there_either_naming_both():
    backend, reason = resolve_backend("auto", [GPU_NODE], lambda b, n: f"{b.name} does not import")
    assert backend == "mxnet"
    assert reason == "auto -> mxnet: on node-1, byteps does not import; and torch: torch does not import"


def test_the_probe_says_what_does_not_import(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_torchvision(name, *a, **k):
        if name == "torchvision":
            raise ImportError("No module named 'torchvision'")
        return real(name, *a, **k)

    pytest.importorskip("torch")
    monkeypatch.setattr(builtins, "__import__", no_torchvision)
    assert TorchBackend().probe() == "torch and torchvision do not import: ImportError: No module named 'torchvision'"


def test_the_probe_refuses_gpus_that_torch_cannot_see():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine's torch sees a GPU")
    assert TorchBackend().probe() == (
        f"torch {torch.__version__} sees no CUDA device here (torch.cuda.is_available() is False)"
    )
