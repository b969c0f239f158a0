"""The ``bpsperf`` command on results files the plugin wrote: the plugin's names and meanings.

Parser-level checks of the shared option names are in ``tests/unit/test_cli_json.py``.
"""

from __future__ import annotations

import json

from helpers.cli import bpsperf


def test_strict_fails_a_missing_baseline_as_the_plugin_does(results, tmp_path, capsys):
    empty = tmp_path / "none"
    code, out, _ = bpsperf(capsys, "check", results, "--baselines-dir", empty)
    assert code == 0 and "2 no-baseline" in out
    assert bpsperf(capsys, "check", results, "--baselines-dir", empty, "--strict")[0] == 1


def test_export_takes_the_plugins_report_names_and_keeps_the_old_ones(results, tmp_path, capsys):
    for new, old in (("github-benchmark", "github"), ("bmf", "bmf")):
        assert bpsperf(capsys, "export", results, "--format", new, "-o", tmp_path / f"{new}.json")[0] == 0
        assert bpsperf(capsys, "export", results, "--format", old, "-o", tmp_path / f"old-{new}.json")[0] == 0
        assert (tmp_path / f"{new}.json").read_text() == (tmp_path / f"old-{new}.json").read_text()
    code, out, _ = bpsperf(capsys, "export", results, "--format", "pytest-benchmark", "-o", tmp_path / "pb.json")
    assert code == 0 and "(benchmark-json)" in out
    assert json.loads((tmp_path / "pb.json").read_text())["benchmarks"]
