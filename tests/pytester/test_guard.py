"""Session-level guards (``plugin/guard.py``): sessions the fault and isolation guards stop or warn, no Ray.

Runs of pytest on a project whose runs are fed through ``pytest_bpsperf_run``:
the SIGTERM handler, configure-time checks of report and baseline paths (every
report option), input limits, override notices, xdist, and end-of-session I/O
errors (a full disk on a small tmpfs, where this machine lets us mount one). The
guards' parts without a session are in ``tests/unit/launch/`` (``test_watchdog.py``,
``test_machine_lock.py``, ``test_launcher.py``); roles under setpriv in
``tests/e2e/test_e2e_role_setpriv.py``.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from helpers.fakes import MATRIX_TEST, fake_run_conftest
from helpers.reports import REPORTS


@pytest.fixture
def fake_run() -> str:
    """A finished run from the plugin's public hook (flat 0.5 s steps, two workers): sessions without Ray."""
    return fake_run_conftest(step_s=0.5, warmup=1.0, wobble=0.0, workers=2)


@pytest.fixture
def fake_project(ourtester: pytest.Pytester) -> pytest.Pytester:
    ourtester.makepyfile(test_perf=MATRIX_TEST, test_plain="def test_plain():\n    pass\n")
    ourtester.makeini("[pytest]\nbpsperf_steps = 8\nbpsperf_repeats = 3\nbpsperf_scaling = off\n")
    return ourtester


# --- SIGTERM handler -------------------------------------------------------------------

#: Writes the SIGTERM handler a test sees into sigterm-<test>.txt.
SIGTERM_PROBE = """
import signal

import pytest


def _seen(request):
    handler = signal.getsignal(signal.SIGTERM)
    name = getattr(handler, "__qualname__", repr(handler))
    (request.config.rootpath / f"sigterm-{request.node.name}.txt").write_text(name)


def test_plain(request):
    _seen(request)
"""


def test_a_session_without_perf_tests_keeps_the_default_sigterm_handler(ourtester):
    ourtester.makepyfile(test_plain=SIGTERM_PROBE)
    result = ourtester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert (ourtester.path / "sigterm-test_plain.txt").read_text() == repr(signal.SIG_DFL)


def test_a_session_whose_perf_tests_are_deselected_keeps_the_default_sigterm_handler(ourtester):
    ourtester.makepyfile(test_plain=SIGTERM_PROBE, test_perf=MATRIX_TEST)
    result = ourtester.runpytest_subprocess("-p", "no:cacheprovider", "-m", "not perf")
    result.assert_outcomes(passed=1, deselected=2)
    assert (ourtester.path / "sigterm-test_plain.txt").read_text() == repr(signal.SIG_DFL)


def test_a_session_with_perf_tests_has_the_plugins_sigterm_handler_until_it_ends(ourtester):
    ourtester.makepyfile(
        test_probe=SIGTERM_PROBE
        + """

@pytest.mark.perf
def test_perf(request, bpsperf_train):
    assert bpsperf_train().img_per_sec > 0
    _seen(request)
"""
    )
    before = signal.getsignal(signal.SIGTERM)
    result = ourtester.runpytest("-p", "no:cacheprovider", "--bpsperf-steps=8", "--bpsperf-no-scaling")
    result.assert_outcomes(passed=2)
    for name in ("test_perf[default]", "test_plain"):
        assert (ourtester.path / f"sigterm-{name}.txt").read_text() == "SessionGuard._on_sigterm"
    assert signal.getsignal(signal.SIGTERM) == before  # put back when the session ends


def test_a_session_that_starts_the_ray_side_has_the_handler_without_perf_tests(ourtester):
    # On a cluster (or with GPUs) Ray is brought up at session start, before anything is collected:
    # its teardown needs the handler too.
    ourtester.makepyfile(
        test_plain=SIGTERM_PROBE
        + """

def test_ray_side(request):
    request.config.pluginmanager.get_plugin("bpsperf-RunnerPlugin").session  # what every start goes through
    _seen(request)
"""
    )
    result = ourtester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    assert (ourtester.path / "sigterm-test_plain.txt").read_text() == repr(signal.SIG_DFL)  # before it
    assert (ourtester.path / "sigterm-test_ray_side.txt").read_text() == "SessionGuard._on_sigterm"


