"""The repository's own perf suite (``perf_tests/``): the shipped perf test pins no default of its own."""

from __future__ import annotations

from helpers.paths import ROOT


def test_shipped_perf_test_pins_no_default():
    text = open(ROOT / "perf_tests" / "test_resnet50.py").read()
    assert "bpsperf_train()" in text and "model=" not in text
