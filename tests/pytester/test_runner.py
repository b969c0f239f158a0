"""Runs in pytest (``plugin/runner.py``): before Ray, an interpreter that cannot run the roles stops the session.

The metadata of two distributions that both provide ``mxnet`` (``two_mxnets``, ``tests/conftest.py``) on the
path: an embedded session is a usage error naming both. A Python that MXNet 1.9.1 has no wheels for (3.12
and later), without MXNet: asking for a backend whose roles import it is a usage error that says so. The
preflight's own rules are in ``tests/unit/remote/test_preflight.py``.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Iterator

import pytest

PERF_TEST = textwrap.dedent("""
    import pytest

    pytestmark = pytest.mark.perf


    def test_train(bpsperf_train):
        bpsperf_train()
""")


def test_embedded_session_with_two_mxnets_is_a_usage_error(
    pytester: pytest.Pytester, two_mxnets: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.syspath_prepend(str(two_mxnets))
    # an entry point of its own: no gluoncv needed, and nothing is trained (the error comes first)
    pytester.makepyfile(mymodel="def build(ctx):\n    raise AssertionError('never built')\n")
    pytester.makepyfile(test_perf=PERF_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", "--bpsperf-entry=mymodel:build")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "cannot run the roles" in err and "mxnet 1.9.1" in err and "mxnet-cu112 1.9.1" in err


@pytest.fixture
def python_without_mxnet(monkeypatch: pytest.MonkeyPatch) -> "Iterator[tuple[str, str]]":
    """This interpreter without MXNet and gluoncv, as a Python that MXNet has no wheels for: itself on 3.12
    and later (the extra installs nothing there); on earlier ones, as if MXNet's newest wheels were for the
    Python before it (pytest itself reads ``sys.version_info``, so that is not faked here).
    Yields (this Python, MXNet's newest)."""
    from pytest_bpsperf.config.workload_spec import zoo_model_names
    from pytest_bpsperf.remote import preflight

    for name in ("mxnet", "gluoncv"):  # not importable, and find_spec says so
        monkeypatch.setitem(sys.modules, name, None)
    if sys.version_info[:2] <= preflight.MXNET_NEWEST_PYTHON:
        monkeypatch.setattr(preflight, "MXNET_NEWEST_PYTHON", (sys.version_info[0], sys.version_info[1] - 1))
    zoo_model_names.cache_clear()
    yield ".".join(map(str, sys.version_info[:2])), ".".join(map(str, preflight.MXNET_NEWEST_PYTHON))
    zoo_model_names.cache_clear()


@pytest.mark.parametrize(
    "args, says",
    [
        # the settings check: the default model needs gluoncv, which comes with MXNet
        (["--bpsperf-backend=mxnet"], "setting 'model' ('resnet50_v2', from default) needs gluoncv"),
        # an entry point of its own: the runner's check before Ray, for each backend whose roles import MXNet
        (["--bpsperf-backend=mxnet", "--bpsperf-entry=mymodel:build"], "backend mxnet (setting 'backend' 'mxnet'"),
        (["--bpsperf-backend=byteps", "--bpsperf-entry=mymodel:build"], "backend byteps (setting 'backend'"),
        (["--bpsperf-entry=mymodel:build"], "backend mxnet (setting 'backend' 'auto' from default, which is mxnet"),
    ],
    ids=["mxnet-model", "mxnet-entry", "byteps-entry", "auto-entry"],
)
def test_mxnet_on_a_python_it_has_no_wheels_for_is_a_usage_error_before_ray(
    pytester: pytest.Pytester, python_without_mxnet: "tuple[str, str]", args: "list[str]", says: str
):
    python, newest = python_without_mxnet
    pytester.makepyfile(mymodel="def build(ctx):\n    raise AssertionError('never built')\n")
    pytester.makepyfile(test_perf=PERF_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", "-m", "perf", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    err = result.stderr.str()
    assert says in err
    assert f"MXNet 1.9.1 has no wheels for Python {python}" in err
    assert f"use Python <= {newest} for backends mxnet and byteps, or --bpsperf-backend=torch" in err
    assert "embedded on 127.0.0.1; start" not in result.stdout.str()  # the session never started Ray


@pytest.mark.parametrize(
    "args", [["--bpsperf-backend=torch"], ["--bpsperf-backend=mxnet", "--collect-only"]], ids=["torch", "collect-only"]
)
def test_what_imports_no_mxnet_is_not_refused(pytester: pytest.Pytester, python_without_mxnet, args: "list[str]"):
    # torch's roles import no MXNet; --collect-only runs nothing. The checks before Ray pass, and the
    # conftest's run loop then runs no test (so Ray never starts).
    pytester.makeconftest("def pytest_runtestloop(session):\n    return True\n")
    pytester.makepyfile(mymodel="def build(ctx):\n    raise AssertionError('never built')\n")
    pytester.makepyfile(test_perf=PERF_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", "-m", "perf", "--bpsperf-entry=mymodel:build", *args)
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    assert "MXNet" not in result.stderr.str()