# --- configure-time checks -------------------------------------------------------------


@pytest.mark.parametrize("option", ["--bpsperf-json", "--bpsperf-markdown", "--bpsperf-benchmark-json"])
def test_report_path_under_a_plain_file_is_a_usage_error_before_anything_runs(fake_project, option):
    (fake_project.path / "plain").write_text("x")
    result = fake_project.runpytest_subprocess("-p", "no:cacheprovider", f"{option}=plain/out.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*cannot write the report {option}=plain/out.json: *plain is a file*"])
    result.stdout.no_fnmatch_line("*passed*")


def test_baselines_dir_under_a_plain_file_is_a_usage_error_when_recording(fake_project):
    # Tests run as root, where a chmod does not stop writes; a path under a plain file does.
    (fake_project.path / "plain").write_text("x")
    result = fake_project.runpytest_subprocess(
        "-p", "no:cacheprovider", "--bpsperf-update-baselines", "--bpsperf-baselines-dir=plain/baselines"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--bpsperf-update-baselines cannot write the baselines directory plain/baselines*"])


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--bpsperf-steps=1000000000000"], "*1000000000000 steps cannot finish within the timeout of 600s*"),
        (
            ["-o", "bpsperf_define_tricks=bad: worker:LD_PRELOAD=/nonexistent.so", "--bpsperf-tricks=bad"],
            "*trick 'bad'*would break the roles' runtime: worker:LD_PRELOAD=/nonexistent.so: "
            "/nonexistent.so does not exist*",
        ),
        (
            ["--bpsperf-role-env=worker:LD_PRELOAD=/nonexistent.so"],
            "*setting 'role_env'*/nonexistent.so does not exist*",
        ),
        (
            ["--bpsperf-workers=500"],
            "*500 worker(s) (from command line option --bpsperf-workers)*role processes on this "
            "machine's * core(s) (embedded Ray); expected at most *",
        ),
    ],
)
def test_inputs_beyond_their_limits_are_usage_errors(fake_project, args, expected):
    result = fake_project.runpytest_subprocess("-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([expected])


def test_a_test_overriding_the_command_line_is_told_once(ourtester):
    ourtester.makepyfile(
        test_perf="""
import pytest

pytestmark = pytest.mark.perf


@pytest.mark.bpsperf_tricks("default", "omp-passive")
def test_x(bpsperf_train):
    assert bpsperf_train(steps=10).img_per_sec > 0
"""
    )
    result = ourtester.runpytest_subprocess("-p", "no:cacheprovider", "--bpsperf-steps=12", "--bpsperf-no-scaling")
    result.assert_outcomes(passed=2)
    lines = [line for line in result.stdout.lines if "--bpsperf-steps=12 is overridden" in line]
    assert len(lines) == 1, result.stdout.str()
    assert "steps= of bpsperf_train(...)" in lines[0] and "value 10" in lines[0]


# --- xdist ------------------------------------------------------------------------


def test_perf_tests_under_xdist_are_a_usage_error_others_run_in_parallel(fake_project):
    pytest.importorskip("xdist")
    result = fake_project.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    result.assert_outcomes(errors=6, passed=1)
    result.stdout.fnmatch_lines(["*usage: perf tests cannot run under pytest-xdist*-p no:xdist (or -n 0)*"])
    report = fake_project.path / "out.json"
    result = fake_project.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", "-m", "not perf", f"--bpsperf-json={report}"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*2 workers*"])
    assert not report.exists()  # no process saw every run: none writes a partial report


# --- end-of-session I/O ---------------------------------------------------------


