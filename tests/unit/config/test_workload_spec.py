"""Workload settings checked before anything starts: model names, record data, entry points; float16 left to the
backend.

That a bad one stops a session before Ray is in ``tests/pytester/test_workload_spec_sessions.py``.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers.dists import gluoncv_or_skip, zoo_or_skip
from pytest_bpsperf.config.parsers import EntryPoint
from pytest_bpsperf.config.settings import Hardware, Source, resolve
from pytest_bpsperf.config.workload_spec import WorkloadSpecError, check_workload, resolve_entry, zoo_model_names

CPU = Hardware(gpus=0, cores=2)


def settings(**values):
    return resolve([Source("cli", "command line", values)], CPU)


def test_zoo_names_are_gluoncvs_own_list_without_importing_it():
    gluoncv_or_skip()
    names = zoo_model_names()
    listed = subprocess.run(
        [
            sys.executable,
            "-c",
            "from pytest_bpsperf.remote.entry import import_gluoncv; import_gluoncv(); "
            "from gluoncv.model_zoo import get_model_list; print('\\n'.join(get_model_list()))",
        ],
        stdout=subprocess.PIPE,
        universal_newlines=True,
        check=True,
        timeout=300,
    ).stdout.split()
    assert names == frozenset(listed)
    # reading the names imports neither gluoncv nor MXNet
    imported = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from pytest_bpsperf.config.workload_spec import zoo_model_names; "
            "assert 'resnet50_v2' in zoo_model_names(); print(sorted(m for m in sys.modules "
            "if m.split('.')[0] in ('mxnet', 'gluoncv')))",
        ],
        stdout=subprocess.PIPE,
        universal_newlines=True,
        check=True,
        timeout=300,
    ).stdout.strip()
    assert imported == "[]"


@pytest.mark.parametrize("name", ["resnet50_v2", "ResNet18_V1", "mobilenet1.0"])
def test_zoo_models_pass(name):
    gluoncv_or_skip()
    assert check_workload(settings(model=name)).model == name


def test_unknown_model_is_an_error_naming_setting_value_and_origin():
    gluoncv_or_skip()
    with pytest.raises(
        WorkloadSpecError,
        match=r"'resnet51_v2' for setting 'model' from command line option "
        r"--bpsperf-model: not in gluoncv's model zoo.*similar: resnet",
    ):
        check_workload(settings(model="resnet51_v2"))


@pytest.mark.parametrize("says", [False, True])
def test_a_model_without_gluoncv_says_when_the_python_is_why(monkeypatch, says):
    # this Python, as one that MXNet's wheels reach or (their newest one Python before it) do not
    from pytest_bpsperf.remote import preflight

    for name in ("mxnet", "gluoncv"):
        monkeypatch.setitem(sys.modules, name, None)
    major, minor = sys.version_info[:2]
    monkeypatch.setattr(preflight, "MXNET_NEWEST_PYTHON", (major, minor - 1) if says else (major, minor))
    zoo_model_names.cache_clear()
    try:
        with pytest.raises(WorkloadSpecError) as info:
            check_workload(settings(model="resnet18_v1"))
    finally:
        zoo_model_names.cache_clear()
    message = str(info.value)
    assert message.startswith("setting 'model' ('resnet18_v1', from command line option --bpsperf-model) needs gluoncv")
    assert (f"and neither is MXNet: MXNet 1.9.1 has no wheels for Python {major}.{minor}" in message) is says
    assert ("--bpsperf-backend=torch" in message) is says


def test_entry_replaces_the_model_check(tmp_path):
    (tmp_path / "mynet.py").write_text("def build(ctx):\n    return lambda: None\n")
    s = check_workload(settings(model="not-a-zoo-model", entry="mynet:build"), search=[str(tmp_path)])
    assert s.entry == EntryPoint("mynet", "build", str(tmp_path))
    assert s.workload("mxnet")["entry"] == "mynet:build" and "model" not in s.workload("mxnet")
    assert str(tmp_path) not in sys.path  # searched, not left behind


def test_entry_in_a_package_imports_from_the_package_root(tmp_path):
    pkg = tmp_path / "team" / "models"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "small.py").write_text("def build(ctx):\n    return lambda: None\n")
    entry = resolve_entry(EntryPoint("team.models.small", "build"), "x", [str(tmp_path)])
    assert entry.path == str(tmp_path)


@pytest.mark.parametrize(
    "source, spec, message",
    [
        ("", "nosuchmodule_x:build", r"module 'nosuchmodule_x' does not import \(ModuleNotFoundError"),
        ("raise RuntimeError('boom at import')\n", "broken_x:build", r"does not import \(RuntimeError: boom at import"),
        ("build = 3\n", "nofunc_x:build", r"has no function 'build'"),
    ],
)
def test_entry_that_does_not_import_is_an_error(tmp_path, source, spec, message):
    if source:
        (tmp_path / (spec.split(":")[0] + ".py")).write_text(source)
    with pytest.raises(
        WorkloadSpecError, match=rf"invalid value '{spec}' for setting 'entry' from command line.*" + message
    ):
        check_workload(settings(entry=spec), search=[str(tmp_path)])


def test_record_data_needs_rec_and_idx(tmp_path):
    zoo_or_skip()  # the model is checked first
    rec = tmp_path / "train.rec"
    with pytest.raises(WorkloadSpecError, match=r"setting 'data' from command line.*record file .*train.rec does not"):
        check_workload(settings(model="resnet18_v1", data=str(rec)))
    rec.write_bytes(b"x")
    with pytest.raises(WorkloadSpecError, match=r"index file \(.idx beside the .rec\) .*train.idx does not exist"):
        check_workload(settings(model="resnet18_v1", data=str(rec)))
    (tmp_path / "train.idx").write_text("0\t0\n")
    s = check_workload(settings(model="resnet18_v1", data=str(rec), data_threads="3"))
    assert s.workload("mxnet")["data"] == "rec:train.rec" and s.workload("mxnet")["data_threads"] == 3


def test_relative_data_path_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert settings(data="d/train.rec").data == str(tmp_path / "d" / "train.rec")
    assert settings(data="SYNTHETIC").data == "synthetic"


@pytest.mark.parametrize("backend", ["mxnet", "byteps", "auto"])
def test_float16_is_the_backends_to_refuse_not_the_workloads(backend):
    # whether the workers can train in float16 is one check, the backend's (tests/unit/backends/test_init.py),
    # not written again here: the workload check passes it as it is, where the backend check refuses it too
    from pytest_bpsperf import backends

    s = settings(model="resnet18_v1", dtype="float16", backend=backend)
    assert check_workload(s) == s
    if backend != "byteps":  # CPU workers on this machine without GPUs
        with pytest.raises(backends.PlanError, match="setting 'dtype' .*needs GPU workers"):
            backends.check_settings(s, gpus=0)


def test_timing_mode_is_part_of_the_workload_key():
    overlapped, breakdown = settings(), settings(timing="breakdown")
    assert overlapped.timing == "overlapped"  # the default: what users measure
    assert overlapped.workload("mxnet")["timing"] == "overlapped"
    assert breakdown.workload("mxnet")["timing"] == "breakdown"
    assert overlapped.workload("mxnet") != breakdown.workload("mxnet")
