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
    assert "registered backend (mxnet, byteps)" in err
