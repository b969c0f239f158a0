"""A real reservation under Ray at the floor pyproject.toml names (``tests/helpers/floor_check.py``).

``.ci/run`` makes a venv with Ray at its floor (``.ci/floor``); here a real reservation runs
under it. Without that venv (a checkout where .ci/run did not run) the test skips and says so:
tests reach no package registry. That the floor has what the reservation uses is checked in
``tests/unit/project/test_dependency_floors.py``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from helpers.floors import ray_floor
from helpers.paths import HELPERS, ROOT

FLOOR_PYTHON = Path(os.environ.get("BPSPERF_FLOOR_PYTHON", ROOT / ".ci" / "floor" / "bin" / "python"))


def test_a_reservation_under_ray_at_its_floor():
    if not FLOOR_PYTHON.exists():
        pytest.skip(
            f"no interpreter with Ray at its floor ({ray_floor()}) at {FLOOR_PYTHON}: .ci/run makes it "
            "(python3 -m venv .ci/floor && .ci/floor/bin/pip install ray==" + ray_floor() + ")"
        )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [str(FLOOR_PYTHON), str(HELPERS / "floor_check.py")], capture_output=True, text=True, timeout=300, env=env
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == f"ok {ray_floor()}" or proc.stdout.strip().splitlines()[
        -1
    ].startswith(f"ok {ray_floor()}")