@pytest.fixture
def small_tmpfs(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_full_disk_under_baselines_loses_no_summary_and_no_other_report(fake_project, small_tmpfs):
    baselines = small_tmpfs / "baselines"
    args = [
        "-p",
        "no:cacheprovider",
        "--bpsperf-update-baselines",
        f"--bpsperf-baselines-dir={baselines}",
        "--bpsperf-profile=ci-box",
    ]
    first = fake_project.runpytest_subprocess(*args)
    assert first.ret == 0, first.stdout.str()
    (path,) = baselines.iterdir()
    before = path.read_bytes()
    filler = small_tmpfs / "filler"
    try:  # fill the disk
        with open(filler, "wb") as fh:
            while True:
                fh.write(b"\0" * 4096)
                fh.flush()
    except OSError:
        pass
    report = fake_project.path / "out.json"
    t0 = time.monotonic()
    result = fake_project.runpytest_subprocess(*args, "--bpsperf-steps=9", f"--bpsperf-json={report}")
    assert time.monotonic() - t0 < 120
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*bpsperf*", f"*baselines NOT written to {path}: *No space left on device*", f"*wrote {report}*"]
    )
    assert path.read_bytes() == before
    doc = json.loads(report.read_text())
    assert len(doc["tests"]) == 6


def test_read_only_baselines_mount_is_a_usage_error_and_files_stay(fake_project, small_tmpfs):
    baselines = small_tmpfs / "baselines"
    args = [
        "-p",
        "no:cacheprovider",
        "--bpsperf-update-baselines",
        f"--bpsperf-baselines-dir={baselines}",
        "--bpsperf-profile=ci-box",
    ]
    assert fake_project.runpytest_subprocess(*args).ret == 0
    (path,) = baselines.iterdir()
    before = path.read_bytes()
    done = subprocess.run(["mount", "-o", "remount,ro", str(small_tmpfs)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot remount read-only here: {done.stderr.decode().strip()}")
    result = fake_project.runpytest_subprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*cannot write the baselines directory*read-only file system*"])
    assert path.read_bytes() == before


def test_an_unwritable_job_summary_is_named_and_fails_the_session_with_the_other_reports_written(
    fake_project, monkeypatch
):
    (fake_project.path / "plain").write_text("x")
    summary = fake_project.path / "plain" / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    report = fake_project.path / "out.json"
    result = fake_project.runpytest_subprocess(
        "-p", "no:cacheprovider", f"--bpsperf-json={report}", f"--bpsperf-markdown={fake_project.path / 'out.md'}"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.assert_outcomes(passed=7)
    result.stdout.fnmatch_lines([f"*bpsperf: NOT written: {summary} (GITHUB_STEP_SUMMARY): Not a directory*"])
    result.stdout.fnmatch_lines([f"*bpsperf: wrote {report}*"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert len(json.loads(report.read_text())["tests"]) == 6 and (fake_project.path / "out.md").exists()


def test_the_job_summary_is_appended_to_and_named(fake_project, monkeypatch):
    summary = fake_project.path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = fake_project.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines([f"*bpsperf: wrote {summary} (GITHUB_STEP_SUMMARY)*"])
    text = summary.read_text()
    assert text.startswith("earlier step\n") and "test_perf.py::test_x" in text


# --- every report option, and the reports xdist keeps from being written (``fed``) -----------------


@pytest.mark.parametrize("option", REPORTS)
def test_an_unwritable_report_path_is_refused_before_anything_runs(fed, option):
    (fed.path / "plain").write_text("a file, so nothing can be made under it")
    result = fed.runpytest("-p", "no:cacheprovider", f"{option}=plain/out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*cannot write the report {option}=plain/out: *plain is a file*"])
    result.stdout.no_fnmatch_line("*passed*")


def test_the_xdist_notice_names_every_report_it_does_not_write(fed):
    pytest.importorskip("xdist")
    result = fed.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "1", "-m", "not perf", "--bpsperf-bmf=bmf.json", "--bpsperf-plots=img"
    )
    result.stdout.fnmatch_lines(["*no report files under pytest-xdist (--bpsperf-bmf, --bpsperf-plots)*"])
    assert not (fed.path / "bmf.json").exists()
