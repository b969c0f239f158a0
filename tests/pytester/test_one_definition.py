"""One definition of each thing: defaults from the option table, one decision for plugin and command,
one list of report options, one meaning of ``auto``, one hardware detection, one PYTHONPATH rule.

Each test here failed while the thing it checks was written twice (and had drifted).
"""

from __future__ import annotations

import os

import pytest

from helpers.reports import REPORTS

# --- 1. defaults from the option table ----------------------------------------------------------------


def test_one_baselines_directory_for_the_plugin_and_the_command(pytester, monkeypatch):
    from pytest_bpsperf.cli import _parser
    from pytest_bpsperf.config import settings
    from pytest_bpsperf.plugin import gate_key

    monkeypatch.setattr(settings, "BASELINES_DIR", "perf-baselines")
    parse = _parser().parse_args
    assert {parse(["check", "r.json"]).baselines_dir, parse(["report", "--out", "o"]).baselines_dir,
            parse(["baselines", "list"]).baselines_dir, parse(["baselines", "record", "r.json"]).baselines_dir,
            parse(["baselines", "show", "p"]).baselines_dir, parse(["baselines", "prune", "p"]).baselines_dir} \
        == {"perf-baselines"}
    for key in list(os.environ):
        if key.startswith("BPSPERF_"):
            monkeypatch.delenv(key)
    config = pytester.parseconfigure()
    assert config.stash[gate_key].store().directory == pytester.path / "perf-baselines"


# --- 2. one decision for the plugin and the command --------------------------------------------------

#: the workload is pinned (a GPU machine's defaults would differ); the fake has no session effect
PINNED = ("-p", "no:cacheprovider", "--bpsperf-profile=testprof", "--bpsperf-baselines-dir=bl", "--bpsperf-steps=12",
          "--bpsperf-batch-size=8", "--bpsperf-image-size=32", "--bpsperf-omp-threads=2", "--bpsperf-scaling",
          "--bpsperf-session-spread=1%")


def _session(pytester, monkeypatch, speed: float, single: float, *args: str):
    monkeypatch.setenv("FAKE_SPEED", str(speed))
    monkeypatch.setenv("FAKE_SINGLE", str(single))
    return pytester.runpytest(*PINNED, *args)


def test_check_decides_a_normalized_session_as_the_plugin_did(fed, monkeypatch):
    import json

    from pytest_bpsperf.judge.offline import check_results, compare_results
    from pytest_bpsperf.store.baselines import BaselineStore

    _session(fed, monkeypatch, 1.0, 10.0, "--bpsperf-update-baselines", "--bpsperf-repeats=3",
             "--bpsperf-json=base.json").assert_outcomes(passed=3)
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


# --- 3. one list of report options --------------------------------------------------------------------

@pytest.mark.parametrize("option", REPORTS)
def test_an_unwritable_report_path_is_refused_before_anything_runs(fed, option):
    (fed.path / "plain").write_text("a file, so nothing can be made under it")
    result = fed.runpytest("-p", "no:cacheprovider", f"{option}=plain/out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*cannot write the report {option}=plain/out: *plain is a file*"])
    result.stdout.no_fnmatch_line("*passed*")


def test_the_xdist_notice_names_every_report_it_does_not_write(fed):
    pytest.importorskip("xdist")
    result = fed.runpytest_subprocess("-p", "no:cacheprovider", "-n", "1", "-m", "not perf",
                                      "--bpsperf-bmf=bmf.json", "--bpsperf-plots=img")
    result.stdout.fnmatch_lines(["*no report files under pytest-xdist (--bpsperf-bmf, --bpsperf-plots)*"])
    assert not (fed.path / "bmf.json").exists()


# --- 4. what a backend needs, and what auto means: said once ---------------------------------------------


@pytest.mark.parametrize("setting, value", [("dtype", "float16"), ("launch", "bpslaunch")])
def test_what_a_backend_cannot_run_is_refused_before_ray_whatever_its_name(fed, cpu_backend, setting, value):
    # the backend's own check (float16 needs GPU workers, bpslaunch needs BytePS), not a list of names
    result = fed.runpytest("-p", "no:cacheprovider", f"--bpsperf-backend={cpu_backend}", f"--bpsperf-{setting}={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: bpsperf: setting '{setting}' ({value}, from command line option *"
                                 f"backend*{cpu_backend}*"])


# --- 5. this machine's hardware, detected once ---------------------------------------------------------


# --- 6. a child's PYTHONPATH, made in one place ------------------------------------------------------------


