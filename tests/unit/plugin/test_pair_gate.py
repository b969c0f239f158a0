"""``plugin/pair_gate.py`` without a session: the base arm's preflight takes ``auto`` as the session resolved it.

Base-vs-head sessions are in ``tests/pytester/test_pair_gate.py``.
"""

from __future__ import annotations

from helpers.clusters import settings
from pytest_bpsperf.config.settings import Hardware


def test_the_base_arms_preflight_takes_auto_as_the_session_resolved_it():
    from pytest_bpsperf.plugin.pair_gate import arm_needs

    s = settings(Hardware(gpus=8, cores=32))
    assert s.backend == "auto"
    assert "byteps.mxnet" in arm_needs(s, "byteps", 8) and "byteps.server" in arm_needs(s, "byteps", 8)
    assert "byteps.mxnet" in arm_needs(s, None, 8)  # GPUs, not resolved yet: what auto picks there
    assert arm_needs(s, "mxnet", 8) == ["gluoncv", "mxnet"]  # auto fell back (its probe failed)
    assert arm_needs(settings(), None, 0) == ["gluoncv", "mxnet"]
