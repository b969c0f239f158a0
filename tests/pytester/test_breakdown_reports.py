"""Where the time went, in every verdict of both gates and every report that shows one.

Fed runs (:mod:`helpers.history`) give each run the diagnostic records the
workload writes after its timed steps, with the parts of a step its commit
costs; the plugin measures them as real records. A commit that sends more
gradient bytes grows the push/pull wait, one with more compute grows compute.
The diagnostic steps of a real worker are in ``tests/e2e/test_e2e_workload_local.py``.
"""

from __future__ import annotations

import json

import matplotlib.figure  # noqa: F401 - imported once here, not again inside each pytester run
import pytest

from helpers.history import SESSION_ARGS, make_history
from helpers.junit import suite_properties
from pytest_bpsperf.cli import main

COMM = {"sync_s": 0.15}
NODE = "test_perf.py::test_x[default]"


def run(project, *args):
    return project.runpytest(*SESSION_ARGS, *args)


def test_a_base_vs_head_regression_names_the_part_that_grew_in_every_report(ourtester, tmp_path):
    make_history(ourtester.path, [{}, {"subject": "a larger layer", **COMM}])
    result = run(
        ourtester,
        "--bpsperf-base=HEAD~1",
        "--bpsperf-json=r.json",
        "--bpsperf-markdown=r.md",
        "--bpsperf-plots=img",
        "--junitxml=j.xml",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*REGRESSION: head * verdict after * pairs, * look*; head 2*.*% slower: compute "
            "+0%, push/pull wait +200% (push/pull wait grew most: +0.100 of +0.100 s per step)*"
        ]
    )
    doc = json.loads((ourtester.path / "r.json").read_text())
    (job,) = doc["base_vs_head"]["jobs"]
    view = job["breakdown"]
    assert view["base"]["sync_s"] == pytest.approx(0.05) and view["head"]["sync_s"] == pytest.approx(0.15)
    assert view["grew_most"]["label"] == "push/pull wait" and view["change_pct"]["compute_s"] == pytest.approx(0)
    assert all(p["base_breakdown"]["steps"] == 3 and p["head_breakdown"]["workers"] == 2 for p in job["pair_table"])
    assert all(t["breakdown"]["total_s"] > 0 for t in doc["tests"])  # every run has its own
    md = (ourtester.path / "r.md").read_text()
    assert "### Where the time went" in md
    assert f"| `{NODE}` | push/pull wait | 50.0 ms | 150.0 ms | +200% |" in md
    assert sorted(p.name.split("-")[0] for p in (ourtester.path / "img").glob("*.png")).count("breakdown") == 1
    assert "push/pull wait grew most" in suite_properties(ourtester.path / "j.xml")[NODE]["bpsperf_breakdown"]
    # the pull-request comment says it before the collapsed report
    out = tmp_path / "comment.md"
    assert (
        main(
            [
                "comment",
                str(ourtester.path / "r.json"),
                "--markdown",
                str(ourtester.path / "r.md"),
                "--marker",
                "cpu",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    body = out.read_text()
    assert body.index(f"- `{NODE}`: head 2") < body.index("<details>") and "push/pull wait +200%" in body
    # decided again from the file: the same breakdown
    from pytest_bpsperf.judge.offline import pair_verdicts

    (offline,) = pair_verdicts(doc)
    assert offline.as_dict()["breakdown"] == view


def test_a_stored_baseline_verdict_names_what_grew_since_the_recorded_session(ourtester):
    make_history(ourtester.path, [{}])
    result = run(ourtester, "--bpsperf-update-baselines", "--bpsperf-repeats=3", "--bpsperf-profile=testprof")
    assert result.ret == 0, result.stdout.str()
    (entry,) = json.loads((ourtester.path / "baselines" / "testprof.json").read_text())["entries"].values()
    recorded = entry["sessions"][-1]["extra"]["breakdown"]
    assert recorded["compute_s"] == pytest.approx(0.2) and recorded["sync_s"] == pytest.approx(0.05)
    # the working tree now computes more per step
    (ourtester.path / "speed.json").write_text(json.dumps({"compute_s": 0.45, "sync_s": 0.05}))
    result = run(
        ourtester,
        "--bpsperf-repeats=3",
        "--bpsperf-profile=testprof",
        "--bpsperf-session-spread=1%",
        "--bpsperf-json=r.json",
    )
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*REGRESSION: measured * vs baseline *; head 5*% slower: compute +125%, push/pull "
            "wait +0% (compute grew most: +0.250 of +0.250 s per step)*"
        ]
    )
    (verdict,) = json.loads((ourtester.path / "r.json").read_text())["verdicts"]
    assert verdict["breakdown"]["base"]["compute_s"] == pytest.approx(0.2)  # the baseline's recorded session
    assert verdict["breakdown"]["head"]["compute_s"] == pytest.approx(0.45)


def test_without_diagnostic_steps_a_verdict_says_nothing_of_where_the_time_went(ourtester):
    make_history(ourtester.path, [{}, COMM])
    result = run(ourtester, "--bpsperf-base=HEAD~1", "--bpsperf-breakdown-steps=0", "--bpsperf-json=r.json")
    result.assert_outcomes(failed=1)
    assert "grew most" not in result.stdout.str()
    doc = json.loads((ourtester.path / "r.json").read_text())
    assert doc["base_vs_head"]["jobs"][0]["breakdown"] is None and all(t["breakdown"] is None for t in doc["tests"])
