"""Settings in pytest (``plugin/options.py``): out of the way when unused, and the hardware they follow.

A session that runs no perf test never resolves, detects or checks.

The plugin's settings are resolved and checked once perf tests are selected to
run (after ``-m``/``-k``), still before Ray starts; before that nothing is
parsed, no hardware is detected (``nvidia-smi``), gluoncv's zoo is not read
and no entry module is imported. A perf test in the session makes the same bad
value a usage error naming it and where it came from.
"""

from __future__ import annotations

import os
import stat

import pytest

from helpers.fakes import MATRIX_TEST, run
from helpers.output import without_paths

PLAIN_TEST = "def test_unit():\n    assert 1 + 1 == 2\n"


def says_bpsperf(result: pytest.RunResult, project: pytest.Pytester) -> bool:
    """Whether the session's output names the plugin anywhere but pytest's list of plugins and the paths of
    this machine (:func:`helpers.output.without_paths`: a checkout named pytest-bpsperf, say)."""
    lines = without_paths(result.stdout.lines + result.stderr.lines, project.path)
    return any("bpsperf" in line for line in lines if not line.startswith("plugins:"))


#: Bad values of each source and what the usage error says of them once a perf test is selected.
BAD = [
    ("BPSPERF_STEPS", "abc", "invalid value 'abc' for setting 'steps' from environment variable BPSPERF_STEPS"),
    (
        "BPSPERF_MODEL",
        "no_such_model_v9",
        "invalid value 'no_such_model_v9' for setting 'model' from environment variable BPSPERF_MODEL",
    ),
    (
        "BPSPERF_ENTRY",
        "nosuchmodule_unused:build",
        "invalid value 'nosuchmodule_unused:build' for setting 'entry' from environment variable BPSPERF_ENTRY",
    ),
    ("BPSPERF_TRICKS", "omp-pasive", "unknown trick 'omp-pasive' (from environment variable BPSPERF_TRICKS)"),
]


@pytest.mark.parametrize("var, value, _message", BAD, ids=[var for var, _v, _m in BAD])
def test_bad_settings_do_not_stop_a_session_without_perf_tests(ourtester, monkeypatch, var, value, _message):
    ourtester.makepyfile(test_unit=PLAIN_TEST)
    ourtester.makeini("[pytest]\nbpsperf_batch_size = 0\nbpsperf_define_tricks =\n    broken definition\n")
    monkeypatch.setenv(var, value)
    result = run(ourtester)
    assert result.ret == 0, result.stderr.str()
    result.assert_outcomes(passed=1)
    assert not says_bpsperf(result, ourtester), result.stdout.str()


@pytest.mark.parametrize("var, value, message", BAD, ids=[var for var, _v, _m in BAD])
def test_the_same_bad_setting_with_a_perf_test_is_a_usage_error(ourtester, monkeypatch, var, value, message):
    ourtester.makepyfile(test_unit=PLAIN_TEST, test_perf=MATRIX_TEST)
    monkeypatch.setenv(var, value)
    result = run(ourtester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
    result.stdout.no_fnmatch_line("*passed*")


def test_a_deselected_perf_test_stops_nothing(ourtester, monkeypatch):
    # What a repository with perf tests and addopts "-m 'not perf'" does on a plain pytest: the perf
    # tests are collected, then deselected; even their own bad marker waits until one is selected.
    ourtester.makepyfile(
        test_unit=PLAIN_TEST,
        test_perf=MATRIX_TEST,
        test_marked="""
import pytest


@pytest.mark.perf
@pytest.mark.bpsperf(steps="x")
def test_marked(bpsperf_train):
    bpsperf_train()
""",
    )
    ourtester.makeini("[pytest]\naddopts = -m 'not perf'\n")
    monkeypatch.setenv("BPSPERF_REPEATS", "zero")
    result = run(ourtester)
    assert result.ret == 0, result.stderr.str()
    result.stdout.fnmatch_lines(["*1 passed, 2 deselected*"])
    assert not says_bpsperf(result, ourtester), result.stdout.str()
    # selected, the marker's value is a usage error naming the test
    monkeypatch.delenv("BPSPERF_REPEATS")
    result = run(ourtester, "-m", "perf", "test_marked.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "invalid value 'x' for setting 'steps' from steps= of @pytest.mark.bpsperf(...) on test_marked.py::test_marked"
    ) in result.stderr.str()


def _shadow(tmp_path, name: str, source: str) -> str:
    """A directory whose ``name`` stands in for a package or program; its path."""
    directory = tmp_path / "shadow"
    directory.mkdir(exist_ok=True)
    target = directory / name
    target.write_text(source)
    target.chmod(target.stat().st_mode | stat.S_IXUSR)
    return str(directory)


def test_without_gluoncv_only_a_perf_session_needs_it(ourtester, monkeypatch, tmp_path):
    # A gluoncv without its model zoo reads as no gluoncv (scripts/acceptance.sh installs none at all).
    package = tmp_path / "nogluon" / "gluoncv"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('gluoncv is not installed here')\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(package.parent), os.environ.get("PYTHONPATH", "")]))
    ourtester.makepyfile(test_unit=PLAIN_TEST)
    result = ourtester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == 0, result.stderr.str()
    result.assert_outcomes(passed=1)
    ourtester.makepyfile(test_perf=MATRIX_TEST)
    result = ourtester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*setting 'model' ('resnet50_v2', from default) needs gluoncv, which is not installed*"]
    )


