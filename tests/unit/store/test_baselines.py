"""``store/baselines.py``: keys, atomic merge-writes, refusals, sessions, migration and adoption."""

from __future__ import annotations

import difflib
import json
import os
import platform
from datetime import datetime

import pytest

from pytest_bpsperf.store import baselines
from pytest_bpsperf.store.baselines import BaselineError, BaselineStore, check_baseline_quality, entry_key, make_entry
from pytest_bpsperf.store.entries import add_session, make_session, migrate_entry, session_samples

PROFILE_ID = "cpu-amd-epyc-2c-24g-x86-64-66422873"
PROFILE = {
    "id": PROFILE_ID,
    "name": "cpu-amd-epyc-2c-24g-x86-64",
    "hash": "66422873aa",
    "facts": {"cores": 2, "cpu_model": "AMD EPYC"},
}
TOPOLOGY = {"workers": 2, "server_nodes": 1, "servers_per_node": 1}
WORKLOAD = {"backend": "mxnet", "batch_size": 8, "model": "resnet50_v2", "steps": 20}


def _entry(trick: str, samples=(100.0, 104.0, 98.0)) -> dict:
    return make_entry(
        test="test_resnet50_throughput",
        trick=trick,
        topology=TOPOLOGY,
        workload=WORKLOAD,
        samples=list(samples),
        versions={"python": "3.11.7", "mxnet": "1.9.1"},
        commit="0" * 40,
        date="2024-05-01T12:00:00Z",
    )


def _key(trick: str) -> str:
    return entry_key("test_resnet50_throughput", trick, TOPOLOGY, WORKLOAD)


def _leftovers(directory) -> list:
    return sorted(p.name for p in directory.iterdir() if p.name != f"{PROFILE_ID}.json")


# --- keys ---------------------------------------------------------------------


def test_entry_key_is_readable_and_sorted():
    key = _key("omp-passive")
    assert key == (
        "test_resnet50_throughput|omp-passive|server_nodes=1,servers_per_node=1,workers=2|"
        "backend=mxnet,batch_size=8,model=resnet50_v2,steps=20"
    )


def test_entry_key_ignores_insertion_order_and_int_float_spelling():
    a = entry_key("t", "b", {"workers": 2, "server_nodes": 1}, {"batch_size": 8, "lr": 0.1})
    b = entry_key("t", "b", {"server_nodes": 1.0, "workers": 2}, {"lr": 0.1, "batch_size": 8.0})
    assert a == b


def test_entry_key_distinguishes_values():
    assert _key("default") != _key("omp-passive")
    assert entry_key("t", "b", {"workers": 2}, {}) != entry_key("t", "b", {"workers": 4}, {})
    assert entry_key("t", "b", {}, {"flag": True}).endswith("|flag=true")
    assert entry_key("t", "b", {}, {}) == "t|b|-|-"


# --- store ----------------------------------------------------------------------


def test_missing_file_is_empty(tmp_path):
    store = BaselineStore(tmp_path / "baselines")
    loaded = store.load(PROFILE_ID)
    assert not loaded.exists and loaded.entries == {} and loaded.profile is None
    assert store.get(PROFILE_ID, _key("default")) is None


def test_round_trip_and_file_format(tmp_path):
    store = BaselineStore(tmp_path / "baselines")
    path = store.update(PROFILE_ID, PROFILE, {_key("default"): _entry("default")})
    assert path == tmp_path / "baselines" / f"{PROFILE_ID}.json"
    got = store.get(PROFILE_ID, _key("default"))
    assert got == _entry("default")
    assert got["summary"]["n"] == 3 and got["summary"]["median"] == 100.0
    text = path.read_text()
    assert text.endswith("}\n")
    data = json.loads(text)
    assert data["schema_version"] == 2
    assert data["profile"] == PROFILE
    # Stable, reviewable form: exactly what sorted, indented dumping gives.
    assert text == json.dumps(data, sort_keys=True, indent=2) + "\n"
    assert _leftovers(path.parent) == []


