"""The ``bpsperf`` command's exit statuses: one table, every error names its file or value, no traceback.

0 ok, 1 the gate says no, 2 a usage or input error, 3 an internal error (a bug),
whose traceback only ``--debug`` prints. Each input of the security review that
crashed the command (a traceback, exit 1, the status of a regression) is here,
on results files the plugin wrote (``tests/pytester/conftest.py``). The plugin's
side of the same inputs (a fed run of absurd speed) is at the end.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers.cli import bpsperf
from helpers.fakes import fake_run_conftest, perf_test, run


def changed(results, tmp_path, change) -> str:
    """A copy of the results file with ``change(doc)`` applied; its path."""
    doc = json.loads(results.read_text())
    change(doc)
    out = tmp_path / "changed.json"
    out.write_text(json.dumps(doc))
    return str(out)


def huge_img_per_sec(doc):
    for run_ in doc["tests"]:
        run_["img_per_sec"] = 1e308


def tiny_steps(doc):
    for run_ in doc["tests"]:
        run_["workers"][0]["step_s"] = [1e-308] * len(run_["workers"][0]["step_s"])


def no_measured(doc):
    for v in doc["verdicts"]:
        v.pop("measured_img_per_sec", None)
    doc["verdicts"].append(
        {"nodeid": "t::x[default]", "test": "t::x", "trick": "default", "key": "k", "status": "ok", "tolerance": 0.15}
    )


def empty_matrix(doc):
    doc["matrix"] = [{}]


def test_export_to_a_directory_names_it(results, tmp_path, capsys):
    (tmp_path / "d").mkdir()
    code, out, err = bpsperf(capsys, "export", results, "--format", "bmf", "-o", tmp_path / "d")
    assert code == 2 and f"cannot write -o {tmp_path / 'd'}: it is a directory; expected the path of a file" in err


def test_a_report_under_a_plain_file_names_it(results, tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    code, _out, err = bpsperf(capsys, "report", "--results", results, "--out", tmp_path / "f" / "x")
    assert code == 2 and f"{tmp_path / 'f'} is a file, not a directory" in err
    code, _out, err = bpsperf(capsys, "report", "--results", results, "--out", tmp_path / "f")
    assert code == 2 and f"--out {tmp_path / 'f'} is a file; expected a directory" in err
    assert not (tmp_path / "f").is_dir() and (tmp_path / "f").read_text() == "x"


@pytest.mark.parametrize(
    "change, where",
    [
        (huge_img_per_sec, "$.tests[0].img_per_sec = 1e+308"),
        (tiny_steps, "$.tests[0].workers[0].step_s[0] = 1e-308"),
        (empty_matrix, "$.matrix[0] = {}: 'description' is a required property"),
    ],
    ids=["img-per-sec-1e308", "step-1e-308", "matrix-of-an-empty-table"],
)
@pytest.mark.parametrize("command", ["check", "report", "export", "compare", "history"])
def test_schema_valid_looking_values_beyond_any_measurement_are_input_errors(
    results, tmp_path, capsys, change, where, command
):
    path = changed(results, tmp_path, change)
    args = {
        "check": ["check", path],
        "report": ["report", "--results", path, "--out", tmp_path / "r"],
        "export": ["export", path, "--format", "bmf", "-o", tmp_path / "b.json"],
        "compare": ["compare", results, path],
        "history": ["history", "add", path, "--history", tmp_path / "h"],
    }
    code, _out, err = bpsperf(capsys, *args[command])
    assert code == 2 and path in err and where in err, err


def test_a_verdict_without_measured_img_per_sec_is_shown_with_a_dash(results, tmp_path, capsys):
    path = changed(results, tmp_path, no_measured)
    code, _out, err = bpsperf(capsys, "report", "--results", path, "--format", "markdown", "--out", tmp_path / "r")
    assert code == 0, err
    assert "| `t::x[default]` | ✅ ok | - |" in (tmp_path / "r" / "report.md").read_text()


def test_an_internal_error_is_one_line_and_its_traceback_is_for_debug(results, monkeypatch):
    from pytest_bpsperf.cli import commands

    code = (
        "import sys; from pytest_bpsperf.cli import commands, main\n"
        "def broken(args):\n    raise KeyError('boom')\n"
        "commands.check = broken\nsys.exit(main(sys.argv[1:]))\n"
    )
    plain = subprocess.run([sys.executable, "-c", code, "check", str(results)], capture_output=True, text=True)
    assert plain.returncode == 3 and "Traceback" not in plain.stderr
    assert plain.stderr.strip() == (
        f"bpsperf check: internal error: KeyError: 'boom' (a bug of bpsperf "
        f"{__import__('pytest_bpsperf').__version__}; run it again with --debug for "
        "the traceback, and report it)"
    )
    for where in (["--debug", "check", str(results)], ["check", str(results), "--debug"]):
        debug = subprocess.run([sys.executable, "-c", code, *where], capture_output=True, text=True)
        assert debug.returncode == 3 and "Traceback" in debug.stderr and "the traceback is above" in debug.stderr
    assert commands.check is not None


def test_a_usage_error_is_status_2_without_a_traceback(results):
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_bpsperf.cli", "check", str(results), "--tolerance=-5%"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "--tolerance '-5%'" in proc.stderr and "Traceback" not in proc.stderr


def test_compare_strict_fails_when_head_has_no_runs(results, tmp_path, capsys):
    empty = changed(results, tmp_path, lambda doc: doc.update(tests=[], verdicts=[], matrix=[]))
    code, out, _ = bpsperf(capsys, "compare", results, empty, "--strict")
    assert code == 1 and f"{empty} has no runs: nothing was measured (--strict fails it)" in out
    assert f"note: {empty} has no runs of test_x.py::test_x|default|" in out
    code, out, _ = bpsperf(capsys, "compare", results, empty)
    assert code == 0 and f"note: {empty} has no runs of" in out  # said, and not a failure without --strict
    code, out, _ = bpsperf(capsys, "compare", results, empty, "--strict", "--json")
    doc = json.loads(out)
    assert code == doc["exit_status"] == 1 and len(doc["not_in_head"]) == 2


def test_the_plugin_fails_a_run_of_absurd_speed_by_name_instead_of_crashing(ourtester):
    ourtester.makeconftest(fake_run_conftest(step_s=1e-300, warmup=1.0))
    ourtester.makepyfile(test_x=perf_test("result.assert_within_baseline()", tricks=("default",)))
    result = run(ourtester, "--bpsperf-steps=8", "--bpsperf-no-scaling", "--bpsperf-json=r.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*cannot measure: worker worker-0: step 0 took 1e-300 s; a training step takes at "
            "least 1e-06 s, so these records are no measurement*"
        ]
    )
    assert "OverflowError" not in result.stdout.str()
