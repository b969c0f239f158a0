"""A backend that no plugin registered is a usage error naming the registered ones (no Ray starts).

A backend another plugin registers, run through the real launcher on Ray, is in
``tests/e2e/test_e2e_backend_plugin.py``.
"""

from __future__ import annotations

import pytest

from helpers.toy_backend import PERF_TEST

pytest.importorskip("ray")


def test_unregistered_backend_is_a_usage_error_naming_the_registered_ones(pytester: pytest.Pytester):
    pytester.makepyfile(test_perf=PERF_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", "--bpsperf-backend=toy")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "invalid value 'toy' for setting 'backend' from command line option --bpsperf-backend" in err
    assert "registered backend (mxnet, byteps, torch)" in err


@pytest.mark.parametrize("setting, value", [("dtype", "float16"), ("launch", "bpslaunch")])
def test_what_a_backend_cannot_run_is_refused_before_ray_whatever_its_name(fed, cpu_backend, setting, value):
    # the backend's own check (float16 needs GPU workers, bpslaunch needs BytePS), not a list of names
    result = fed.runpytest("-p", "no:cacheprovider", f"--bpsperf-backend={cpu_backend}", f"--bpsperf-{setting}={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"ERROR: bpsperf: setting '{setting}' ({value}, from command line option *backend*{cpu_backend}*"]
    )
