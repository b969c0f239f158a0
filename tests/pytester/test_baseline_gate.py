"""The baseline gate in pytest (``plugin/baseline_gate.py``): baselines per hardware profile, verdicts, reports.

Baselines per hardware profile, noise-aware verdicts and the reports built on them.

No distributed run here: the pytester project implements the public hook
``pytest_bpsperf_run`` and returns finished job outputs from synthetic step
timings, in the overlapped timing. ``FAKE_SPEED`` scales throughput (1.0 is
what the baseline is recorded at); each repeat differs by about 1%
(``FAKE_NOISY=1``: 40%, ``FAKE_JITTER``: any), so that the recorded baselines
have a known, small noise. The fake has no between-session noise, so the tests
pin a small ``session_spread`` unless they test the assumed one.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import statistics
import subprocess
from datetime import datetime
from pathlib import Path

import pytest

from helpers.fakes import GATED_TEST, fake_run_conftest
from helpers.junit import suite_properties
from helpers.paths import pytest_benchmark_tool
from helpers.repos import git, init

#: The speed of a run, from the environment (see above), and the single-process img/s (FAKE_SINGLE).
SCENARIO = """
import os

#: per-repeat deviation, in units of the jitter: repeat 1, 2, 3, ...
DEVIATION = (0.0, 1.0, -1.0)
CALLS = {}


def scenario(config, spec):
    jitter = 0.4 if os.environ.get("FAKE_NOISY") == "1" else float(os.environ.get("FAKE_JITTER", "0.01"))
    speed = float(os.environ.get("FAKE_SPEED", "1.0"))
    # FAKE_SLOW_CALLS=N: the first N jobs of each trick are an unlucky 40% slower
    CALLS[spec.trick.name] = CALLS.get(spec.trick.name, 0) + 1
    if CALLS[spec.trick.name] <= int(os.environ.get("FAKE_SLOW_CALLS", "0")):
        speed *= 0.6
    speed *= 1.0 + jitter * DEVIATION[spec.repeat % len(DEVIATION)]
    return speed


def single_img_per_sec(config, spec):
    # FAKE_SINGLE: the single-process img/s of this session (scaling reference)
    return float(os.environ["FAKE_SINGLE"]) if os.environ.get("FAKE_SINGLE") else None


def foreign_load(config, spec):
    # FAKE_FOREIGN=R:C: repeat R (0-based) saw C cores of other processes; the others 0.03 (the harness)
    if not os.environ.get("FAKE_FOREIGN"):
        return None
    repeat, cores = os.environ["FAKE_FOREIGN"].split(":")
    return float(cores) if spec.repeat == int(repeat) else 0.03
"""

#: omp-passive at 1.25x the default trick's throughput (so the two entries differ)
CONFTEST = fake_run_conftest({"omp-passive": 1.25}, step_s=0.25, wobble=0.02, extra=SCENARIO)

PERF_TEST = GATED_TEST

#: the same test, but with its own tolerance
# a drop of half the tolerance or less passes: 70% lets a 30% drop through
TOLERANT_TEST = PERF_TEST.replace("def test_x", '@pytest.mark.bpsperf(tolerance="70%")\ndef test_x')

#: measures without asserting anything: only the session can fail
MEASURE_ONLY_TEST = PERF_TEST.replace("    result.assert_within_baseline()\n", "")

TRICKS = ("default", "omp-passive")
TOPOLOGY = "server_nodes=1,servers_per_node=1,workers=2"
WORKLOAD = (
    "backend=mxnet,batch_size=8,data=synthetic,dtype=float32,image_size=32,model=resnet50_v2,omp_threads=2,"
    "steps=12,timing=overlapped"
)
# The workload is pinned: on a GPU machine the defaults (and so the keys) would differ.
PINNED = (
    "--bpsperf-steps=12",
    "--bpsperf-batch-size=8",
    "--bpsperf-image-size=32",
    "--bpsperf-omp-threads=2",
    "--bpsperf-no-scaling",
    "--bpsperf-session-spread=1%",
)


@pytest.fixture
def fake_run() -> str:
    """This module's runs: ``CONFTEST`` (ourtester writes it)."""
    return CONFTEST


@pytest.fixture(autouse=True)
def perf_test(ourtester: pytest.Pytester) -> None:
    """Every test here runs the project's perf test ``PERF_TEST``, unless it writes another."""
    ourtester.makepyfile(test_x=PERF_TEST)


def baselines_dir(pytester: pytest.Pytester) -> Path:
    return pytester.path / "bl"


def baselines_file(pytester: pytest.Pytester) -> Path:
    return baselines_dir(pytester) / "testprof.json"


