"""Runs in pytest (``plugin/runner.py``): before Ray, an interpreter that cannot run the roles stops the session.

The metadata of two distributions that both provide ``mxnet`` (``two_mxnets``, ``tests/conftest.py``) on the
path: an embedded session is a usage error naming both. The preflight's own rule is in
``tests/unit/remote/test_preflight.py``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest


def test_embedded_session_with_two_mxnets_is_a_usage_error(
    pytester: pytest.Pytester, two_mxnets: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.syspath_prepend(str(two_mxnets))
    # an entry point of its own: no gluoncv needed, and nothing is trained (the error comes first)
    pytester.makepyfile(mymodel="def build(ctx):\n    raise AssertionError('never built')\n")
    pytester.makepyfile(
        test_perf=textwrap.dedent("""
        import pytest

        pytestmark = pytest.mark.perf


        def test_train(bpsperf_train):
            bpsperf_train()
    """)
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "--bpsperf-entry=mymodel:build")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "cannot run the roles" in err and "mxnet 1.9.1" in err and "mxnet-cu112 1.9.1" in err
