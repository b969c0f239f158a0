"""``report/documents.py``: the results document (``--bpsperf-json``), and atomic writes of report files."""

from __future__ import annotations

import json
import os

import pytest

from helpers.results import TEST, make_result
from pytest_bpsperf import report
from pytest_bpsperf.judge.job import RunFailure
from pytest_bpsperf.store import files


def _leftovers(directory):
    return [p for p in os.listdir(directory) if p.endswith(".tmp") or p.startswith(".bpsperf-")]


def test_markdown_and_json_documents():
    results = [make_result("default"), make_result("omp-passive", speed=2.0)]
    md = report.markdown_document(results, ["profile cpu-2c"])
    assert md.startswith("## bpsperf results")
    assert "- profile cpu-2c" in md
    assert f"| `{TEST}[omp-passive]` |" in md
    assert "| `omp-passive` |" in md
    doc = report.json_document(results, [RunFailure("tests/t.py::test_z", "role worker-1 died")], ["h"])
    assert doc["schema_version"] == report.JSON_SCHEMA_VERSION
    assert [t["trick"] for t in doc["tests"]] == ["default", "omp-passive"]
    assert doc["failures"] == [{"nodeid": "tests/t.py::test_z", "reason": "role worker-1 died"}]
    rows = doc["matrix"][0]["rows"]
    assert rows[1]["change_vs_default_pct"] == pytest.approx(100.0, abs=0.5)
    json.dumps(doc)


def test_write_json_is_sorted_pretty_and_leaves_no_temp_file(tmp_path):
    path = tmp_path / "sub" / "out.json"
    report.write_json(path, {"b": 1, "a": {"d": 2, "c": [1, 2]}})
    text = path.read_text()
    assert json.loads(text) == {"a": {"c": [1, 2], "d": 2}, "b": 1}
    assert text.index('"a"') < text.index('"b"')
    assert text.endswith("\n")
    assert "\n  " in text  # indented
    assert _leftovers(path.parent) == []


def test_write_text_replaces_existing_file(tmp_path):
    path = tmp_path / "report.md"
    path.write_text("old\n")
    report.write_text(str(path), "new\n")
    assert path.read_text() == "new\n"
    assert _leftovers(tmp_path) == []


def test_write_text_failure_keeps_old_file_and_no_temp(tmp_path):
    path = tmp_path / "report.md"
    path.write_text("old\n")
    with pytest.raises(UnicodeEncodeError):
        report.write_text(path, "half written \ud800")
    assert path.read_text() == "old\n"
    assert _leftovers(tmp_path) == []


def test_write_json_failure_on_rename_keeps_old_file(tmp_path, monkeypatch):
    path = tmp_path / "out.json"
    path.write_text('{"old": true}\n')

    def broken_replace(src, dst):
        raise OSError("disk gone")

    monkeypatch.setattr(files.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk gone"):
        report.write_json(path, {"new": True})
    monkeypatch.undo()
    assert json.loads(path.read_text()) == {"old": True}
    assert _leftovers(tmp_path) == []
