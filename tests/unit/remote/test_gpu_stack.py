"""``remote/gpu_stack.py``: which GPUs the documented CUDA stack runs on, and how a node's stack is read."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    "gpu, capability, ok",
    [
        ("Tesla P100", 6.0, True),
        ("Tesla V100", 7.0, True),
        ("Tesla T4", 7.5, True),
        ("A100", 8.0, True),
        ("NVIDIA A10", 8.6, True),
        ("NVIDIA L4", 8.9, False),
        ("NVIDIA H200", 9.0, False),
        ("NVIDIA B200", 10.0, False),
        ("Tesla K80", 3.7, False),
    ],
)
def test_the_documented_stack_runs_from_maxwell_to_ampere(gpu, capability, ok):
    from pytest_bpsperf.remote.gpu_stack import stack_problem

    problem = stack_problem([(0, gpu, capability)], ((11, 2), "mxnet-cu112"))
    assert (problem is None) == ok, problem
    if capability == 9.0:
        assert problem.startswith("GPU 0 (NVIDIA H200) is compute capability 9.0 (Hopper)")
        assert "Hopper needs CUDA >= 11.8" in problem and "mxnet-cu112 (CUDA 11.2)" in problem
    if capability == 10.0:
        assert "needs CUDA >= 12.8" in problem


def test_the_stack_check_reads_the_builds_cuda_and_the_gpus():
    from pytest_bpsperf.remote.gpu_stack import mxnet_cuda, node_gpus, stack_problem

    assert mxnet_cuda(["mxnet-cu112"]) == ((11, 2), "mxnet-cu112")
    assert mxnet_cuda(["mxnet"]) is None and mxnet_cuda(["mxnet-cu102", "x"]) == ((10, 2), "mxnet-cu102")
    gpus = node_gpus(lambda argv: "0, NVIDIA H200, 9.0\n1, NVIDIA H200, 9.0\n")
    assert gpus == [(0, "NVIDIA H200", 9.0), (1, "NVIDIA H200", 9.0)]
    assert node_gpus(lambda argv: (_ for _ in ()).throw(OSError("no nvidia-smi"))) == []
    assert stack_problem([], ((11, 2), "mxnet-cu112")) is None  # nothing to tell: no refusal
    assert stack_problem(gpus, None) is None  # a CPU build (or one from source): nothing to tell
