"""The dependency floors pyproject.toml names are the ones the code needs.

A real reservation under Ray at its floor is in ``tests/e2e/test_e2e_dependency_floors.py``.
"""

from __future__ import annotations

import inspect

import pytest

from helpers.floors import ray_floor


def test_the_ray_floor_has_what_the_reservation_uses():
    # bundle_label_selector (nodes pinned by Ray's ray.io/node-id label) arrived with Ray 2.49
    assert tuple(int(p) for p in ray_floor().split(".")) >= (2, 49)
    ray = pytest.importorskip("ray")
    from ray.util.placement_group import placement_group

    assert "bundle_label_selector" in inspect.signature(placement_group).parameters
    assert tuple(int(p) for p in ray.__version__.split(".")[:2]) >= tuple(int(p) for p in ray_floor().split("."))