def test_update_merges_and_never_drops_entries(tmp_path):
    store = BaselineStore(tmp_path)
    store.update(PROFILE_ID, PROFILE, {_key("default"): _entry("default"), _key("omp-passive"): _entry("omp-passive")})
    new_passive = _entry("omp-passive", samples=(300.0, 310.0))
    store.update(
        PROFILE_ID, PROFILE, {_key("omp-passive"): new_passive, _key("extra-servers"): _entry("extra-servers")}
    )
    entries = store.load(PROFILE_ID).entries
    assert set(entries) == {_key("default"), _key("omp-passive"), _key("extra-servers")}
    assert entries[_key("default")] == _entry("default")
    assert session_samples(entries[_key("omp-passive")]) == [[300.0, 310.0]]


def test_update_keeps_entries_written_by_hand(tmp_path):
    # A schema_version 1 entry written by hand: kept, its note too, its samples become one session.
    path = tmp_path / f"{PROFILE_ID}.json"
    hand = {"samples": [1.0, 2.0], "note": "x"}
    path.write_text(json.dumps({"schema_version": 1, "profile": PROFILE, "entries": {"hand|made|-|-": hand}}))
    BaselineStore(tmp_path).update(PROFILE_ID, PROFILE, {_key("default"): _entry("default")})
    entries = json.loads(path.read_text())["entries"]
    assert entries["hand|made|-|-"] == {
        "note": "x",
        "sessions": [{"samples": [1.0, 2.0], "host": None, "single_img_per_sec": None}],
    }


