"""The ``bpsperf`` command on results files the plugin wrote (fed through ``pytest_bpsperf_run``).

The results files come from ``tests/pytester/conftest.py``: ``results`` in the default (overlapped)
timing, ``breakdown_results`` with every step split into compute and sync.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from helpers.cli import another_session, bpsperf
from pytest_bpsperf.store.results import read_document


def slowed(path, factor, out):
    """A copy of a results file whose every run is ``factor`` times as fast (a little noise added)."""
    doc = json.loads(path.read_text())
    for i, t in enumerate(doc["tests"]):
        t["img_per_sec"] *= factor * (1.0 + 0.01 * (i % 3 - 1))
    out.write_text(json.dumps(doc))
    return out


def test_results_file_matches_its_schema_and_records_where_it_ran(results):
    doc = read_document(results, "results")
    assert doc["profile"]["id"] == "testprof"
    assert "date" in doc and "versions" in doc
    assert all(t["key"].startswith("test_x.py::test_x|") for t in doc["tests"])
    assert len(doc["tests"][0]["workers"][0]["step_s"]) == 20  # the default steps on CPU


def test_compare_same_results_is_ok_within_one_session_and_inconclusive_across_two(results, capsys):
    code, out, _ = bpsperf(capsys, "compare", results, results, "--session-spread", "0")
    assert code == 0
    assert out.count("OK ") == 2 and "2 ok" in out
    # two sessions 25% apart cannot rule out a 10% drop from three runs: inconclusive, never "OK"
    code, out, _ = bpsperf(capsys, "compare", results, results)
    assert code == 0 and "OK " not in out
    assert out.count("INCONCLUSIVE") == 2 and "2 inconclusive" in out and "--strict fails it" in out
    code, out, _ = bpsperf(capsys, "compare", results, results, "--strict")
    assert code == 1


def test_compare_fails_on_a_regression_as_the_plugin_would(results, tmp_path, capsys):
    head = slowed(results, 0.7, tmp_path / "head.json")
    code, out, _ = bpsperf(capsys, "compare", results, head, "--session-spread", "0")
    assert code == 1
    assert out.count("REGRESSION") == 2
    assert "-30.0%" in out or "-29.9%" in out or "-30.1%" in out
    # Told that both sides ran in one session, the margin adds nothing between sessions, and says so.
    assert out.count("(one session: no spread between sessions)") == 2
    # A drop of half the tolerance must pass: at 70% this 30% drop does (at 40% it lies between
    # half the tolerance and the tolerance, where a drop this clear still fails).
    code, out, _ = bpsperf(capsys, "compare", results, head, "--session-spread", "0", "--tolerance", "70%")
    assert code == 0 and "REGRESSION" not in out
    code, out, _ = bpsperf(capsys, "compare", results, head, "--session-spread", "0", "--tolerance", "40%")
    assert code == 1


def test_compare_allows_for_the_spread_between_two_sessions(results, tmp_path, capsys):
    # Two results files are two sessions: by default the head's session_spread (25%) is assumed
    # between them, and a 30% drop could be a slow session.
    head = slowed(results, 0.7, tmp_path / "head.json")
    code, out, _ = bpsperf(capsys, "compare", results, head)
    assert code == 0 and "REGRESSION" not in out
    assert out.count("between sessions ±25% assumed") == 2
    # The machine's measured spread (much smaller than 30%) makes the drop a regression again.
    code, out, _ = bpsperf(capsys, "compare", results, head, "--session-spread", "5%")
    assert code == 1 and out.count("between sessions ±5% assumed") == 2


def test_compare_names_a_bad_session_spread(results, capsys):
    with pytest.raises(SystemExit) as exc:
        bpsperf(capsys, "compare", results, results, "--session-spread", "lots")
    assert exc.value.code == 2
    assert "--session-spread 'lots'" in capsys.readouterr().err


def test_record_then_check_then_prune(results, tmp_path, capsys):
    bl = tmp_path / "baselines"
    code, out, _ = bpsperf(capsys, "baselines", "record", results, "--dir", bl)
    assert code == 0 and "recorded 2 baseline entries" in out
    stored = json.loads((bl / "testprof.json").read_text())
    assert {e["trick"] for e in stored["entries"].values()} == {"default", "omp-passive"}
    assert all([len(x["samples"]) for x in e["sessions"]] == [3] for e in stored["entries"].values())
    # a second session's recording adds a session to each entry (as --bpsperf-update-baselines does):
    # with two sessions the spread between sessions is estimated, not assumed
    code, out, _ = bpsperf(capsys, "baselines", "record", another_session(results, tmp_path / "day2.json"), "--dir", bl)
    stored = json.loads((bl / "testprof.json").read_text())
    assert code == 0 and all(len(e["sessions"]) == 2 for e in stored["entries"].values())

    code, out, _ = bpsperf(capsys, "check", results, "--baselines-dir", bl)
    assert code == 0 and "2 ok" in out
    code, out, _ = bpsperf(
        capsys,
        "check",
        slowed(results, 0.6, tmp_path / "slow.json"),
        "--baselines-dir",
        bl,
        "--markdown",
        tmp_path / "v.md",
    )
    assert code == 1 and "2 regression" in out
    assert "❌ regression" in (tmp_path / "v.md").read_text()

    code, out, _ = bpsperf(capsys, "baselines", "list", "--dir", bl)
    assert code == 0 and "testprof" in out and " 2 " in out
    assert re.search(r" \d{4}-\d\d-\d\dT", out)  # the latest recorded session's date
    code, out, _ = bpsperf(capsys, "baselines", "show", "testprof", "--dir", bl)
    assert "median 31.9 img/s, n=6" in out

    code, out, _ = bpsperf(capsys, "baselines", "prune", "testprof", "--dir", bl, "--trick", "omp-passive", "--dry-run")
    assert "would remove" in out and len(json.loads((bl / "testprof.json").read_text())["entries"]) == 2
    code, out, _ = bpsperf(capsys, "baselines", "prune", "testprof", "--dir", bl, "--trick", "omp-passive")
    left = json.loads((bl / "testprof.json").read_text())["entries"]
    assert code == 0 and [e["trick"] for e in left.values()] == ["default"]


def test_record_refuses_a_single_run(results, tmp_path, capsys):
    doc = json.loads(results.read_text())
    doc["tests"] = [t for t in doc["tests"] if t["repeat"] == 0]
    one = tmp_path / "one.json"
    one.write_text(json.dumps(doc))
    code, out, _ = bpsperf(capsys, "baselines", "record", one, "--dir", tmp_path / "bl")
    assert code == 1 and out.count("refused") == 2 and "at least 2 runs" in out
    assert not (tmp_path / "bl" / "testprof.json").exists()


def test_history_add_and_trend_table(results, tmp_path, capsys):
    hist = tmp_path / "history"
    for i, factor in enumerate((1.0, 1.0, 1.0, 0.7, 0.7, 0.7)):
        doc = json.loads(slowed(results, factor, tmp_path / f"r{i}.json").read_text())
        doc["commit"], doc["date"] = f"{i:x}" * 40, f"2024-05-0{i + 1}T00:00:00Z"
        (tmp_path / f"r{i}.json").write_text(json.dumps(doc))
        code, out, _ = bpsperf(capsys, "history", "add", tmp_path / f"r{i}.json", "--dir", hist)
        assert code == 0 and "saved 6 runs" in out
    code, out, _ = bpsperf(capsys, "history", "--dir", hist)
    assert code == 0
    lines = [line for line in out.splitlines() if line.startswith("test_x ")]
    assert len(lines) == 2 and all("at 33333333" in line for line in lines), out
    for argv in (("--dir", hist, "show"), ("show", "--dir", hist)):  # the directory before or after 'show'
        assert bpsperf(capsys, "history", *argv)[1] == out
    code, _, err = bpsperf(capsys, "history", "add", tmp_path / "r0.json", "--dir", hist)
    assert code == 2 and "already exists" in err


def test_report_html_with_pictures(breakdown_results, tmp_path, capsys):
    code, out, _ = bpsperf(capsys, "report", "--results", breakdown_results, "--out", tmp_path / "rep")
    assert code == 0
    page = (tmp_path / "rep" / "report.html").read_text()
    assert page.count('<img src="bpsperf-img/') == 3
    for kind in ("steps", "matrix", "split"):
        (path,) = (tmp_path / "rep" / "bpsperf-img").glob(f"{kind}-test_x-*.png")
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("fmt, name", [("html", "report.html"), ("md", "report.md")])
def test_report_of_overlapped_runs_shows_no_split(results, tmp_path, capsys, fmt, name):
    doc = read_document(results, "results")
    assert all(t["timing"] == "overlapped" and t["compute_s_per_step"] is None for t in doc["tests"])
    code, out, err = bpsperf(capsys, "report", "--results", results, "--out", tmp_path / "rep", "--format", fmt)
    assert code == 0, err
    page = (tmp_path / "rep" / name).read_text()
    cell = '<td class="num">- (overlapped)</td>' * 2 if fmt == "html" else " | - (overlapped) | - (overlapped) |"
    assert page.count(cell) == 6, page
    assert not list((tmp_path / "rep" / "bpsperf-img").glob("split-*.png"))  # nothing split to draw


def test_command_imports_neither_ray_nor_mxnet_nor_pytest(results, tmp_path):
    code = (
        "import sys\n"
        "from pytest_bpsperf.cli import main\n"
        f"main(['check', {str(results)!r}, '--baselines-dir', {str(tmp_path)!r}])\n"
        f"main(['export', {str(results)!r}, '--format', 'bmf', '-o', {str(tmp_path / 'b.json')!r}])\n"
        "print(sorted(m for m in ('ray', 'mxnet', 'pytest', '_pytest', 'matplotlib') if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_prune_older_than_goes_by_each_entrys_latest_session(results, tmp_path, capsys):
    # Schema-2 entries keep their dates in their sessions: an entry is older than DATE when its
    # latest recorded session is, whatever its first session's date.
    bl = tmp_path / "baselines"
    doc = json.loads(results.read_text())
    doc["date"] = "2024-01-10T00:00:00Z"
    (tmp_path / "jan.json").write_text(json.dumps(doc))
    doc["date"] = "2024-06-10T00:00:00Z"
    doc["tests"] = [t for t in doc["tests"] if t["trick"] == "default"]
    (tmp_path / "jun.json").write_text(json.dumps(doc))
    for name in ("jan.json", "jun.json"):
        code, out, _ = bpsperf(capsys, "baselines", "record", tmp_path / name, "--dir", bl)
        assert code == 0, out
    stored = json.loads((bl / "testprof.json").read_text())["entries"]
    assert sorted(len(e["sessions"]) for e in stored.values()) == [1, 2]

    code, out, _ = bpsperf(capsys, "baselines", "prune", "testprof", "--dir", bl, "--older-than", "2024-03-01")
    left = json.loads((bl / "testprof.json").read_text())["entries"]
    assert code == 0 and "removed 1 entry" in out, out
    assert [e["trick"] for e in left.values()] == ["default"]
    assert [s["date"] for s in next(iter(left.values()))["sessions"]] == [
        "2024-01-10T00:00:00Z",
        "2024-06-10T00:00:00Z",
    ]
    code, out, _ = bpsperf(capsys, "baselines", "prune", "testprof", "--dir", bl, "--older-than", "2024-01-01")
    assert code == 0 and "nothing matches" in out
    assert len(json.loads((bl / "testprof.json").read_text())["entries"]) == 1


def test_prune_refuses_an_older_than_that_is_not_a_date(results, tmp_path, capsys):
    # Compared as text, "March" is later than every ISO date: it would remove every entry.
    bl = tmp_path / "baselines"
    assert bpsperf(capsys, "baselines", "record", results, "--dir", bl)[0] == 0
    with pytest.raises(SystemExit) as exc:
        bpsperf(capsys, "baselines", "prune", "testprof", "--dir", bl, "--older-than", "March")
    assert exc.value.code == 2
    assert "--older-than 'March'" in capsys.readouterr().err
    assert len(json.loads((bl / "testprof.json").read_text())["entries"]) == 2


def test_history_add_refuses_a_commit_that_is_not_a_commit_id(results, tmp_path, capsys):
    # A crafted results file must not make 'history add' write outside the history directory.
    doc = json.loads(results.read_text())
    doc["commit"], doc["date"] = "../../../../x", "2024-05-01T00:00:00Z"
    crafted = tmp_path / "in" / "crafted.json"
    crafted.parent.mkdir()
    crafted.write_text(json.dumps(doc))
    hist = tmp_path / "a" / "b" / "history"
    code, _, err = bpsperf(capsys, "history", "add", crafted, "--dir", hist)
    assert code == 2 and "commit '../../../../x'" in err and str(crafted) in err, err
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == [crafted]
    code, _, err = bpsperf(capsys, "history", "add", results, "--dir", hist, "--commit", "v1.2/rc")
    assert code == 2 and "commit 'v1.2/rc' (from --commit)" in err, err
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == [crafted]


def test_comment_of_a_results_file_leads_with_its_summary_and_folds_its_report(results, tmp_path, capsys):
    code, _, err = bpsperf(capsys, "report", "--results", results, "--out", tmp_path / "rep", "--format", "markdown")
    assert code == 0, err
    report = (tmp_path / "rep" / "report.md").read_text()
    code, out, err = bpsperf(
        capsys,
        "comment",
        results,
        "--markdown",
        tmp_path / "rep" / "report.md",
        "--marker",
        "cpu",
        "--link",
        "https://ci.invalid/run/1#artifacts",
        "--out",
        tmp_path / "comment.md",
    )
    assert code == 0, err
    body = (tmp_path / "comment.md").read_text()
    lines = body.splitlines()
    assert lines[0] == "<!-- bpsperf:cpu -->"
    assert read_document(results, "results")["verdicts"] == []  # the fixture's session records, it gates nothing
    assert lines[1].startswith("**bpsperf on `cpu`: no verdict** ")
    assert "(https://ci.invalid/run/1#artifacts)" in lines[1] and "<details>" in body
    # the report itself, its pictures named rather than shown
    assert "## bpsperf results" in body and "![" not in body and report.count("![") == body.count("`bpsperf-img/")
    assert f"wrote {tmp_path / 'comment.md'}" in out


def test_comment_names_a_missing_report(results, tmp_path, capsys):
    code, _, err = bpsperf(
        capsys,
        "comment",
        results,
        "--markdown",
        tmp_path / "nope.md",
        "--marker",
        "cpu",
        "--out",
        tmp_path / "comment.md",
    )
    assert code == 2 and "--markdown" in err and "nope.md" in err
    assert not (tmp_path / "comment.md").exists()


# --- the command decides as the plugin did (fed runs of FAKE_SPEED, single process FAKE_SINGLE: ``fed``) ---

#: the workload is pinned (a GPU machine's defaults would differ); the fake has no session effect
PINNED = (
    "-p",
    "no:cacheprovider",
    "--bpsperf-profile=testprof",
    "--bpsperf-baselines-dir=bl",
    "--bpsperf-steps=12",
    "--bpsperf-batch-size=8",
    "--bpsperf-image-size=32",
    "--bpsperf-omp-threads=2",
    "--bpsperf-scaling",
    "--bpsperf-session-spread=1%",
)


def _session(pytester, monkeypatch, speed: float, single: float, *args: str):
    monkeypatch.setenv("FAKE_SPEED", str(speed))
    monkeypatch.setenv("FAKE_SINGLE", str(single))
    return pytester.runpytest(*PINNED, *args)


def test_check_decides_a_normalized_session_as_the_plugin_did(fed, monkeypatch):
    import json

    from pytest_bpsperf.judge.offline import check_results, compare_results
    from pytest_bpsperf.store.baselines import BaselineStore

    _session(
        fed, monkeypatch, 1.0, 10.0, "--bpsperf-update-baselines", "--bpsperf-repeats=3", "--bpsperf-json=base.json"
    ).assert_outcomes(passed=3)
    # a day 30% slower for everything, the single process too: relative to it, nothing changed
    result = _session(fed, monkeypatch, 0.7, 7.0, "--bpsperf-normalize=single", "--bpsperf-json=head.json")
    result.assert_outcomes(passed=1)
    head = json.loads((fed.path / "head.json").read_text())
    plugin = head["tests"][-1]["verdict"]
    assert plugin["status"] == "ok" and plugin["normalize"] == "single"
    [checked] = check_results(head, BaselineStore(fed.path / "bl"), profile_id="testprof")
    assert (checked.status, checked.normalize, checked.single_img_per_sec) == ("ok", "single", 7.0)
    assert checked.comparison.change_pct == pytest.approx(plugin["change_pct"])
    # against the earlier results file, too
    [compared], _ = compare_results(json.loads((fed.path / "base.json").read_text()), head)
    assert (compared.status, compared.normalize) == ("ok", "single")


def test_baselines_recorded_from_a_results_file_keep_the_single_process_img_per_sec(fed, monkeypatch):
    import json

    from pytest_bpsperf.judge.offline import baseline_sessions

    _session(fed, monkeypatch, 1.0, 10.0, "--bpsperf-repeats=3", "--bpsperf-json=r.json")
    [(_, session)] = baseline_sessions(json.loads((fed.path / "r.json").read_text()))[0].values()
    assert session["single_img_per_sec"] == 10.0  # as --bpsperf-update-baselines records it