def run(pytester: pytest.Pytester, *args: str, profile: "str | None" = "testprof") -> pytest.RunResult:
    """Run the inner session on the test profile and the test's baselines directory."""
    common = ["-p", "no:cacheprovider", f"--bpsperf-baselines-dir={baselines_dir(pytester)}", *PINNED]
    if profile is not None:
        common += ["--bpsperf-profile", profile]
    return pytester.runpytest(*common, *args)


def record(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str) -> dict:
    """Record baselines at speed 1.0 from 3 repeats; return the file's content."""
    monkeypatch.setenv("FAKE_SPEED", "1.0")
    result = run(pytester, "--bpsperf-update-baselines", "--bpsperf-repeats", "3", *args)
    assert result.ret == 0, result.stdout.str()
    return json.loads(baselines_file(pytester).read_text())


def key(trick: str) -> str:
    return f"test_x.py::test_x|{trick}|{TOPOLOGY}|{WORKLOAD}"


def git_commit(path: Path) -> str:
    """Make ``path`` a git repository with one commit; return its sha."""
    init(path)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "perf tests")
    return git(path, "rev-parse", "HEAD")


# --- no baseline -------------------------------------------------------------------------------------


def test_no_baseline_skips_with_the_update_command(ourtester):
    result = run(ourtester, "-rs")
    result.assert_outcomes(skipped=2)
    assert result.ret == pytest.ExitCode.OK
    for trick in TRICKS:
        result.stdout.fnmatch_lines(
            [
                f"SKIPPED *test_x.py::test_x[[]{trick}[]] [[]profile testprof, trick {trick}[]]: no baseline *"
                "record one with: pytest -m perf --bpsperf-update-baselines --bpsperf-repeats 3 test_x.py::test_x"
            ]
        )
    assert not baselines_file(ourtester).exists()


def test_no_baseline_fails_when_strict(ourtester):
    result = run(ourtester, "--bpsperf-strict")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert "no baseline for this test" in out
    assert out.count("(--bpsperf-strict: a missing baseline fails)") == 2


# --- recording ----------------------------------------------------------------------------------------


def test_update_writes_one_entry_per_trick_and_keeps_others(ourtester, monkeypatch):
    other = {"test": "test_other.py::test_y", "trick": "default", "samples": [10.0, 11.0], "tolerance": 0.1}
    baselines_dir(ourtester).mkdir()
    baselines_file(ourtester).write_text(
        json.dumps(
            {
                "schema_version": 1,
                "profile": {"id": "testprof"},
                "entries": {"test_other.py::test_y|baseline|-|-": other},
            }
        )
    )
    doc = record(ourtester, monkeypatch)

    assert doc["schema_version"] == 2
    assert doc["profile"]["id"] == "testprof"
    assert set(doc["entries"]) == {key("default"), key("omp-passive"), "test_other.py::test_y|baseline|-|-"}
    # the other test's entry is kept, migrated to one session
    assert doc["entries"]["test_other.py::test_y|baseline|-|-"] == {
        "test": "test_other.py::test_y",
        "trick": "default",
        "tolerance": 0.1,
        "sessions": [{"samples": [10.0, 11.0], "host": None, "single_img_per_sec": None}],
    }
    for trick in TRICKS:
        entry = doc["entries"][key(trick)]
        assert (entry["test"], entry["trick"]) == ("test_x.py::test_x", trick)
        (session,) = entry["sessions"]
        assert session["host"] == platform.node()
        assert session["single_img_per_sec"] is None  # scaling off
        samples = session["samples"]
        assert len(samples) == 3
        # The samples are the three repeats: 1.00, 1.01 and 0.99 times the same speed.
        assert sorted(s / samples[0] for s in samples) == pytest.approx([0.99, 1.0, 1.01], abs=1e-6)
        assert entry["summary"]["n"] == 3
        assert entry["summary"]["median"] == pytest.approx(statistics.median(samples))
        assert session["versions"]["python"] == platform.python_version()
        assert {"mxnet", "ray", "byteps", "gluoncv"} <= set(session["versions"])
        assert "commit" in session
        assert session["date"].endswith("Z")
        assert datetime.fromisoformat(session["date"].replace("Z", "+00:00")).tzinfo is not None
    by_trick = {t: statistics.median(doc["entries"][key(t)]["sessions"][0]["samples"]) for t in TRICKS}
    assert by_trick["omp-passive"] == pytest.approx(1.25 * by_trick["default"], rel=1e-6)
    assert sorted(os.listdir(baselines_dir(ourtester))) == ["testprof.json"]
    text = baselines_file(ourtester).read_text()
    assert text == json.dumps(doc, sort_keys=True, indent=2) + "\n"


