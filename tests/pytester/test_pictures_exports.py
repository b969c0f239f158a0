"""Pictures (valid PNGs that draw the measured numbers), exports for other tools, live lines in the terminal.

The progress line itself, and how often it is said, are in ``tests/unit/launch/test_watchdog.py`` and
``tests/unit/launch/test_launcher.py``.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import struct

import matplotlib.figure  # noqa: F401 - imported once here, not again inside each pytester run
import pytest

from helpers.cli import bpsperf
from helpers.fakes import MATRIX_TEST, OMP_PASSIVE_2X, fake_run_conftest, run
from helpers.markdown_check import NASTY_ID, check_report
from pytest_bpsperf.report import exports, plots
from pytest_bpsperf.store.history import make_record, trends


@pytest.fixture
def fake_run() -> str:
    """This module's own sessions draw the compute/sync split too: runs in the breakdown timing."""
    return fake_run_conftest(OMP_PASSIVE_2X, timing="breakdown")


def png_size(path):
    """(width, height) from the IHDR chunk of a PNG, after checking the signature."""
    raw = open(path, "rb").read()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    assert raw[12:16] == b"IHDR"
    assert len(raw) > 8000, f"{path} is only {len(raw)} bytes: an empty figure?"
    return struct.unpack(">II", raw[16:24])


def per_step(run):
    ws = run["workers"]
    return [sum(w["batch_size"] / w["step_s"][i] for w in ws) for i in range(len(ws[0]["step_s"]))]


def test_session_pictures_draw_the_measured_numbers(breakdown_results, tmp_path):
    doc = json.loads(breakdown_results.read_text())
    pictures = {p.kind: p for p in plots.session_pictures(doc, tmp_path)}
    assert set(pictures) == {"steps", "matrix", "split"}
    for p in pictures.values():
        assert png_size(p.path) == (800, 450)

    steps = pictures["steps"].data
    assert len(steps) == 6  # 2 tricks x 3 repeats
    first = doc["tests"][0]
    label = f"{first['trick']} run 1"
    assert steps[label]["img_per_sec"] == pytest.approx(per_step(first))
    assert steps[label]["warmup_steps"] == [0]  # the slow first step, marked

    matrix = pictures["matrix"].data
    for trick in ("default", "omp-passive"):
        runs = [t["img_per_sec"] for t in doc["tests"] if t["trick"] == trick]
        geo = math.exp(statistics.fmean(math.log(x) for x in runs))
        assert matrix[trick]["value"] == pytest.approx(geo)
        assert matrix[trick]["low"] <= geo <= matrix[trick]["high"]
        assert matrix[trick]["n"] == 3 and matrix[trick]["basis"] == "runs"
    assert matrix["omp-passive"]["value"] == pytest.approx(2 * matrix["default"]["value"], rel=0.01)

    split = pictures["split"].data
    for trick, row in split.items():
        mine = [t for t in doc["tests"] if t["trick"] == trick]
        assert row["compute_s"] == pytest.approx(statistics.fmean(t["compute_s_per_step"] for t in mine))
        assert row["sync_s"] == pytest.approx(statistics.fmean(t["sync_s_per_step"] for t in mine))


def test_history_picture_has_band_and_change_point(results, tmp_path):
    doc = json.loads(results.read_text())
    profile = {"id": "testprof"}
    records = []
    for i in range(8):
        factor = 1.0 if i < 5 else 0.75
        d = json.loads(json.dumps(doc))
        for k, t in enumerate(d["tests"]):
            t["img_per_sec"] *= factor * (1 + 0.01 * (k % 3 - 1))
        records.append(
            make_record(
                d, profile=profile, commit=f"{i:x}" * 40, branch="main", date=f"2024-06-0{i + 1}T00:00:00Z", versions={}
            )
        )
    trend = next(t for t in trends(records) if t.trick == "default")
    samples = [30.0, 31.0, 32.0]
    pic = plots.history_picture(trend, tmp_path, baseline={"samples": samples}, tolerance=0.15)
    assert png_size(pic.path) == (900, 450)
    assert pic.data["baseline_band"] == [30.0, 32.0]
    assert pic.data["regression_below"] == pytest.approx(31.0 * 0.85)
    assert [c["commit"] for c in pic.data["change_points"]] == ["55555555"]
    assert pic.data["change_points"][0]["change_pct"] == pytest.approx(-25, abs=1)
    assert pic.data["geomean"][0] == pytest.approx(trend.points[0].geomean)


def test_plugin_markdown_links_pictures_and_terminal_says_where(ourtester, monkeypatch):
    summary = ourtester.path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    ourtester.makepyfile(test_x=MATRIX_TEST)
    ourtester.makeini("[pytest]\nbpsperf_profile = testprof\n")
    result = run(
        ourtester,
        "--bpsperf-markdown=out/report.md",
        "--bpsperf-history=hist",
        "--bpsperf-bmf=bmf.json",
        "--bpsperf-github-benchmark=gh.json",
    )
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "bpsperf: wrote hist/testprof/*.json",
            "bpsperf: wrote 3 picture(s) in */out/bpsperf-img",
            "bpsperf: wrote out/report.md",
        ]
    )
    text = (ourtester.path / "out" / "report.md").read_text()
    links = [line[line.index("](") + 2 : -1] for line in text.splitlines() if line.startswith("![")]
    assert [re.sub(r"-[0-9a-f]{6}\.png$", ".png", link) for link in sorted(links)] == [
        "bpsperf-img/matrix-test_x.png",
        "bpsperf-img/split-test_x.png",
        "bpsperf-img/steps-test_x.png",
    ]
    for link in links:
        png_size(ourtester.path / "out" / link)
    assert re.search(r"`steps-test_x-[0-9a-f]{6}\.png`", summary.read_text())
    (record,) = (ourtester.path / "hist" / "testprof").glob("*.json")
    assert [r["trick"] for r in json.loads(record.read_text())["runs"]] == ["default", "omp-passive"]
    assert set(json.loads((ourtester.path / "bmf.json").read_text())) == {
        "test_x.py::test_x[default]",
        "test_x.py::test_x[omp-passive]",
    }


