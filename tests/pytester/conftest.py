"""Fixtures of the suites that run pytest on a project whose runs are fed (``pytest_bpsperf_run``, no Ray).

- ``ourtester``: ``pytester`` with the ``fake_run`` fixture's source as its conftest.py;
- ``fake_run``: that source, by default runs in the overlapped timing
  (:func:`helpers.fakes.fake_run_conftest`); a module overrides it with a
  fixture of the same name when its runs differ;
- ``results`` / ``breakdown_results``: a results file the plugin wrote, in each timing;
- ``fed``: plain ``pytester`` (not ``ourtester``) whose perf test is fed runs of the speed
  ``FAKE_SPEED`` and the single-process img/s ``FAKE_SINGLE`` say.

Every inner session runs without the outer environment that would change it (the developer's
``BPSPERF_*``, ``GITHUB_*``, ``RAY_*``, git config): ``tests/conftest.py`` applies
:mod:`helpers.isolation` to the whole test process.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.fakes import MATRIX_TEST, OMP_PASSIVE_2X, fake_run_conftest, run


@pytest.fixture
def fake_run() -> str:
    """The conftest.py ``ourtester`` writes: fed runs in the default (overlapped) timing."""
    return fake_run_conftest()


@pytest.fixture
def ourtester(pytester: pytest.Pytester, fake_run: str) -> pytest.Pytester:
    """pytester with ``fake_run`` as the project's conftest.py."""
    pytester.makeconftest(fake_run)
    return pytester


def _results(pytester: pytest.Pytester, timing: str) -> Path:
    pytester.makeconftest(fake_run_conftest(OMP_PASSIVE_2X, timing=timing))
    pytester.makepyfile(test_x=MATRIX_TEST)
    pytester.makeini("[pytest]\nbpsperf_profile = testprof\n")
    result = run(pytester, "--bpsperf-repeats=3", "--bpsperf-json=results.json")
    assert result.ret == 0, result.stdout.str()
    return pytester.path / "results.json"


@pytest.fixture
def results(ourtester: pytest.Pytester) -> Path:
    """A results file of two tricks x 3 repeats, written by the plugin (overlapped timing); its path."""
    return _results(ourtester, "overlapped")


@pytest.fixture
def breakdown_results(ourtester: pytest.Pytester) -> Path:
    """The same in the breakdown timing: every step split into compute and sync; its path."""
    return _results(ourtester, "breakdown")


#: Finished runs through the plugin's public hook (tests/helpers/fakes.py): FAKE_SPEED scales img/s,
#: FAKE_SINGLE is the session's single-process img/s; the repeats differ by 1%.
FAKE_RUNS = fake_run_conftest(
    step_s=0.25,
    extra="""

import os


def scenario(config, spec):
    return float(os.environ.get("FAKE_SPEED", "1.0")) * (1.0 + 0.01 * (spec.repeat % 3 - 1))


def single_img_per_sec(config, spec):
    return float(os.environ["FAKE_SINGLE"]) if os.environ.get("FAKE_SINGLE") else None
""",
)

PERF_TEST = """
import pytest


@pytest.mark.perf
def test_x(bpsperf_train):
    bpsperf_train().assert_within_baseline()
"""


@pytest.fixture
def fed(pytester):
    """A project whose perf test is fed finished runs."""
    pytester.makeconftest(FAKE_RUNS)
    pytester.makepyfile(test_x=PERF_TEST)
    return pytester
