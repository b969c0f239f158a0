"""``backends/base.py``: what a backend refuses at plan time, by its own checks."""

from __future__ import annotations

import pytest

from pytest_bpsperf import backends
from pytest_bpsperf.config.settings import Hardware, Source, resolve
from pytest_bpsperf.config.tricks import Trick
from pytest_bpsperf.planning.planner import make_plan
from pytest_bpsperf.runs.plan import Node


def test_mxnet_backend_refuses_bpslaunch_at_plan_time():
    from pytest_bpsperf.backends import PlanError

    settings = resolve([Source("cli", "test", {"backend": "mxnet", "launch": "bpslaunch"})], Hardware(0, 2))
    with pytest.raises(PlanError, match="setting 'launch' .*needs backend byteps, not mxnet"):
        make_plan(settings, Trick("default"), [Node("n", "127.0.0.1", 2)], backend=backends.get("mxnet"), run_id="r")
