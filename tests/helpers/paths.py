"""Where things are in the checkout, whatever the folder of the test that asks."""

from __future__ import annotations

from pathlib import Path

#: The checkout's root (pyproject.toml, the package, scripts/, examples/).
ROOT = Path(__file__).resolve().parents[2]
#: Data files of the tests (recorded sessions).
DATA = ROOT / "tests" / "data"
#: Scripts and helper files run by path (floor_check.py, actionlint.cjs).
HELPERS = Path(__file__).resolve().parent
#: A venv with pytest-benchmark (``.ci/run`` makes it), to read the plugin's pytest-benchmark export
#: back with pytest-benchmark's own code; the plugin itself does not depend on pytest-benchmark.
BENCHMARK_VENV = ROOT / ".ci" / "benchmark"


def pytest_benchmark_tool(name: str) -> Path:
    """``name`` (``python``, ``pytest-benchmark``) in :data:`BENCHMARK_VENV`; skips the test, saying how to
    make that venv, where it is absent."""
    import pytest

    from pytest_bpsperf.report.exports import BENCHMARK_FORMAT_VERSION

    path = BENCHMARK_VENV / "bin" / name
    if not path.exists():
        pytest.skip(
            f"no pytest-benchmark at {BENCHMARK_VENV}: .ci/run makes it (python3 -m venv .ci/benchmark && "
            f".ci/benchmark/bin/pip install pytest-benchmark=={BENCHMARK_FORMAT_VERSION})"
        )
    return path
