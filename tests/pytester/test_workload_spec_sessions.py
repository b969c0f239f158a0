"""Workload settings in a session: a bad one stops pytest before Ray starts; a marker's entry imports.

The checks themselves, without a session, are in ``tests/unit/config/test_workload_spec.py``.
"""

from __future__ import annotations

import textwrap

import pytest

from helpers.dists import gluoncv_or_skip

# gluoncv (with MXNet and OpenCV) is imported once here, not inside a pytester test: pytester drops
# the modules a test imported when it ends, and OpenCV fails when it is imported again in one process.
try:
    from pytest_bpsperf.remote.entry import import_gluoncv

    import_gluoncv()  # beside torch 2 too (gluoncv 0.10.5 refuses it at import)
except Exception:  # noqa: BLE001 - not installed (or broken): the tests' own gluoncv_or_skip says so
    pass


CONFTEST_FREE_TEST = """
import pytest

@pytest.mark.perf
def test_x(bpsperf_train):
    bpsperf_train()
"""

#: A plugin of the inner session (``-p ray_probe``, not a conftest: the project has none) that writes,
#: when the session ends, whether it ever imported Ray: the plugin imports Ray only to start it.
RAY_PROBE = """
import sys


def pytest_unconfigure(config):
    with open("ray-imported.txt", "w") as fh:
        fh.write(str("ray" in sys.modules))
"""


@pytest.mark.parametrize(
    "args, message",
    [
        (["--bpsperf-model", "resnet51_v2"], "*'resnet51_v2' for setting 'model' from command line option*"),
        (["--bpsperf-data", "missing/train.rec"], "*setting 'data'*missing/train.rec does not exist*"),
        (["--bpsperf-entry", "nosuchmodule_y:build"], "*setting 'entry'*'nosuchmodule_y' does not import*"),
        (["--bpsperf-dtype", "float16", "--bpsperf-backend", "mxnet"], "*setting 'dtype'*FP16*"),
    ],
)
def test_bad_workload_stops_pytest_before_ray(pytester, args, message):
    gluoncv_or_skip()
    pytester.makepyfile(test_perf=CONFTEST_FREE_TEST, ray_probe=RAY_PROBE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "ray_probe", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: bpsperf: " + message])
    # before the plugin's header (its lines start with its name) and before Ray was even imported
    result.stdout.no_fnmatch_line("bpsperf*")
    assert (pytester.path / "ray-imported.txt").read_text() == "False"


def test_marker_entry_imports_from_the_rootdir(pytester):
    pytester.makeini("[pytest]\n")
    pytester.mkpydir("team")
    pytester.path.joinpath("team", "nets.py").write_text("def build(ctx):\n    return lambda: None\n")
    pytester.makepyfile(
        test_perf=textwrap.dedent("""
        import pytest

        @pytest.mark.bpsperf(entry="team.nets:build")
        def test_x(bpsperf_settings):
            print("ENTRY", bpsperf_settings.entry.spec, bpsperf_settings.entry.path)

    """)
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    result.stdout.fnmatch_lines([f"*ENTRY team.nets:build {pytester.path}"])
    result.assert_outcomes(passed=1)
    # A test's own bad entry is a usage error before anything runs (it was an error of that test's setup).
    pytester.makepyfile(
        test_other=textwrap.dedent("""
        import pytest

        @pytest.mark.bpsperf(entry="team.nets:missing")
        def test_y(bpsperf_settings):
            pass
    """)
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*entry= of @pytest.mark.bpsperf(...) on test_other.py::test_y*has no function 'missing'*"]
    )