def test_no_hardware_is_detected_without_perf_tests(ourtester, monkeypatch, tmp_path):
    # nvidia-smi is what detection runs; this one says that it ran (and that there is no GPU).
    ran = tmp_path / "nvidia-smi-ran"
    shadow = _shadow(tmp_path, "nvidia-smi", f'#!/bin/sh\necho "$@" >> {ran}\n')
    monkeypatch.setenv("PATH", os.pathsep.join([shadow, os.environ["PATH"]]))
    ourtester.makepyfile(test_unit=PLAIN_TEST)
    result = ourtester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert not ran.exists()
    ourtester.makepyfile(test_perf=MATRIX_TEST)
    result = ourtester.runpytest_subprocess("-p", "no:cacheprovider", "--collect-only")
    assert result.ret == 0, result.stderr.str()
    assert ran.exists()  # a perf test is selected: its defaults follow the hardware


def test_settings_follow_the_hardware_given(pytester):
    from pytest_bpsperf.config.settings import Hardware
    from pytest_bpsperf.plugin.options import SettingsPlugin

    config = pytester.parseconfigure("-p", "no:cacheprovider")
    plugin = SettingsPlugin(config)
    cluster = Hardware(gpus=8, cores=32, gpu_nodes=2)
    plugin.use_hardware(cluster)
    assert plugin.hardware is cluster


SERVER_TRICKS_TEST = """
import pytest

pytestmark = pytest.mark.perf


@pytest.mark.bpsperf_tricks("extra-servers", "omp-passive+extra-servers"{optional})
def test_x(bpsperf_train):
    bpsperf_train()
"""


@pytest.mark.parametrize(
    "args, optional, where",
    [
        (["--bpsperf-backend=torch"], "", "@pytest.mark.bpsperf_tricks on test_perf.py::test_x"),
        (["--bpsperf-backend=torch", "--bpsperf-tricks=extra-servers"], "", "command line option --bpsperf-tricks"),
        # servers_optional covers the marker's list only: tricks asked for by name are refused
        (["--bpsperf-backend=torch", "--bpsperf-tricks=extra-servers"], ", servers_optional=True", "command line"),
    ],
)
def test_a_trick_that_adds_servers_is_a_usage_error_with_a_backend_without_them(pytester, args, optional, where):
    pytester.makepyfile(test_perf=SERVER_TRICKS_TEST.format(optional=optional))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: bpsperf: trick 'extra-servers' adds 1 server(s) per server node, and backend torch has no servers*"]
    )
    assert where in result.stderr.str()
    assert result.parseoutcomes() == {} and "roles up" not in result.stdout.str()  # nothing ran


def test_servers_optional_skips_the_tricks_that_add_servers_naming_the_backend_before_anything_runs(pytester):
    pytester.makepyfile(test_perf=SERVER_TRICKS_TEST.format(optional=", servers_optional=True"))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs", "--bpsperf-backend=torch")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*trick 'extra-servers' adds servers and backend torch has none*"])
    assert "roles up" not in result.stdout.str() and "Ray: embedded on 127.0.0.1; start" not in result.stdout.str()


@pytest.mark.parametrize("backend", ["mxnet", "byteps"])
def test_bfloat16_is_refused_by_name_by_the_mxnet_backends_before_ray(pytester, backend):
    pytester.makepyfile(test_perf=MATRIX_TEST)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", f"--bpsperf-backend={backend}", "--bpsperf-dtype=bfloat16"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"*'dtype' (bfloat16, from command line option --bpsperf-dtype) is not trained by backend {backend}*"]
    )