def test_update_records_the_commit(ourtester, monkeypatch):
    sha = git_commit(ourtester.path)
    doc = record(ourtester, monkeypatch)
    assert {doc["entries"][key(t)]["sessions"][-1]["commit"] for t in TRICKS} == {sha}


def test_noisy_runs_are_refused_unless_forced(ourtester, monkeypatch):
    monkeypatch.setenv("FAKE_NOISY", "1")
    result = run(ourtester, "--bpsperf-update-baselines", "--bpsperf-repeats", "3")
    # The tests pass, but a session that was asked to record and recorded nothing fails.
    result.assert_outcomes(passed=6)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    for trick in TRICKS:
        result.stdout.fnmatch_lines(
            [
                f"bpsperf: refused: test_x.py::test_x [[]{trick}[]]: the 3 runs spread *more than the allowed 20.0%*"
                "more repeats (--bpsperf-repeats)*(--bpsperf-force-update records it anyway)"
            ]
        )
    result.stdout.fnmatch_lines(["bpsperf: baseline update incomplete: 2 entries refused, so the session fails"])
    assert not baselines_file(ourtester).exists()

    result = run(ourtester, "--bpsperf-update-baselines", "--bpsperf-repeats", "3", "--bpsperf-force-update")
    assert result.ret == pytest.ExitCode.OK
    assert "refused:" not in result.stdout.str()
    entries = json.loads(baselines_file(ourtester).read_text())["entries"]
    assert set(entries) == {key("default"), key("omp-passive")}
    assert entries[key("default")]["summary"]["rel_spread"] > 0.2


# --- verdicts -----------------------------------------------------------------------------------------


def test_unchanged_speed_is_ok(ourtester, monkeypatch):
    record(ourtester, monkeypatch)
    result = run(ourtester, "-v")
    result.assert_outcomes(passed=2)
    for trick in TRICKS:
        result.stdout.fnmatch_lines([f"OK * test_x.py::test_x[[]{trick}[]]: measured * vs baseline *"])
    assert "REGRESSION" not in result.stdout.str()


def test_slowdown_fails_each_trick_naming_figures_and_bisect(ourtester, monkeypatch):
    sha = git_commit(ourtester.path)
    record(ourtester, monkeypatch)
    monkeypatch.setenv("FAKE_SPEED", "0.7")
    result = run(ourtester, "--bpsperf-repeats", "3")
    # Only the last repeat of each trick decides; the earlier ones are pending and pass.
    result.assert_outcomes(passed=4, failed=2)
    out = result.stdout.str()
    for trick in TRICKS:
        result.stdout.fnmatch_lines(
            [
                f"test_x.py::test_x[[]{trick}-r3[]] [[]profile testprof, trick {trick}[]]: REGRESSION: "
                # 3 repeats and 2 confirmation runs
                "measured * img/s (5 runs) vs baseline * img/s (n=3, 1 session): -[23][09].*%, tolerance -10% (a drop "
                "of 10% fails, of 5% or less passes)*: a drop beyond noise*verdict after 5 runs",
            ]
        )
        assert (f"bpsperf bisect {sha[:12]} {sha[:12]} -- -m perf --bpsperf-tricks {trick} test_x.py::test_x") in out
    result.stdout.fnmatch_lines(
        ["FAILED test_x.py::test_x[[]default-r3[]]*", "FAILED test_x.py::test_x[[]omp-passive-r3[]]*"]
    )


def test_drop_within_the_baseline_noise_is_not_a_regression(ourtester, monkeypatch):
    monkeypatch.setenv("FAKE_NOISY", "1")
    record(ourtester, monkeypatch, "--bpsperf-force-update")
    monkeypatch.delenv("FAKE_NOISY")
    # 30% slower is beyond the 10% tolerance, but runs of this baseline differ by 40%: the data
    # cannot tell, which is not a pass (skipped, and failed with --bpsperf-strict).
    monkeypatch.setenv("FAKE_SPEED", "0.7")
    result = run(ourtester, "-v", "--bpsperf-json=perf.json")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["INCONCLUSIVE test_x.py::test_x[[]default[]]: measured *, noise margin ±*"])
    for t in json.loads((ourtester.path / "perf.json").read_text())["tests"]:
        verdict = t["verdict"]
        assert verdict["status"] == "inconclusive"
        assert verdict["change_pct"] < -15.0
        assert verdict["margin_pct"] > -verdict["change_pct"]


