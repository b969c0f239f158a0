"""Backend choice and run bookkeeping (no Ray)."""

from __future__ import annotations

import pytest

from pytest_bpsperf.backends import PlanError
from pytest_bpsperf.backends import resolve as resolve_backend
from pytest_bpsperf.runs.plan import Node
from pytest_bpsperf.runs.spec import job_dir_name

CPU = Node("c", "127.0.0.1", 2, 0, "node-0")
GPU = Node("g", "127.0.0.1", 16, 4, "node-1")


def never_called(backend, node):
    raise AssertionError("the byteps probe must not run")


def test_explicit_cpu_backend_is_kept_without_a_probe():
    assert resolve_backend("mxnet", [GPU], never_called)[0] == "mxnet"


def test_explicit_gpu_backend_is_probed_on_a_gpu_node_and_refused_where_it_cannot_run():
    probed = []
    assert resolve_backend("byteps", [CPU, GPU], lambda b, n: probed.append(n) or None)[0] == "byteps"
    assert probed == [GPU]
    with pytest.raises(PlanError, match="backend byteps cannot run on the GPU node node-1: byteps.mxnet does not "
                                        "import: ImportError: libcudart.so.11.0"):
        resolve_backend("byteps", [GPU], lambda b, n: "byteps.mxnet does not import: ImportError: libcudart.so.11.0")
    # without GPU nodes there is nothing to probe: planning says what is missing
    assert resolve_backend("byteps", [CPU], never_called)[0] == "byteps"


def test_auto_without_gpus_picks_mxnet_and_says_why():
    backend, reason = resolve_backend("auto", [CPU], never_called)
    assert backend == "mxnet"
    assert reason == "auto -> mxnet: the cluster has no GPU"


def test_auto_with_gpus_and_byteps_picks_byteps():
    probed = []
    backend, reason = resolve_backend("auto", [CPU, GPU], lambda b, n: probed.append(n) or None)
    assert backend == "byteps"
    assert probed == [GPU]  # the plugin is probed where the workers would run
    assert "4 GPU(s)" in reason


def test_auto_with_gpus_but_no_byteps_plugin_picks_mxnet_with_the_import_error():
    backend, reason = resolve_backend("auto", [GPU], lambda b, n: "byteps.mxnet does not import: ImportError: libcudart.so.11.0")
    assert backend == "mxnet"
    assert "on node-1, byteps.mxnet does not import: ImportError: libcudart.so.11.0" in reason


@pytest.mark.parametrize(
    "nodeid, expected",
    [
        ("perf_tests/test_a.py::test_x[omp-passive+extra-servers]", "test_x-omp-passive+extra-servers-"),
        ("t.py::test_y", "test_y"),
        ("t.py::Class::test_z[a b/c]", "test_z-a-b-c-"),
    ],
)
def test_job_dir_name_is_file_system_safe(nodeid, expected):
    assert job_dir_name(nodeid) == expected.rstrip("-")