# Bencher's published JSON Schema for BMF (https://bencher.dev/bmf.json), restated.
BMF_SCHEMA = {
    "type": "object",
    "patternProperties": {
        ".+": {
            "type": "object",
            "patternProperties": {
                ".+": {
                    "type": "object",
                    "required": ["value"],
                    "properties": {
                        "value": {"type": "number"},
                        "lower_value": {"type": "number"},
                        "upper_value": {"type": "number"},
                    },
                }
            },
        }
    },
}


def test_bmf_export(results):
    import jsonschema

    doc = json.loads(results.read_text())
    bmf = exports.bmf_export(doc)
    jsonschema.validate(bmf, BMF_SCHEMA)
    assert set(bmf) == {"test_x.py::test_x[default]", "test_x.py::test_x[omp-passive]"}
    runs = [t["img_per_sec"] for t in doc["tests"] if t["trick"] == "omp-passive"]
    m = bmf["test_x.py::test_x[omp-passive]"]["throughput"]
    assert m["lower_value"] == min(runs) and m["upper_value"] == max(runs)
    assert m["lower_value"] <= m["value"] <= m["upper_value"]


def test_github_action_benchmark_export(results):
    doc = json.loads(results.read_text())
    entries = exports.github_benchmark_export(doc)
    # customBiggerIsBetter reads a JSON array of {name, value, unit, range?, extra?}
    assert isinstance(entries, list) and len(entries) == 2
    for e in entries:
        assert set(e) <= {"name", "value", "unit", "range", "extra"}
        assert isinstance(e["name"], str) and isinstance(e["value"], float) and e["unit"] == "img/s"
        assert isinstance(e["range"], str) and isinstance(e["extra"], str)
    assert entries[1]["value"] == pytest.approx(2 * entries[0]["value"], rel=0.01)
    assert "runs: 3" in entries[0]["extra"]


def test_pytest_benchmark_export_uses_steady_steps(results):
    doc = json.loads(results.read_text())
    bench = exports.benchmark_export(doc, "testprof")
    assert len(bench["benchmarks"]) == 6
    first, run0 = bench["benchmarks"][0], doc["tests"][0]
    rounds = [statistics.fmean(w["step_s"][i] for w in run0["workers"]) for i in range(1, 20)]
    assert first["stats"]["data"] == pytest.approx(rounds)
    assert first["stats"]["median"] == pytest.approx(statistics.median(rounds))
    assert first["stats"]["rounds"] == 19
    assert bench["commit_info"]["id"] == "unversioned"  # pytester's directory is no git checkout
    assert bench["version"] == exports.BENCHMARK_FORMAT_VERSION


# --- live progress ------------------------------------------------------------------------------

#: A run that says a live line while it trains, as the launcher does.
LIVE_CONFTEST = fake_run_conftest(
    step_s=1.0,
    warmup=1.0,
    wobble=0.0,
    workers=1,
    extra="""

def scenario(config, spec):
    runner = config.pluginmanager.get_plugin("bpsperf-RunnerPlugin")
    runner.live(f"{spec.nodeid}: step 5/20, 12.5 img/s")  # what the launcher says while training
    return 1.0
""",
)


@pytest.mark.parametrize("args, shown", [((), True), (("-q",), False)])
def test_live_lines_reach_the_terminal_while_a_test_runs(ourtester, args, shown):
    ourtester.makeconftest(LIVE_CONFTEST)
    ourtester.makepyfile(test_x=MATRIX_TEST)
    # A subprocess: only there does the test's output capture work as in a real session.
    result = ourtester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    assert result.ret == 0, result.stdout.str()
    line = "bpsperf: test_x.py::test_x[default]: step 5/20, 12.5 img/s"
    assert (line in result.stdout.lines) is shown


def test_a_test_id_cannot_break_the_report_the_summary_or_the_comment(ourtester, monkeypatch, capsys):
    summary = ourtester.path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    case = NASTY_ID.split("[", 1)[1][:-1]
    ourtester.makepyfile(
        test_x=f"""
import pytest

pytestmark = pytest.mark.perf


@pytest.mark.parametrize("case", [1], ids=[{case!r}])
@pytest.mark.bpsperf_tricks("default", "omp-passive")
def test_x(bpsperf_train, case):
    bpsperf_train().assert_within_baseline()
"""
    )
    result = run(
        ourtester, "--bpsperf-markdown=out/report.md", "--bpsperf-json=out/results.json", "--bpsperf-profile=testprof"
    )
    assert result.ret == 0, result.stdout.str()
    monkeypatch.chdir(ourtester.path)
    code, out, err = bpsperf(
        capsys,
        "comment",
        "out/results.json",
        "--markdown",
        "out/report.md",
        "--marker",
        "cpu",
        "--link",
        "https://github.example/o/r/actions/runs/1#artifacts",
        "--out",
        "comment.md",
    )
    assert code == 0, err
    for path in ("out/report.md", "summary.md", "comment.md"):
        text = (ourtester.path / path).read_text()
        assert case in text.replace("\\|", "|")  # the id is there, as code (a cell escapes its "|")
        check_report(text)