def test_speedup_passes_and_suggests_updating(ourtester, monkeypatch):
    record(ourtester, monkeypatch)
    monkeypatch.setenv("FAKE_SPEED", "1.5")
    result = run(ourtester, "-v", "--bpsperf-markdown=perf.md")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["IMPROVEMENT * test_x.py::test_x[[]default[]]: measured * +50.0%*"])
    md = (ourtester.path / "perf.md").read_text()
    assert "### Verdicts" in md
    assert "improvement" in md
    assert "consider recording new baselines with `pytest -m perf --bpsperf-update-baselines`" in md


def test_marker_tolerance_lets_the_slowdown_pass(ourtester, monkeypatch):
    ourtester.makepyfile(test_x=TOLERANT_TEST)
    record(ourtester, monkeypatch)
    monkeypatch.setenv("FAKE_SPEED", "0.7")
    result = run(ourtester, "--bpsperf-repeats", "3", "--bpsperf-json=perf.json")
    result.assert_outcomes(passed=6)
    doc = json.loads((ourtester.path / "perf.json").read_text())
    verdicts = [t["verdict"] for t in doc["tests"]]
    assert [v["status"] for v in verdicts] == ["ok"] * 6
    assert {v["tolerance"] for v in verdicts} == {0.7}
    assert all(v["change_pct"] == pytest.approx(-30.0, abs=0.1) for v in verdicts)


