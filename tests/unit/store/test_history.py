"""``store/history.py``: history records, their store and the trends of jobs across commits.

The change-point detection behind the trends is in ``tests/unit/stats/test_changepoint.py``.
"""

from __future__ import annotations

import json
import math
import random
import shutil

import pytest

from pytest_bpsperf.store.history import HistoryError, HistoryStore, make_record, trends
from pytest_bpsperf.store.schema import SchemaError, validate

PROFILE = {"id": "testprof", "name": "cpu", "hash": "abc", "facts": {}}
KEY = "t.py::test_x|default|workers=2|backend=mxnet"


def results(img_per_sec, trick="default", key=KEY):
    """A minimal results document with one run per value."""
    return {
        "schema_version": 1,
        "tests": [
            {
                "nodeid": f"t.py::test_x[{trick}]",
                "key": key,
                "test": "t.py::test_x",
                "trick": trick,
                "repeat": i,
                "backend": "mxnet",
                "settings": {"tolerance": 0.15, "workers": 2},
                "img_per_sec": v,
                "workers": [{"name": "worker-0", "batch_size": 8, "step_s": [1.0, 8 / v, 8 / v], "warmup_steps": [0]}],
            }
            for i, v in enumerate(img_per_sec)
        ],
    }


def record(values, commit, date, branch="main"):
    return make_record(results(values), profile=PROFILE, commit=commit, branch=branch, date=date, versions={})


# --- records and the store --------------------------------------------------------------------


def test_record_keeps_profile_commit_branch_settings_and_every_sample():
    rec = record([30.0, 31.0], "a" * 40, "2024-05-01T12:00:00Z")
    validate(rec, "history", "test")
    assert rec["profile"]["id"] == "testprof" and rec["commit"] == "a" * 40 and rec["branch"] == "main"
    assert [r["img_per_sec"] for r in rec["runs"]] == [30.0, 31.0]
    assert rec["runs"][1]["step_img_per_sec"] == pytest.approx([31.0, 31.0])  # step 0 is warm-up
    assert rec["settings"][KEY]["tolerance"] == 0.15


def test_saving_twice_never_overwrites(tmp_path):
    store = HistoryStore(tmp_path)
    rec = record([30.0], "b" * 40, "2024-05-01T12:00:00Z")
    path = store.save(rec)
    before = path.read_bytes()
    with pytest.raises(HistoryError, match="already exists"):
        store.save(rec)
    assert path.read_bytes() == before
    assert json.loads(before)["schema_version"] == 1


def test_histories_of_two_machines_merge_by_copying(tmp_path):
    a, b = HistoryStore(tmp_path / "a"), HistoryStore(tmp_path / "b")
    a.save(record([30.0], "1" * 40, "2024-05-01T12:00:00Z"))
    b.save(record([29.0], "2" * 40, "2024-05-02T12:00:00Z", branch="feature"))
    b.save(record([29.5], "1" * 40, "2024-05-01T13:00:00Z"))
    merged = tmp_path / "merged"
    for src in (a.directory, b.directory):
        shutil.copytree(src, merged, dirs_exist_ok=True)
    store = HistoryStore(merged)
    assert len(store.files()) == 3
    (trend,) = trends(store.load())
    assert [p.commit[:1] for p in trend.points] == ["1", "2"]  # sessions of one commit pooled
    assert trend.points[0].samples == (30.0, 29.5)
    (main_only,) = trends(store.load(), branch="main")
    assert len(main_only.points) == 1


def test_trend_shows_the_regressing_commit(tmp_path):
    store = HistoryStore(tmp_path)
    rng = random.Random(3)
    for i in range(16):
        level = 100.0 if i < 10 else 80.0
        store.save(
            record(
                [level * math.exp(rng.gauss(0, 0.03)) for _ in range(2)], f"{i:040x}", f"2024-05-{i + 1:02d}T00:00:00Z"
            )
        )
    (trend,) = trends(store.load("testprof"), profile_id="testprof")
    assert [trend.points[s.index].commit for s in trend.fit.steps] == [f"{10:040x}"]
    assert trend.fit.steps[0].change_pct == pytest.approx(-20, abs=5)


def test_a_corrupt_history_file_is_named(tmp_path):
    store = HistoryStore(tmp_path)
    store.save(record([30.0], "c" * 40, "2024-05-01T12:00:00Z"))
    bad = tmp_path / "testprof" / "20240502T000000Z-x-deadbeef.json"
    bad.write_text(json.dumps({"schema_version": 1, "runs": []}))
    with pytest.raises(HistoryError, match="deadbeef.json") as info:
        store.load()
    assert "'session' is a required property" in str(info.value)


def test_schema_errors_name_the_place_and_the_value():
    rec = record([30.0], None, "2024-05-01T12:00:00Z")
    rec["runs"][0]["img_per_sec"] = -1
    with pytest.raises(SchemaError, match=r"\$\.runs\[0\]\.img_per_sec = -1"):
        validate(rec, "history", "my record")


@pytest.mark.parametrize("commit", ["../../../../x", "a/b", "..", "main", "deadbeef\nx"])
def test_only_a_hex_commit_names_a_history_file(tmp_path, commit):
    # The commit string names the file: anything but a git commit id is refused, and nothing is
    # written inside the directory or outside it.
    hist = tmp_path / "a" / "b" / "history"
    with pytest.raises(HistoryError, match=r"commit '.*' .*hex digits") as info:
        HistoryStore(hist).save(record([30.0], commit, "2024-05-01T12:00:00Z"))
    assert repr(commit) in str(info.value)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


@pytest.mark.parametrize("commit", ["c" * 40, "C0FFEE12", "1" * 64, None])
def test_a_commit_id_or_none_names_a_history_file(tmp_path, commit):
    path = HistoryStore(tmp_path).save(record([30.0], commit, "2024-05-01T12:00:00Z"))
    assert path.parent == tmp_path / "testprof"
    assert path.name.split("-")[1] == (commit or "nocommit")[:12]
