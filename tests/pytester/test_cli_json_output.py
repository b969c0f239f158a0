"""``bpsperf ... --json`` on results files the plugin wrote: one document on stdout, the text's facts.

Each document is checked against ``pytest_bpsperf/schemas/cli.schema.json``, printed with sorted keys,
and holds what the text output says (the verdict lines themselves, the counts, the exit status).
The last tests hold the command to the plugin's meanings: ``--strict``, the export formats' names,
the history directory. Parser-level checks (which commands take ``--json``, the shared option names) are in
``tests/unit/cli/test_init.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers.cli import another_session, bpsperf
from helpers.fakes import MATRIX_TEST, fake_run_conftest, run
from pytest_bpsperf.store.schema import validate


def scaled(path, factor, out, **fields):
    """A copy of a results file whose every run is ``factor`` times as fast (a little noise), ``fields`` set."""
    doc = json.loads(path.read_text())
    for i, t in enumerate(doc["tests"]):
        t["img_per_sec"] *= factor * (1.0 + 0.01 * (i % 3 - 1))
    doc.update(fields)
    out.write_text(json.dumps(doc))
    return out


def document(out: str) -> dict:
    """The one JSON document a command printed: valid against the schema, keys sorted, nothing else."""
    doc = json.loads(out)
    assert out == json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    validate(doc, "cli", "the command's output")
    assert doc["schema_version"] == 1
    return doc


@pytest.fixture
def recorded(results, tmp_path, capsys):
    """A baselines directory with two recorded sessions of every job of ``results``."""
    bl = tmp_path / "baselines"
    for day in (1, 2):
        session = another_session(results, tmp_path / f"day{day}.json", f"2030-01-0{day}T00:00:00Z")
        assert bpsperf(capsys, "baselines", "record", session, "--baselines-dir", bl)[0] == 0
    return bl


def text_verdict_lines(out: str) -> "list[str]":
    return [
        line
        for line in out.splitlines()
        if line.split(" ", 1)[0] in ("OK", "REGRESSION", "IMPROVEMENT", "INCONCLUSIVE", "NO-BASELINE")
    ]


def test_check_json_gives_the_texts_verdicts(results, recorded, capsys):
    code, text, _ = bpsperf(capsys, "check", results, "--baselines-dir", recorded)
    jcode, out, err = bpsperf(capsys, "check", results, "--baselines-dir", recorded, "--json")
    doc = document(out)
    assert code == jcode == doc["exit_status"] == 0 and err == ""
    assert doc["command"] == "check" and doc["profile"] == "testprof" and doc["base_vs_head"] is False
    assert doc["baselines"] == str(recorded / "testprof.json") and doc["results"] == str(results)
    assert doc["counts"] == {"ok": 2} and doc["strict"] is False
    assert [v["line"] for v in doc["verdicts"]] == text_verdict_lines(text)
    for v in doc["verdicts"]:
        assert v["kind"] == "baseline" and v["status"] == "ok" and v["tolerance"] == 0.10
        assert v["ci_low"] <= v["ratio"] <= v["ci_high"] and v["ratio"] == pytest.approx(1.0, abs=0.02)
        assert v["runs"] == 3 and v["decided"] is True and v["detail"]["baseline_sessions"] == 2
    # the same files print the same bytes
    assert bpsperf(capsys, "check", results, "--baselines-dir", recorded, "--json")[1] == out


def test_check_json_keeps_the_exit_status_of_a_regression(results, recorded, tmp_path, capsys):
    slow = scaled(results, 0.6, tmp_path / "slow.json")
    code, out, err = bpsperf(
        capsys, "check", slow, "--baselines-dir", recorded, "--json", "--markdown", tmp_path / "v.md"
    )
    doc = document(out)
    assert code == doc["exit_status"] == 1 and err == ""
    assert doc["counts"] == {"regression": 2} and doc["markdown"] == str(tmp_path / "v.md")
    assert "❌ regression" in (tmp_path / "v.md").read_text()
    for v in doc["verdicts"]:
        assert v["status"] == "regression" and v["ratio"] == pytest.approx(0.6, abs=0.02)
        assert v["ci_high"] < 1 - v["tolerance"] and v["change_pct"] == pytest.approx(-40, abs=2)


def test_strict_fails_a_missing_baseline_as_the_plugin_does(results, tmp_path, capsys):
    empty = tmp_path / "none"
    code, out, _ = bpsperf(capsys, "check", results, "--baselines-dir", empty, "--json")
    doc = document(out)
    assert code == 0 and doc["counts"] == {"no-baseline": 2}
    assert all(v["ratio"] is None and v["ci_low"] is None and v["decided"] is None for v in doc["verdicts"])
    code, out, _ = bpsperf(capsys, "check", results, "--baselines-dir", empty, "--strict", "--json")
    assert code == document(out)["exit_status"] == 1 and document(out)["strict"] is True
    assert bpsperf(capsys, "check", results, "--baselines-dir", empty, "--strict")[0] == 1


def test_compare_json_counts_inconclusive_and_names_what_base_lacks(results, tmp_path, capsys):
    code, out, _ = bpsperf(capsys, "compare", results, results, "--json")
    doc = document(out)
    assert code == doc["exit_status"] == 0 and doc["counts"] == {"inconclusive": 2}
    assert doc["base"] == str(results) and doc["head"] == str(results) and doc["missing"] == []
    assert any("--strict fails it" in n for n in doc["notes"])
    assert bpsperf(capsys, "compare", results, results, "--json", "--strict")[0] == 1

    base = json.loads(results.read_text())
    base["tests"] = [t for t in base["tests"] if t["trick"] == "default"]
    (tmp_path / "base.json").write_text(json.dumps(base))
    code, out, _ = bpsperf(capsys, "compare", tmp_path / "base.json", results, "--json", "--session-spread", "0")
    doc = document(out)
    [missing] = doc["missing"]
    assert "omp-passive" in missing and code == 0
    assert {v["trick"]: v["status"] for v in doc["verdicts"]} == {"default": "ok", "omp-passive": "no-baseline"}


def pairs_file(results, out, factor):
    """A base-vs-head results file made of ``results``: each run is the base of a pair, its head ``factor`` times."""
    doc = json.loads(results.read_text())
    runs = []
    for t in doc["tests"]:
        runs.append({**t, "arm": "base", "pair": t["repeat"]})
        runs.append({**t, "arm": "head", "pair": t["repeat"], "img_per_sec": t["img_per_sec"] * factor})
    doc.update(schema_version=2, tests=runs, base_vs_head={"arms": {}, "seed": 0, "jobs": []})
    out.write_text(json.dumps(doc))
    return out


def test_json_of_a_base_vs_head_file_gives_each_pairs_ratio(results, tmp_path, capsys):
    pairs = pairs_file(results, tmp_path / "pairs.json", 0.7)
    for args in (["compare", pairs], ["check", pairs]):
        code, out, _ = bpsperf(capsys, *args, "--json")
        doc = document(out)
        assert code == doc["exit_status"] == 1 and doc["base_vs_head"] is True
        assert doc["counts"] == {"regression": 2}
        for v in doc["verdicts"]:
            assert v["kind"] == "pairs" and v["ratio"] == pytest.approx(0.7) and v["runs"] == 3
            assert len(v["detail"]["pair_table"]) == 3
    assert document(out)["baselines"] is None and document(out)["profile"] == "testprof"


def test_history_json_gives_each_trend_and_its_change_point(results, tmp_path, capsys):
    hist = tmp_path / "hist"
    for i, factor in enumerate((1.0, 1.0, 1.0, 0.7, 0.7, 0.7)):
        r = scaled(results, factor, tmp_path / f"r{i}.json", commit=f"{i:x}" * 40, date=f"2024-05-0{i + 1}T00:00:00Z")
        assert bpsperf(capsys, "history", "add", r, "--history", hist)[0] == 0
    code, out, _ = bpsperf(capsys, "history", "--history", hist, "--json")
    doc = document(out)
    assert code == 0 and doc["directory"] == str(hist) and len(doc["trends"]) == 2
    for t in doc["trends"]:
        assert t["commits"] == 6 and [p["commit"] for p in t["points"]] == [f"{i:x}" * 40 for i in range(6)]
        [step] = t["change_points"]
        assert step["index"] == 3 and step["label"] == "33333333" and step["change_pct"] == pytest.approx(-30, abs=2)
        assert t["change_pct"] == pytest.approx(-30, abs=2)
    assert bpsperf(capsys, "history", "show", "--dir", hist, "--json")[1] == out  # show is the default action
    code, out, _ = bpsperf(capsys, "history", "--history", hist, "--json", "--test", "nothing*")
    assert code == 0 and document(out)["trends"] == [] and document(out)["filters"]["test"] == "nothing*"


def test_baselines_list_and_show_json(recorded, capsys):
    code, out, _ = bpsperf(capsys, "baselines", "list", "--baselines-dir", recorded, "--json")
    [row] = document(out)["profiles"]
    assert code == 0 and row["profile"] == "testprof" and row["entries"] == 2
    assert row["path"] == str(recorded / "testprof.json") and row["latest"].startswith("20")
    code, text, _ = bpsperf(capsys, "baselines", "show", "testprof", "--baselines-dir", recorded)
    code, out, _ = bpsperf(capsys, "baselines", "show", "testprof", "--baselines-dir", recorded, "--json")
    doc = document(out)
    assert code == 0 and doc["profile"] == "testprof" and len(doc["entries"]) == 2
    assert [e["key"] for e in doc["entries"]] == sorted(e["key"] for e in doc["entries"])
    for e in doc["entries"]:
        assert e["sessions"] == 2 and e["n"] == 6 and f"    key {e['key']}" in text
    assert {e["trick"] for e in doc["entries"]} == {"default", "omp-passive"}
    assert "median 31.9 img/s, n=6" in text
    assert sorted(round(e["median_img_per_sec"], 1) for e in doc["entries"])[0] == 31.9


def test_bpsperf_history_reads_where_the_plugin_wrote_by_default(ourtester, monkeypatch, capsys):
    from pytest_bpsperf.store.history import HISTORY_DIR

    ourtester.makeconftest(fake_run_conftest())
    ourtester.makepyfile(test_x=MATRIX_TEST)
    ourtester.makeini("[pytest]\nbpsperf_profile = testprof\n")
    result = run(ourtester, "--bpsperf-repeats=2", f"--bpsperf-history={HISTORY_DIR}")
    assert result.ret == 0, result.stdout.str()
    monkeypatch.chdir(ourtester.path)
    capsys.readouterr()  # the inner session's output
    code, out, _ = bpsperf(capsys, "history", "--json")
    doc = document(out)
    assert code == 0 and doc["directory"] == HISTORY_DIR
    assert {t["trick"] for t in doc["trends"]} == {"default", "omp-passive"}


def test_export_takes_the_plugins_report_names_and_keeps_the_old_ones(results, tmp_path, capsys):
    for new, old in (("github-benchmark", "github"), ("bmf", "bmf")):
        assert bpsperf(capsys, "export", results, "--format", new, "-o", tmp_path / f"{new}.json")[0] == 0
        assert bpsperf(capsys, "export", results, "--format", old, "-o", tmp_path / f"old-{new}.json")[0] == 0
        assert (tmp_path / f"{new}.json").read_text() == (tmp_path / f"old-{new}.json").read_text()
    code, out, _ = bpsperf(capsys, "export", results, "--format", "pytest-benchmark", "-o", tmp_path / "pb.json")
    assert code == 0 and "(benchmark-json)" in out
    assert json.loads((tmp_path / "pb.json").read_text())["benchmarks"]


#: A test named with letters beyond ASCII (Python identifiers may hold them; pytest keeps them in node ids).
NAME = "test_größe_速度"


def test_json_keeps_letters_beyond_ascii_as_utf8(results, tmp_path, capsys):
    named = tmp_path / "named.json"
    named.write_text(results.read_text(encoding="utf-8").replace("test_x", NAME), encoding="utf-8")
    bl, hist = tmp_path / "bl", tmp_path / "hist"
    for _ in range(2):
        assert bpsperf(capsys, "baselines", "record", named, "--baselines-dir", bl)[0] == 0
    assert bpsperf(capsys, "history", "add", named, "--history", hist)[0] == 0
    files = [bl / "testprof.json", *hist.rglob("*.json")]
    for fmt in ("benchmark-json", "bmf", "github-benchmark"):
        assert bpsperf(capsys, "export", named, "--format", fmt, "-o", tmp_path / f"{fmt}.json")[0] == 0
        files.append(tmp_path / f"{fmt}.json")
    printed = [
        bpsperf(capsys, *argv, "--json")[1]
        for argv in (
            ("check", named, "--baselines-dir", bl),
            ("history", "--history", hist),
            ("baselines", "show", "testprof", "--baselines-dir", bl),
        )
    ]
    for text in printed + [f.read_bytes().decode("utf-8") for f in files]:
        assert NAME in text and "\\u" not in text, text[:300]
    assert document(printed[0])["verdicts"][0]["test"].startswith(f"{NAME.split('_', 1)[0]}_")
    # on stdout as UTF-8 bytes, in a process of its own
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_bpsperf.cli", "history", "--history", str(hist), "--json"],
        capture_output=True,
        timeout=60,
        env={**os.environ, "LC_ALL": "C.UTF-8"},
    )
    assert proc.returncode == 0 and NAME.encode("utf-8") in proc.stdout, proc.stderr


def test_the_plugins_json_files_keep_letters_beyond_ascii_as_utf8(ourtester):
    ourtester.makepyfile(test_x=MATRIX_TEST.replace("def test_x", f"def {NAME}"))
    ourtester.makeini("[pytest]\nbpsperf_profile = testprof\n")
    result = run(
        ourtester,
        "--bpsperf-json=r.json",
        "--bpsperf-benchmark-json=b.json",
        "--bpsperf-history=h",
        "--bpsperf-update-baselines",
        "--bpsperf-repeats=2",
    )
    assert result.ret == 0, result.stdout.str()
    for path in [
        ourtester.path / "r.json",
        ourtester.path / "b.json",
        *(ourtester.path / "h").rglob("*.json"),
        *(ourtester.path / "baselines").glob("*.json"),
    ]:
        text = path.read_bytes().decode("utf-8")
        assert f"test_x.py::{NAME}" in text and "\\u" not in text, path