# --- unreadable baselines files ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "content, problem",
    [
        (b'{"schema_version": 1, "entries": {', "is not valid JSON"),
        (b'{"schema_version": 99, "profile": {"id": "testprof"}, "entries": {}}\n', "has schema_version 99"),
    ],
    ids=["invalid-json", "schema-99"],
)
def test_unreadable_file_fails_and_is_never_overwritten(ourtester, monkeypatch, content, problem):
    path = baselines_file(ourtester)
    path.parent.mkdir()
    path.write_bytes(content)

    result = run(ourtester)
    result.assert_outcomes(failed=2)
    assert result.stdout.str().count(f"bpsperf: baselines file {path} {problem}") == 2

    result = run(ourtester, "--bpsperf-update-baselines", "--bpsperf-repeats", "2")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert f"baselines file {path} {problem}" in result.stdout.str()
    assert path.read_bytes() == content

    # Tests that only measure pass; the session still fails because nothing could be recorded.
    ourtester.makepyfile(test_x=MEASURE_ONLY_TEST)
    result = run(ourtester, "--bpsperf-update-baselines", "--bpsperf-repeats", "2")
    result.assert_outcomes(passed=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([f"bpsperf: baselines NOT written: baselines file {path} {problem}*"])
    assert path.read_bytes() == content
    assert sorted(os.listdir(path.parent)) == ["testprof.json"]


# --- reports --------------------------------------------------------------------------------------------


def test_junitxml_properties(ourtester, monkeypatch):
    record(ourtester, monkeypatch)
    result = run(ourtester, "--junitxml=junit.xml")
    result.assert_outcomes(passed=2)
    # pytest's default junit_family (xunit2): suite-level properties named NODEID::NAME
    props = suite_properties(ourtester.path / "junit.xml")
    assert set(props) == {"test_x.py::test_x[default]", "test_x.py::test_x[omp-passive]"}
    for p in props.values():
        assert p["bpsperf_status"] == "ok"
        assert float(p["bpsperf_measured_img_per_sec"]) > 0
        assert p["bpsperf_profile"] == "testprof"
    ratio = float(props["test_x.py::test_x[omp-passive]"]["bpsperf_measured_img_per_sec"]) / float(
        props["test_x.py::test_x[default]"]["bpsperf_measured_img_per_sec"]
    )
    assert ratio == pytest.approx(1.25, rel=1e-6)


def test_github_actions_annotation_and_step_summary(ourtester, monkeypatch):
    record(ourtester, monkeypatch)
    summary = ourtester.path / "step_summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("FAKE_SPEED", "0.7")
    result = run(ourtester, "--bpsperf-repeats", "3")
    result.assert_outcomes(passed=4, failed=2)
    errors = [line for line in result.stdout.lines if line.startswith("::error file=")]
    assert len(errors) == 2
    # on the test's line, the property's ':' escaped as GitHub's toolkit does
    assert all(re.match(r"::error file=test_x\.py,line=\d+,title=bpsperf regression%3A ", line) for line in errors)
    text = summary.read_text()
    assert text.startswith("earlier step\n## bpsperf results")
    assert "### Verdicts" in text
    assert text.count("❌ regression") == 2


def test_no_step_summary_outside_github_actions(ourtester, monkeypatch):
    summary = ourtester.path / "step_summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = run(ourtester)
    result.assert_outcomes(skipped=2)
    assert not summary.exists()
    assert "::warning" not in result.stdout.str()


def test_benchmark_json_is_readable_by_pytest_benchmark_compare(ourtester, tmp_path):
    result = run(ourtester, "--bpsperf-benchmark-json=bench.json")
    result.assert_outcomes(skipped=2)
    path = ourtester.path / "bench.json"
    doc = json.loads(path.read_text())
    assert [b["name"] for b in doc["benchmarks"]] == ["test_x[default]", "test_x[omp-passive]"]
    for bench in doc["benchmarks"]:
        stats = bench["stats"]
        # Step 0 is warm-up; the 11 steady steps of 12 are the rounds.
        assert stats["rounds"] == 11
        assert len(stats["data"]) == 11
        assert stats["min"] <= stats["median"] <= stats["max"]
    assert doc["machine_info"]["bpsperf_profile"] == "testprof"

    exe = pytest_benchmark_tool("pytest-benchmark")  # in a venv of its own: not a dependency of the plugin
    first, second = tmp_path / "0001_first.json", tmp_path / "0002_second.json"
    shutil.copy(path, first)
    shutil.copy(path, second)
    proc = subprocess.run(
        [str(exe), "compare", str(first), str(second)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "test_x[default]" in proc.stdout
    assert "test_x[omp-passive]" in proc.stdout


def test_json_entries_carry_the_verdict(ourtester, monkeypatch):
    doc = record(ourtester, monkeypatch)
    result = run(ourtester, "--bpsperf-json=perf.json")
    result.assert_outcomes(passed=2)
    tests = json.loads((ourtester.path / "perf.json").read_text())["tests"]
    assert [t["trick"] for t in tests] == list(TRICKS)
    for t in tests:
        verdict = t["verdict"]
        assert verdict["status"] == "ok"
        assert verdict["profile"] == "testprof"
        assert verdict["key"] == key(t["trick"])
        assert verdict["samples"] == [t["img_per_sec"]]
        assert verdict["runs"] == 1
        assert verdict["baseline_sessions"] == 1
        assert verdict["baseline_img_per_sec"] == pytest.approx(
            statistics.median(doc["entries"][key(t["trick"])]["sessions"][0]["samples"])
        )


def test_profile_facts_hook_changes_the_detected_profile(ourtester):
    def detected() -> tuple:
        result = run(ourtester, "--bpsperf-json=perf.json", profile=None)
        result.assert_outcomes(skipped=2)
        (line,) = [
            h for h in json.loads((ourtester.path / "perf.json").read_text())["session"] if h.startswith("profile: ")
        ]
        result.stdout.fnmatch_lines([line.replace("[", "[[]")])
        return line.split()[1], line

    plain_id, plain_line = detected()
    ourtester.makeconftest(
        CONFTEST
        + """

def pytest_bpsperf_profile_facts(config, facts):
    facts["rack"] = "rack-7"
"""
    )
    hooked_id, hooked_line = detected()
    assert plain_id != hooked_id
    assert "rack=rack-7" in hooked_line and "rack=" not in plain_line
    # The name comes from the hardware, only the hash part differs.
    assert plain_id.rsplit("-", 1)[0] == hooked_id.rsplit("-", 1)[0]


def test_one_unlucky_run_is_not_a_regression_once_confirmation_runs_disagree(ourtester, monkeypatch, tmp_path):
    record(ourtester, monkeypatch)
    monkeypatch.setenv("FAKE_SLOW_CALLS", "1")
    out = tmp_path / "r.json"
    result = run(ourtester, f"--bpsperf-json={out}")
    assert result.parseoutcomes().get("failed", 0) == 0
    doc = json.loads(out.read_text())
    for trick in TRICKS:
        runs = [t for t in doc["tests"] if t["trick"] == trick]
        # the slow run, then confirmation runs until all runs together no longer show a regression
        assert len(runs) == 2
        assert runs[0]["img_per_sec"] < 0.7 * runs[1]["img_per_sec"]
        assert runs[-1]["verdict"]["status"] in ("ok", "inconclusive")
        assert len(runs[-1]["verdict"]["samples"]) == 2


def test_without_confirmation_runs_the_unlucky_run_fails(ourtester, monkeypatch):
    record(ourtester, monkeypatch)
    monkeypatch.setenv("FAKE_SLOW_CALLS", "1")
    result = run(ourtester, "--bpsperf-confirm=0")
    result.assert_outcomes(failed=2)


def test_a_real_regression_survives_confirmation(ourtester, monkeypatch):
    record(ourtester, monkeypatch)
    monkeypatch.setenv("FAKE_SPEED", "0.7")
    result = run(ourtester)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*confirmed: the regression held over 2 extra run(s) of this job*"])


# --- verdicts across sessions, adaptive runs, normalization ------------------------------------------


def test_one_recorded_session_assumes_the_between_session_spread(ourtester, monkeypatch):
    record(ourtester, monkeypatch)
    monkeypatch.setenv("FAKE_SPEED", "0.7")
    # The default spread between sessions (25%) is assumed: a 30% drop could be a slow day.
    result = run(ourtester, "-v", "--bpsperf-session-spread=25%", "--bpsperf-json=perf.json")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(
        [
            "INCONCLUSIVE test_x.py::test_x[[]default[]]: * -30.0%, tolerance -10% (a drop of 10% "
            "fails, of 5% or less passes), noise margin ±*% "
            "(between sessions ±25% assumed (1 recorded session, nothing else measured on this "
            "profile))*"
        ]
    )
    verdict = json.loads((ourtester.path / "perf.json").read_text())["tests"][0]["verdict"]
    assert verdict["between_sessions_assumed"] is True
    assert verdict["between_sessions_pct"] == pytest.approx(25.0)
    assert verdict["margin_pct"] > 30.0
    # With a quiet assumption the same drop fails.
    result = run(ourtester, "-v", "--bpsperf-session-spread=2%")
    result.assert_outcomes(failed=2)


def test_update_adds_a_session_and_the_window_prunes_the_oldest(ourtester, monkeypatch):
    for speed in ("1.0", "1.02", "0.98"):
        monkeypatch.setenv("FAKE_SPEED", speed)
        result = run(ourtester, "-v", "--bpsperf-update-baselines", "--bpsperf-repeats", "2", "--bpsperf-sessions=2")
        assert result.ret == 0, result.stdout.str()
    entry = json.loads(baselines_file(ourtester).read_text())["entries"][key("default")]
    assert len(entry["sessions"]) == 2
    first = entry["sessions"][0]["samples"]
    assert first[0] == pytest.approx(1.02 * entry["sessions"][1]["samples"][0] / 0.98, rel=1e-6)
    assert entry["summary"]["n"] == 4
    # The verdict estimates the spread between sessions from them (no longer assumed).
    result = run(ourtester, "-v", "--bpsperf-session-spread=25%")
    assert result.parseoutcomes().get("failed", 0) == 0
    # (pooled with the other trick's entry, which has 2 recorded sessions too)
    result.stdout.fnmatch_lines(
        [
            "* test_x.py::test_x[[]default[]]: * (n=4, 2 sessions)* "
            "(between sessions ±*% from 2 sessions pooled with 2 sessions of 1 other job(s) of "
            "this profile)*"
        ]
    )


def test_undecided_job_runs_again_until_decided_and_says_how_many_runs(ourtester, monkeypatch):
    monkeypatch.setenv("FAKE_JITTER", "0.05")
    record(ourtester, monkeypatch)
    result = run(ourtester, "-v", "--bpsperf-confidence=95%", "--bpsperf-json=perf.json", "--junitxml=junit.xml")
    result.assert_outcomes(passed=2)
    tests = json.loads((ourtester.path / "perf.json").read_text())["tests"]
    for trick in TRICKS:
        runs = [t for t in tests if t["trick"] == trick]
        # one run leaves the tolerance interval across a 10% drop; the second decides
        assert len(runs) == 2
        verdict = runs[-1]["verdict"]
        assert (verdict["status"], verdict["runs"], verdict["decided"]) == ("ok", 2, True)
    result.stdout.fnmatch_lines(["OK * test_x.py::test_x[[]default[]]: measured * (2 runs) * verdict after 2 runs"])
    props = suite_properties(ourtester.path / "junit.xml")
    assert props["test_x.py::test_x[default]"]["bpsperf_runs"] == "2"
    assert props["test_x.py::test_x[default]"]["bpsperf_adaptive_runs"] == "1"
    # max_repeats bounds the extra runs: with 1, the job stops undecided after one run
    result = run(ourtester, "-v", "--bpsperf-confidence=95%", "--bpsperf-max-repeats=1")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(
        [
            "INCONCLUSIVE test_x.py::test_x[[]default[]]: *: the data cannot tell yet: the 80% "
            "interval reaches below -10% (a drop of the tolerance), *; verdict after 1 run"
        ]
    )
    # --bpsperf-strict fails what could not be told, as it fails a missing baseline
    result = run(ourtester, "-v", "--bpsperf-confidence=95%", "--bpsperf-max-repeats=1", "--bpsperf-strict")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*--bpsperf-strict: an inconclusive verdict fails*"])


def test_clear_result_stops_after_one_run(ourtester, monkeypatch):
    record(ourtester, monkeypatch)
    result = run(ourtester, "--bpsperf-json=perf.json")
    result.assert_outcomes(passed=2)
    tests = json.loads((ourtester.path / "perf.json").read_text())["tests"]
    assert [t["verdict"]["runs"] for t in tests] == [1, 1]
    assert all(t["verdict"]["decided"] for t in tests)


def test_normalize_single_takes_the_machine_speed_out(ourtester, monkeypatch):
    monkeypatch.setenv("FAKE_SINGLE", "10.0")
    record(ourtester, monkeypatch, "--bpsperf-scaling")
    entry = json.loads(baselines_file(ourtester).read_text())["entries"][key("default")]
    assert entry["sessions"][0]["single_img_per_sec"] == 10.0
    # A day 30% slower for everything, the single process too: raw img/s fails, normalized passes.
    monkeypatch.setenv("FAKE_SPEED", "0.7")
    monkeypatch.setenv("FAKE_SINGLE", "7.0")
    result = run(ourtester, "-v", "--bpsperf-scaling")
    result.assert_outcomes(failed=2)
    result = run(ourtester, "-v", "--bpsperf-scaling", "--bpsperf-normalize=single", "--bpsperf-json=perf.json")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "OK * test_x.py::test_x[[]default[]]: measured * img/s (1 run) vs baseline *: "
            "relative to single-process img/s (7.0 this session) +0.0%*"
        ]
    )
    verdict = json.loads((ourtester.path / "perf.json").read_text())["tests"][0]["verdict"]
    assert verdict["normalize"] == "single" and verdict["single_img_per_sec"] == 7.0
    assert verdict["normalized_samples"] == [pytest.approx(verdict["samples"][0] / 7.0)]
    # The code got slower, the machine did not: normalized, it still fails.
    monkeypatch.setenv("FAKE_SINGLE", "10.0")
    result = run(ourtester, "-v", "--bpsperf-scaling", "--bpsperf-normalize=single")
    result.assert_outcomes(failed=2)


def test_normalize_single_needs_scaling(ourtester):
    result = run(ourtester, "--bpsperf-normalize=single")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*normalize=single*scaling is off*"])


def test_normalize_single_without_a_recorded_reference_is_no_baseline(ourtester, monkeypatch):
    record(ourtester, monkeypatch)  # scaling off: no single-process figure recorded
    monkeypatch.setenv("FAKE_SINGLE", "10.0")
    result = run(ourtester, "--bpsperf-scaling", "--bpsperf-normalize=single", "-rs")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*no recorded session has a single-process img/s*"])


# --- the spread between sessions, measured on the profile -----------------------------------------


def _other_entries(n_entries=2, n_sessions=5, between=0.05, seed=1):
    """Entries of other tests with several recorded sessions whose means scatter by ``between`` (SD of log)."""
    import math
    import random

    from pytest_bpsperf.store.entries import add_session, make_session

    rng = random.Random(seed)
    out = {}
    for e in range(n_entries):
        name = f"test_other.py::test_{e}"
        entry = None
        for _ in range(n_sessions):
            level = 100.0 * math.exp(rng.gauss(0.0, between))
            samples = [level * (1 + 0.01 * rng.gauss(0.0, 1.0)) for _ in range(2)]
            entry = add_session(
                entry,
                {"test": name, "trick": "default", "topology": {}, "workload": {}},
                make_session(samples=samples, commit=None, date="2026-11-30T00:00:00Z", versions={}),
                window=10,
            )
        out[f"{name}|default|-|-"] = entry
    return out


def test_a_one_session_baseline_borrows_the_spread_the_profile_measured(ourtester, monkeypatch, capsys):
    doc = record(ourtester, monkeypatch)
    monkeypatch.setenv("FAKE_SPEED", "0.5")
    # nothing else measured: the assumed 25% between sessions cannot call even a halved throughput
    result = run(ourtester, "-v", "--bpsperf-session-spread=25%")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(
        [
            "INCONCLUSIVE test_x.py::test_x[[]default[]]: * -50.0%, * (between sessions ±25% "
            "assumed (1 recorded session, nothing else measured on this profile))*"
        ]
    )
    # other jobs of this profile have 5 recorded sessions each: their spread (about 5%) is pooled in
    doc["entries"].update(_other_entries())
    baselines_file(ourtester).write_text(json.dumps(doc))
    result = run(ourtester, "-v", "--bpsperf-session-spread=25%", "--bpsperf-json=perf.json")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "REGRESSION   test_x.py::test_x[[]default[]]: * -50.0%, * (between sessions ±*% "
            "from 1 session pooled with 10 sessions of 2 other job(s) of this profile)*"
        ]
    )
    verdict = json.loads((ourtester.path / "perf.json").read_text())["tests"][-1]["verdict"]
    assert verdict["between_sessions_source"] == "pooled" and verdict["between_sessions_assumed"] is False
    assert 2.0 < verdict["between_sessions_pct"] < 10.0
    # the command decides the same from the files
    from pytest_bpsperf.cli import main

    assert main(["check", str(ourtester.path / "perf.json"), "--baselines-dir", str(baselines_dir(ourtester))]) == 1
    assert "pooled with 10 sessions of 2 other job(s)" in capsys.readouterr().out


