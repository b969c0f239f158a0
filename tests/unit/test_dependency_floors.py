"""The dependency floors pyproject.toml names are the ones the code needs (tested against them where built).

``.ci/run`` makes a venv with Ray at its floor (``.ci/floor``); here a real reservation runs
under it. Without that venv (a checkout where .ci/run did not run) the test skips and says so:
tests reach no package registry.
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.paths import HELPERS, ROOT

FLOOR_PYTHON = Path(os.environ.get("BPSPERF_FLOOR_PYTHON", ROOT / ".ci" / "floor" / "bin" / "python"))


def ray_floor() -> str:
    text = (ROOT / "pyproject.toml").read_text()
    (floor,) = re.findall(r'"ray>=([0-9.]+)', text)
    return floor


def test_the_ray_floor_has_what_the_reservation_uses():
    # bundle_label_selector (nodes pinned by Ray's ray.io/node-id label) arrived with Ray 2.49
    assert tuple(int(p) for p in ray_floor().split(".")) >= (2, 49)
    ray = pytest.importorskip("ray")
    from ray.util.placement_group import placement_group

    assert "bundle_label_selector" in inspect.signature(placement_group).parameters
    assert tuple(int(p) for p in ray.__version__.split(".")[:2]) >= tuple(int(p) for p in ray_floor().split("."))


def test_a_reservation_under_ray_at_its_floor():
    if not FLOOR_PYTHON.exists():
        pytest.skip(f"no interpreter with Ray at its floor ({ray_floor()}) at {FLOOR_PYTHON}: .ci/run makes it "
                    "(python3 -m venv .ci/floor && .ci/floor/bin/pip install ray==" + ray_floor() + ")")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([str(FLOOR_PYTHON), str(HELPERS / "floor_check.py")], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == f"ok {ray_floor()}" or \
        proc.stdout.strip().splitlines()[-1].startswith(f"ok {ray_floor()}")
