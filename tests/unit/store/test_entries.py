"""``store/entries.py``: what a baseline session keeps of what produced it."""

from __future__ import annotations

from pytest_bpsperf.store.entries import make_session


def test_a_session_keeps_the_dirty_flag_only_when_known():
    assert make_session(samples=[1.0], commit="a" * 40, date="d", versions={}, dirty=True)["dirty"] is True
    assert "dirty" not in make_session(samples=[1.0], commit=None, date="d", versions={})