def test_the_terminal_shows_one_compact_verdict_table_and_the_sentences_under_v(ourtester, monkeypatch):
    record(ourtester, monkeypatch)
    monkeypatch.setenv("FAKE_SPEED", "0.7")
    result = run(ourtester, "--bpsperf-repeats", "3")
    result.assert_outcomes(passed=4, failed=2)
    lines = result.stdout.lines
    (header,) = [line for line in lines if line.startswith("test ") and " verdict " in line]
    assert re.match(r"test +verdict +measured img/s +baseline img/s +change +tolerance +noise margin", header)
    rows = [line for line in lines if line.startswith("test_x.py::test_x[") and " REGRESSION " in line]
    assert len(rows) == 2
    for row in rows:  # in the columns of the header, the statuses as words, the figures right-aligned
        assert row.index("REGRESSION") == header.index("verdict")
        assert re.search(r" -(30\.\d|29\.\d)% +-10% ", row)
    # the long sentence of each verdict only with -v
    assert not any(line.startswith("REGRESSION   test_x.py") for line in lines)
    verbose = run(ourtester, "--bpsperf-repeats", "3", "-v")
    verbose.stdout.fnmatch_lines(["REGRESSION   test_x.py::test_x[[]default-r3[]]: measured * vs baseline *"])