def test_unserializable_entry_leaves_file_untouched(tmp_path):
    store = BaselineStore(tmp_path)
    store.update(PROFILE_ID, PROFILE, {_key("default"): _entry("default")})
    before = (tmp_path / f"{PROFILE_ID}.json").read_bytes()
    with pytest.raises(BaselineError, match="not plain JSON"):
        store.update(PROFILE_ID, PROFILE, {"k": {"samples": [float("nan")]}})
    assert (tmp_path / f"{PROFILE_ID}.json").read_bytes() == before
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("fail_at", ["fsync", "replace"])
def test_failed_write_keeps_original_and_leaves_no_temp_file(tmp_path, monkeypatch, fail_at):
    store = BaselineStore(tmp_path)
    store.update(PROFILE_ID, PROFILE, {_key("default"): _entry("default")})
    path = tmp_path / f"{PROFILE_ID}.json"
    before = path.read_bytes()

    def boom(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(baselines.os, fail_at, boom)
    with pytest.raises(OSError, match="No space left"):
        store.update(PROFILE_ID, PROFILE, {_key("omp-passive"): _entry("omp-passive")})
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert _leftovers(tmp_path) == []


def test_write_goes_through_a_temp_file_in_the_same_directory(tmp_path, monkeypatch):
    seen = []
    real_replace = os.replace

    def spy(src, dst):
        seen.append((os.path.dirname(src), os.path.dirname(dst), os.path.exists(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(baselines.os, "replace", spy)
    store = BaselineStore(tmp_path)
    store.update(PROFILE_ID, PROFILE, {_key("default"): _entry("default")})
    store.update(PROFILE_ID, PROFILE, {_key("omp-passive"): _entry("omp-passive")})
    assert [s[:2] for s in seen] == [(str(tmp_path), str(tmp_path))] * 2
    assert [s[2] for s in seen] == [False, True]


@pytest.mark.parametrize(
    "content,problem",
    [
        (b'{"schema_version": 1, "entries": {', "not valid JSON"),
        (b"[1, 2, 3]", "expected an object"),
        (b'{"schema_version": 1, "entries": []}', "'entries' is a list"),
        (b'{"schema_version": 1, "entries": {"k": 3}}', "entry 'k'"),
        (b'{"schema_version": 1, "entries": {"k": {"samples": "fast"}}}', "'samples'"),
        (b'{"schema_version": 1, "profile": "x", "entries": {}}', "'profile'"),
        (b"\xff\xfe garbage", "not UTF-8"),
    ],
)
def test_corrupt_file_raises_and_is_never_overwritten(tmp_path, content, problem):
    path = tmp_path / f"{PROFILE_ID}.json"
    path.write_bytes(content)
    store = BaselineStore(tmp_path)
    with pytest.raises(BaselineError) as info:
        store.load(PROFILE_ID)
    message = str(info.value)
    assert str(path) in message and problem in message and "left untouched" in message
    with pytest.raises(BaselineError):
        store.get(PROFILE_ID, _key("default"))
    with pytest.raises(BaselineError):
        store.update(PROFILE_ID, PROFILE, {_key("default"): _entry("default")})
    assert path.read_bytes() == content
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("version", [3, 0, "1", True, None])
def test_schema_mismatch_raises(tmp_path, version):
    path = tmp_path / f"{PROFILE_ID}.json"
    doc = {"profile": PROFILE, "entries": {}}
    if version is not None:
        doc["schema_version"] = version
    content = json.dumps(doc).encode()
    path.write_bytes(content)
    store = BaselineStore(tmp_path)
    with pytest.raises(BaselineError, match="schema_version") as info:
        store.load(PROFILE_ID)
    assert str(path) in str(info.value)
    with pytest.raises(BaselineError):
        store.update(PROFILE_ID, PROFILE, {_key("default"): _entry("default")})
    assert path.read_bytes() == content


@pytest.mark.parametrize("bad", ["../escape", "a/b", "", ".."])
def test_profile_id_cannot_escape_the_directory(tmp_path, bad):
    with pytest.raises(ValueError):
        BaselineStore(tmp_path).update(bad, PROFILE, {})


def test_new_file_is_not_private(tmp_path):
    # mkstemp makes 0600 files; a committed baseline must be readable by others.
    path = BaselineStore(tmp_path).update(PROFILE_ID, PROFILE, {})
    assert path.stat().st_mode & 0o044 == 0o044


# --- entries and provenance ---------------------------------------------------------


def test_make_entry_records_provenance():
    entry = make_entry(
        test="t",
        trick="default",
        topology={"workers": 1},
        workload={},
        samples=[10.0, 11.0],
        extra={"steady_steps": 17},
        single_img_per_sec=6.0,
    )
    assert set(entry) == {"test", "trick", "topology", "workload", "summary", "sessions"}
    (session,) = entry["sessions"]
    assert set(session) == {"samples", "versions", "commit", "date", "host", "single_img_per_sec", "extra"}
    assert session["versions"]["python"]
    assert datetime.strptime(session["date"], "%Y-%m-%dT%H:%M:%SZ")
    assert session["host"] == platform.node()
    assert session["single_img_per_sec"] == 6.0
    assert entry["summary"]["n"] == 2


# --- quality ---------------------------------------------------------------------------


def test_quality_ok():
    assert check_baseline_quality([100.0, 102.0, 99.0], max_rel_spread=0.1) is None


def test_quality_rejects_single_sample():
    reason = check_baseline_quality([100.0], max_rel_spread=0.1)
    assert reason is not None and "--bpsperf-repeats" in reason and "1 sample" in reason


def test_quality_rejects_noisy_samples():
    reason = check_baseline_quality([100.0, 160.0, 60.0], max_rel_spread=0.1)
    assert reason is not None
    assert "--bpsperf-repeats" in reason and "10.0%" in reason and "47.2%" in reason


# --- sessions -----------------------------------------------------------------------


def _session(samples, day: int, single=None) -> dict:
    return make_session(
        samples=samples,
        commit=f"{day:040d}",
        date=f"2024-05-{day:02d}T12:00:00Z",
        versions={"python": "3.11.7"},
        single_img_per_sec=single,
        host="ci-1",
    )


_HEAD = {"test": "test_resnet50_throughput", "trick": "default", "topology": TOPOLOGY, "workload": WORKLOAD}


def test_adding_sessions_keeps_the_window_and_the_oldest_leave(tmp_path):
    store = BaselineStore(tmp_path)
    for day in range(1, 5):
        store.add_sessions(
            PROFILE_ID, PROFILE, {_key("default"): (_HEAD, _session([100.0 + day, 99.0], day))}, window=3
        )
    entry = store.get(PROFILE_ID, _key("default"))
    assert [s["date"][:10] for s in entry["sessions"]] == ["2024-05-02", "2024-05-03", "2024-05-04"]
    assert session_samples(entry) == [[102.0, 99.0], [103.0, 99.0], [104.0, 99.0]]
    assert entry["summary"]["n"] == 6
    assert {s["host"] for s in entry["sessions"]} == {"ci-1"}


def test_adding_a_session_changes_few_lines(tmp_path):
    store = BaselineStore(tmp_path)
    path = store.add_sessions(PROFILE_ID, PROFILE, {_key("default"): (_HEAD, _session([100.0, 99.0], 1))}, window=10)
    before = path.read_text().splitlines()
    store.add_sessions(PROFILE_ID, PROFILE, {_key("default"): (_HEAD, _session([101.0, 98.0], 2))}, window=10)
    after = path.read_text().splitlines()
    changed = [
        line
        for line in difflib.unified_diff(before, after, lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    # the new session (about 20 lines) and the summary's figures; nothing else moves
    removed = [line for line in changed if line.startswith("-")]
    assert len(changed) < 40
    assert all(
        '"' in line and any(k in line for k in ("max", "mean", "median", "min", "n", "rel_spread", "stdev", "}", "]"))
        for line in removed
    )


def test_version_1_file_is_read_as_one_session_and_written_as_version_2(tmp_path):
    path = tmp_path / f"{PROFILE_ID}.json"
    old = {
        "test": "t",
        "trick": "default",
        "topology": {},
        "workload": {},
        "samples": [10.0, 11.0],
        "summary": {"n": 2},
        "versions": {"python": "3.9"},
        "commit": "a" * 40,
        "date": "2024-01-01T00:00:00Z",
        "extra": {"steps_per_run": 20},
    }
    path.write_text(json.dumps({"schema_version": 1, "profile": PROFILE, "entries": {_key("default"): old}}))
    store = BaselineStore(tmp_path)
    loaded = store.load(PROFILE_ID)
    assert loaded.schema_version == 1
    entry = loaded.get(_key("default"))
    assert session_samples(entry) == [[10.0, 11.0]]
    assert entry["sessions"][0]["commit"] == "a" * 40 and "samples" not in entry
    store.add_sessions(PROFILE_ID, PROFILE, {_key("default"): (_HEAD, _session([12.0, 13.0], 9))}, window=10)
    data = json.loads(path.read_text())
    assert data["schema_version"] == 2
    written = data["entries"][_key("default")]
    assert session_samples(written) == [[10.0, 11.0], [12.0, 13.0]]
    assert written["sessions"][0] == {
        "samples": [10.0, 11.0],
        "commit": "a" * 40,
        "date": "2024-01-01T00:00:00Z",
        "versions": {"python": "3.9"},
        "extra": {"steps_per_run": 20},
        "host": None,
        "single_img_per_sec": None,
    }
    assert written["summary"]["n"] == 4


def test_migrate_keeps_unknown_keys_and_leaves_version_2_alone():
    v2 = add_session(None, _HEAD, _session([1.0, 2.0], 1), window=5)
    assert migrate_entry(v2) == v2
    assert migrate_entry({"note": "x"}) == {"note": "x"}
    with pytest.raises(ValueError):
        add_session(None, _HEAD, _session([1.0], 1), window=0)


def test_session_with_bad_samples_is_an_error_naming_the_file(tmp_path):
    path = tmp_path / f"{PROFILE_ID}.json"
    content = json.dumps(
        {"schema_version": 2, "profile": PROFILE, "entries": {"k": {"sessions": [{"samples": ["fast"]}]}}}
    ).encode()
    path.write_bytes(content)
    with pytest.raises(BaselineError, match="samples") as info:
        BaselineStore(tmp_path).add_sessions(PROFILE_ID, PROFILE, {"k": (_HEAD, _session([1.0, 2.0], 1))}, window=3)
    assert str(path) in str(info.value)
    assert path.read_bytes() == content


def test_recorded_sessions_count_one_session_once_across_entries_and_give_the_latest_date(tmp_path):
    from pytest_bpsperf.store.entries import recorded_sessions

    store = BaselineStore(tmp_path)
    assert recorded_sessions({}) == (0, None) and store.profiles() == []
    for day in (3, 1):  # one session measures both tricks; a later file may bring an older session
        store.add_sessions(
            PROFILE_ID,
            PROFILE,
            {
                _key(trick): (dict(_HEAD, trick=trick), _session([100.0, 99.0], day))
                for trick in ("default", "omp-passive")
            },
            window=3,
        )
    entries = store.load(PROFILE_ID).entries
    assert recorded_sessions(entries) == (2, "2024-05-03T12:00:00Z")
    (tmp_path / "notes.txt").write_text("not a profile")
    assert store.profiles() == [PROFILE_ID]


# --- files of the older profile scheme ----------------------------------------------------------

OLD_FACTS = {
    "arch": "x86_64",
    "cores": 2,
    "cpu_model": "AMD EPYC",
    "gpu_count": 0,
    "gpu_model": None,
    "memory_gib_class": 24,
}
NEW_FACTS = {
    **OLD_FACTS,
    "cpu_vendor": "AuthenticAMD",
    "cpu_family": 25,
    "cpu_model_number": 1,
    "cpu_stepping": 1,
    "cpu_isa": ["avx2"],
    "profile_scheme": 2,
}


def _store_with(tmp_path, pid, facts):
    store = BaselineStore(tmp_path / "bl")
    entry = make_entry(
        test="t",
        trick="x",
        topology={},
        workload={},
        samples=[1.0, 1.1],
        commit="c" * 40,
        date="2026-01-01T00:00:00Z",
        versions={},
    )
    store.update(pid, {"id": pid, "facts": facts}, {"k": entry})
    return store


def test_adopt_moves_an_older_files_entries_to_the_new_profile(tmp_path):
    store = _store_with(tmp_path, "old-id", OLD_FACTS)
    before = store.load("old-id").entries
    path = store.adopt("old-id", {"id": "new-id", "facts": NEW_FACTS})
    assert path == store.path_for("new-id") and not store.path_for("old-id").exists()
    moved = store.load("new-id")
    assert moved.entries == before and moved.profile["adopted_from"] == "old-id"
    assert moved.profile["facts"] == NEW_FACTS


@pytest.mark.parametrize("case", ["todays-scheme", "target-has-entries", "missing"])
def test_adopt_refuses_and_changes_nothing(tmp_path, case):
    store = _store_with(tmp_path, "old-id", NEW_FACTS if case == "todays-scheme" else OLD_FACTS)
    if case == "target-has-entries":
        _store_with(tmp_path, "new-id", NEW_FACTS)
    snapshot = {p.name: p.read_bytes() for p in (tmp_path / "bl").iterdir()}
    with pytest.raises(
        BaselineError,
        match={
            "todays-scheme": "today's profile scheme",
            "target-has-entries": "already holds 1 entries",
            "missing": "does not exist",
        }[case],
    ):
        store.adopt("nope" if case == "missing" else "old-id", {"id": "new-id", "facts": NEW_FACTS})
    assert {p.name: p.read_bytes() for p in (tmp_path / "bl").iterdir()} == snapshot


def test_the_adopt_command_refuses_a_file_another_machine_recorded(tmp_path, monkeypatch, capsys):
    from pytest_bpsperf.cli import main
    from pytest_bpsperf.remote import hardware

    store = _store_with(tmp_path, "cpu-amd-epyc-2c-24g-1n-x86-64-994d8926", OLD_FACTS)
    xeon = {**NEW_FACTS, "cpu_model": "Intel(R) Xeon(R) Processor", "cpu_vendor": "GenuineIntel"}
    monkeypatch.setattr(
        hardware, "collect_facts", lambda **kw: dict(xeon, cluster=hardware._cluster_facts(kw["cluster"]))
    )
    assert (
        main(["baselines", "adopt", "cpu-amd-epyc-2c-24g-1n-x86-64-994d8926", "--baselines-dir", str(store.directory)])
        == 2
    )
    err = capsys.readouterr().err
    assert "was not recorded on this machine" in err and "cpu_model AMD EPYC -> Intel(R) Xeon(R) Processor" in err
    assert store.path_for("cpu-amd-epyc-2c-24g-1n-x86-64-994d8926").exists()
