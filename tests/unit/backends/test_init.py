"""``backends/__init__.py``: the backend a session picks (``auto``), and what it refuses before Ray."""

from __future__ import annotations

import pytest

from pytest_bpsperf.backends import PlanError
from pytest_bpsperf.backends import resolve as resolve_backend
from pytest_bpsperf.runs.plan import Node

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
    with pytest.raises(
        PlanError,
        match="backend byteps cannot run on the GPU node node-1: byteps.mxnet does not "
        "import: ImportError: libcudart.so.11.0",
    ):
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
    backend, reason = resolve_backend(
        "auto", [GPU], lambda b, n: "byteps.mxnet does not import: ImportError: libcudart.so.11.0"
    )
    assert backend == "mxnet"
    assert "on node-1, byteps.mxnet does not import: ImportError: libcudart.so.11.0" in reason


@pytest.mark.parametrize(
    "backend, values, message",
    [
        (
            "mxnet",
            {"dtype": "float16"},
            r"setting 'dtype' \(float16, from command line option --bpsperf-dtype\) needs "
            r"GPU workers: backend mxnet trains on CPU.*FP16 gemm",
        ),
        (
            "auto",
            {"dtype": "float16"},
            r"setting 'dtype' .*backend mxnet trains on CPU.*\(backend auto is mxnet on this "
            r"machine: no GPU\)",
        ),
        (
            "mxnet",
            {"launch": "bpslaunch"},
            r"setting 'launch' \(bpslaunch, from command line option --bpsperf-launch\) "
            r".*needs backend byteps, not mxnet",
        ),
    ],
)
def test_what_the_workers_cannot_run_is_refused_before_ray(backend, values, message):
    # these were also written in config/workload_spec.py, with the backends' names
    from pytest_bpsperf import backends
    from pytest_bpsperf.config.settings import Hardware, Source, resolve

    s = resolve([Source("cli", "command line", {"backend": backend, **values})], Hardware(0, 2))
    with pytest.raises(backends.PlanError, match=message):
        backends.check_settings(s, gpus=0)


@pytest.mark.parametrize(
    "backend, gpus, ray_address, launch",
    [
        ("byteps", 0, "", "direct"),
        ("auto", 2, "", "direct"),
        ("auto", 0, "auto", "direct"),
        ("byteps", 0, "", "bpslaunch"),
        ("auto", 0, "auto", "bpslaunch"),
    ],
)
def test_what_workers_may_run_passes_before_ray(backend, gpus, ray_address, launch):
    # auto on an existing cluster is known once resolved there: planning checks it then
    from pytest_bpsperf import backends
    from pytest_bpsperf.config.settings import Hardware, Source, resolve

    values = {"dtype": "float16", "backend": backend, "ray_address": ray_address or "local", "launch": launch}
    backends.check_settings(resolve([Source("cli", "command line", values)], Hardware(gpus, 2)), gpus=gpus)


def test_auto_means_one_thing(cpu_backend, monkeypatch):
    # defaults, resolution and the check before Ray all read what auto picks from one place
    from pytest_bpsperf import backends
    from pytest_bpsperf.config.settings import Hardware, Source, resolve
    from pytest_bpsperf.runs.plan import Node

    monkeypatch.setitem(backends.AUTO, "cpu", cpu_backend)
    assert backends.workload_defaults("auto", "cpu") == {"steps": 14, "batch_size": 3, "image_size": 48}
    assert backends.resolve("auto", [Node("n", "127.0.0.1", 2)], probe=lambda b, n: None)[0] == cpu_backend
    s = resolve([Source("cli", "command line", {"launch": "bpslaunch"})], Hardware(0, 2))
    with pytest.raises(backends.PlanError, match=f"needs backend byteps, not {cpu_backend}"):
        backends.check_settings(s, gpus=0)