def test_a_baseline_recorded_from_a_modified_tree_says_so_and_verdicts_name_changed_versions(ourtester, monkeypatch):
    init(ourtester.path)
    git(ourtester.path, "add", "test_x.py", "conftest.py")
    git(ourtester.path, "commit", "-q", "-m", "perf test")
    (ourtester.path / "test_x.py").write_text((ourtester.path / "test_x.py").read_text() + "\n# edited\n")
    data = record(ourtester, monkeypatch, "--bpsperf-json=rec.json")
    doc = json.loads((ourtester.path / "rec.json").read_text())
    assert doc["dirty"] is True and doc["host"] == platform.node() and len(doc["commit"]) == 40
    sessions = [s for e in data["entries"].values() for s in e["sessions"]]
    assert sessions and all(s["dirty"] is True and s["commit"] == doc["commit"] for s in sessions)
    # the baseline's software differs from today's: every verdict says what changed
    for entry in data["entries"].values():
        entry["sessions"][-1]["versions"]["mxnet"] = "0.0.1"
    baselines_file(ourtester).write_text(json.dumps(data))
    result = run(ourtester, "-v")
    result.stdout.fnmatch_lines(
        ["OK * test_x.py::test_x[[]default[]]: * since the baseline was recorded: mxnet 0.0.1 -> *"]
    )


def test_a_run_under_foreign_load_is_named_in_its_verdict_and_beside_its_img_per_sec(ourtester, monkeypatch):
    record(ourtester, monkeypatch)
    monkeypatch.setenv("FAKE_FOREIGN", "1:0.9")  # a neighbour used 0.9 cores beside the second repeat
    result = run(
        ourtester,
        "-v",
        "--bpsperf-repeats=2",
        "--bpsperf-session-spread=1%",
        "--bpsperf-json=perf.json",
        "--bpsperf-markdown=perf.md",
    )
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "OK * test_x.py::test_x[[]default-r2[]]: *; under foreign load: run 2 0.90 cores of "
            "other processes on its nodes while timed, of 2 runs (foreign_load 0.25)"
        ]
    )
    result.stdout.fnmatch_lines(
        ["test_x.py::test_x[[]default-r2[]]: * img/s *; foreign load 0.90 cores (node-0 0.90 of 2)*"]
    )
    doc = json.loads((ourtester.path / "perf.json").read_text())
    tests = [t for t in doc["tests"] if t["trick"] == "default"]
    assert [t["foreign_load"]["cores"] for t in tests] == [0.03, 0.9]
    verdict = tests[-1]["verdict"]
    assert verdict["status"] == "ok"  # named, never a verdict of its own
    assert verdict["foreign_load_cores"] == [0.03, 0.9] and verdict["under_foreign_load"] == [2]
    assert "| 0.90 |" in (ourtester.path / "perf.md").read_text()
    # below the setting nothing is said
    result = run(ourtester, "-v", "--bpsperf-repeats=2", "--bpsperf-session-spread=1%", "--bpsperf-foreign-load=1")
    assert "under foreign load" not in result.stdout.str()
