"""Fast checks of the fault and isolation guards: no Ray, no training.

The stall watchdog, the measurement lock, configure-time checks of report and
baseline paths, input limits, override notices, xdist, and end-of-session I/O
errors (a full disk on a small tmpfs, where this machine lets us mount one).
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time

import pytest
from helpers.paths import ROOT

from pytest_bpsperf import backends
from pytest_bpsperf.launch.machine_lock import LockError, MachineLock
from pytest_bpsperf.launch.watchdog import FIRST_STEP_S, FLOOR_S, StallWatch

# A finished run from the plugin's public hook: verdicts and reports without Ray.
FAKE_RUN = '''
from pytest_bpsperf.judge.job import worker_records_from
from pytest_bpsperf.judge.records import RunOutput


def pytest_bpsperf_run(config, spec):
    steps = [{"total_s": 0.5, "compute_s": 0.3, "sync_s": 0.2}] * spec.settings.steps
    workers = tuple(worker_records_from(f"worker-{i}", steps, spec.settings.batch_size) for i in range(2))
    return RunOutput(workers=workers, roles=(), bringup_s=0.1, teardown_s=0.1, wall_s=1.0,
                     log_dir=spec.log_dir, backend="mxnet")
'''

PERF_TEST = '''
import pytest

pytestmark = pytest.mark.perf


@pytest.mark.bpsperf_tricks("default", "omp-passive")
def test_x(bpsperf_train):
    assert bpsperf_train().img_per_sec > 0
'''


@pytest.fixture
def fake_project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(FAKE_RUN)
    pytester.makepyfile(test_perf=PERF_TEST, test_plain="def test_plain():\n    pass\n")
    pytester.makeini("[pytest]\nbpsperf_steps = 8\nbpsperf_repeats = 3\nbpsperf_scaling = off\n")
    return pytester


# --- stall watchdog ---------------------------------------------------------------

def _status(steps: int, state: str = "S", step_s: float = 0.5) -> dict:
    return {"code": None, "state": state, "steps": steps, "last_step": steps - 1 if steps else None,
            "step_s": step_s}


def test_stall_names_the_stopped_worker_with_its_last_step():
    watch = StallWatch(setting=10.0, origin="command line option --bpsperf-stall-timeout")
    workers = ["worker-0", "worker-1"]
    assert watch.check({"worker-0": _status(5), "worker-1": _status(5)}, workers, now=0.0) is None
    assert watch.check({"worker-0": _status(7), "worker-1": _status(7)}, workers, now=5.0) is None
    # dist_sync: both wait once one stops; the stopped one (state T) is the culprit
    stall = watch.check({"worker-0": _status(7), "worker-1": _status(7, "T")}, workers, now=16.0)
    assert stall is not None and stall.culprits == ("worker-1",)
    assert "worker-1 made no new step for 11s (last step 6)" in stall.message
    assert "stopped (SIGSTOP)" in stall.message and "--bpsperf-stall-timeout" in stall.message


def test_stall_without_a_stopped_process_names_the_worker_behind():
    watch = StallWatch(setting=10.0)
    workers = ["worker-0", "worker-1"]
    watch.check({"worker-0": _status(9), "worker-1": _status(4)}, workers, now=0.0)
    stall = watch.check({"worker-0": _status(9), "worker-1": _status(4)}, workers, now=11.0)
    assert stall.culprits == ("worker-1",) and "behind" in stall.message


def test_derived_stall_limit_follows_step_times_with_a_floor_and_allows_a_slow_first_step():
    watch = StallWatch()
    assert watch.limit() == FLOOR_S
    watch.check({"worker-0": _status(3, step_s=4.0)}, ["worker-0"], now=0.0)
    assert watch.limit() == pytest.approx(80.0)
    fresh = StallWatch()
    fresh.check({"worker-0": _status(0)}, ["worker-0"], now=0.0)
    assert fresh.check({"worker-0": _status(0)}, ["worker-0"], now=FIRST_STEP_S - 1) is None
    assert fresh.check({"worker-0": _status(0)}, ["worker-0"], now=FIRST_STEP_S + 1) is not None


# --- measurement lock ---------------------------------------------------------------

def test_second_session_waits_for_the_lock_and_says_so(tmp_path):
    path = str(tmp_path / "measure.lock")
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; sys.path.insert(0, %r)\n"
        "from pytest_bpsperf.launch.machine_lock import MachineLock\n"
        "MachineLock(%r).acquire(5); print('held', flush=True); time.sleep(3)\n"
    ) % (str(ROOT), path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        said = []
        lock = MachineLock(path)
        waited = lock.acquire(60, said.append, poll=0.1)
        assert lock.held and waited > 0.5
        assert len(said) == 1 and "waiting for the measurement lock" in said[0] and f"pid {holder.pid}" in said[0]
        lock.release()
        assert not lock.held
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("target_exists", [True, False], ids=["to-a-file", "dangling"])
def test_a_symlink_at_the_lock_path_is_refused_and_its_target_left_alone(tmp_path, target_exists):
    # /run/lock and /tmp are shared: a link planted there must not make the plugin create,
    # truncate or lock the file it points to.
    import fcntl

    target = tmp_path / "precious"
    if target_exists:
        target.write_text("keep me\n")
    link = tmp_path / "measure.lock"
    link.symlink_to(target)
    lock = MachineLock(str(link))
    with pytest.raises(LockError, match="symbolic link") as info:
        lock.acquire(1, poll=0.1)
    assert str(link) in str(info.value) and not lock.held
    if target_exists:
        assert target.read_text() == "keep me\n"
        with open(target) as fh:  # not locked either
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    else:
        assert not target.exists()


# --- SIGTERM handler -------------------------------------------------------------------

#: Writes the SIGTERM handler a test sees into sigterm-<test>.txt.
SIGTERM_PROBE = '''
import signal

import pytest


def _seen(request):
    handler = signal.getsignal(signal.SIGTERM)
    name = getattr(handler, "__qualname__", repr(handler))
    (request.config.rootpath / f"sigterm-{request.node.name}.txt").write_text(name)


def test_plain(request):
    _seen(request)
'''


def test_a_session_without_perf_tests_keeps_the_default_sigterm_handler(pytester):
    pytester.makeconftest(FAKE_RUN)
    pytester.makepyfile(test_plain=SIGTERM_PROBE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert (pytester.path / "sigterm-test_plain.txt").read_text() == repr(signal.SIG_DFL)


def test_a_session_with_perf_tests_has_the_plugins_sigterm_handler_until_it_ends(pytester):
    pytester.makeconftest(FAKE_RUN)
    pytester.makepyfile(test_probe=SIGTERM_PROBE + '''

@pytest.mark.perf
def test_perf(request, bpsperf_train):
    assert bpsperf_train().img_per_sec > 0
    _seen(request)
''')
    before = signal.getsignal(signal.SIGTERM)
    result = pytester.runpytest("-p", "no:cacheprovider", "--bpsperf-steps=8", "--bpsperf-scaling=off")
    result.assert_outcomes(passed=2)
    for name in ("test_perf[default]", "test_plain"):
        assert (pytester.path / f"sigterm-{name}.txt").read_text() == "SessionGuard._on_sigterm"
    assert signal.getsignal(signal.SIGTERM) == before  # put back when the session ends


def test_a_session_that_starts_the_ray_side_has_the_handler_without_perf_tests(pytester):
    # On a cluster (or with GPUs) Ray is brought up at session start, before anything is collected:
    # its teardown needs the handler too.
    pytester.makeconftest(FAKE_RUN)
    pytester.makepyfile(test_plain=SIGTERM_PROBE + '''

def test_ray_side(request):
    request.config.pluginmanager.get_plugin("bpsperf-RunnerPlugin").session  # what every start goes through
    _seen(request)
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    assert (pytester.path / "sigterm-test_plain.txt").read_text() == repr(signal.SIG_DFL)  # before it
    assert (pytester.path / "sigterm-test_ray_side.txt").read_text() == "SessionGuard._on_sigterm"


# --- roles that die with their actor ------------------------------------------------------

def _roles():
    # The module as imported now: in-process pytester runs before may have imported it again.
    import importlib

    return importlib.import_module("pytest_bpsperf.remote.roles")


def _role_ran(tmp_path, name="worker-0"):
    role = _roles().RoleProcess(name, str(tmp_path / "logs"))
    role.start([sys.executable, "-c", "print('trained')"], {})
    try:
        assert role.wait(60) == 0, role.log_tail()
    finally:
        role.stop()
    return role


def test_a_role_without_setpriv_says_in_its_log_that_it_would_outlive_its_actor(tmp_path, monkeypatch):
    monkeypatch.setattr(_roles(), "_SETPRIV", None)
    role = _role_ran(tmp_path)
    log = role.log_tail()
    assert "# bpsperf: setpriv not found: worker-0 does not die with its actor (no PR_SET_PDEATHSIG)" in log
    assert "trained" in log
    assert role.info()["pdeathsig"] is False


@pytest.mark.skipif(not shutil.which("setpriv"), reason="setpriv (util-linux) is not installed here")
def test_a_role_under_setpriv_says_nothing_of_it(tmp_path):
    role = _role_ran(tmp_path)
    assert "setpriv not found" not in role.log_tail() and role.info()["pdeathsig"] is True


def test_the_run_notes_which_roles_would_outlive_their_actor_and_where():
    from pytest_bpsperf.launch.launcher import pdeathsig_notes

    infos = {"scheduler": {"pdeathsig": True}, "server-0": {"pdeathsig": False},
             "worker-0": {"pdeathsig": False}, "worker-1": {"pdeathsig": False}, "gone": {}}
    where = {"server-0": {"hostname": "n1", "ip": "10.0.0.1"}, "worker-0": {"hostname": "n1", "ip": "10.0.0.1"},
             "worker-1": {"hostname": "", "ip": "10.0.0.2"}}
    assert pdeathsig_notes(infos, where) == (
        "setpriv not found on n1: server-0, worker-0 do not die with their actor (no PR_SET_PDEATHSIG; "
        "install util-linux there)",
        "setpriv not found on 10.0.0.2: worker-1 does not die with its actor (no PR_SET_PDEATHSIG; "
        "install util-linux there)",
    )
    assert pdeathsig_notes({"worker-0": {"pdeathsig": True}}, {}) == ()


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
    result = fake_project.runpytest_subprocess("-p", "no:cacheprovider", "--bpsperf-update-baselines",
                                               "--bpsperf-baselines-dir=plain/baselines")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--bpsperf-update-baselines cannot write the baselines directory plain/baselines*"])


@pytest.mark.parametrize("args, expected", [
    (["--bpsperf-steps=1000000000000"], "*1000000000000 steps cannot finish within the timeout of 600s*"),
    (["-o", "bpsperf_define_tricks=bad: worker:LD_PRELOAD=/nonexistent.so", "--bpsperf-tricks=bad"],
     "*trick 'bad'*would break the roles' runtime: worker:LD_PRELOAD=/nonexistent.so: "
     "/nonexistent.so does not exist*"),
    (["--bpsperf-role-env=worker:LD_PRELOAD=/nonexistent.so"], "*setting 'role_env'*/nonexistent.so does not exist*"),
    (["--bpsperf-workers=500"], "*500 worker(s) (from command line option --bpsperf-workers)*role processes on this "
     "machine's * core(s) (embedded Ray); expected at most *"),
])
def test_inputs_beyond_their_limits_are_usage_errors(fake_project, args, expected):
    result = fake_project.runpytest_subprocess("-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([expected])


def test_a_test_overriding_the_command_line_is_told_once(pytester):
    pytester.makeconftest(FAKE_RUN)
    pytester.makepyfile(test_perf='''
import pytest

pytestmark = pytest.mark.perf


@pytest.mark.bpsperf_tricks("default", "omp-passive")
def test_x(bpsperf_train):
    assert bpsperf_train(steps=10).img_per_sec > 0
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--bpsperf-steps=12", "--bpsperf-scaling=off")
    result.assert_outcomes(passed=2)
    lines = [l for l in result.stdout.lines if "--bpsperf-steps=12 is overridden" in l]
    assert len(lines) == 1, result.stdout.str()
    assert "steps= of bpsperf_train(...)" in lines[0] and "value 10" in lines[0]


def test_shipped_perf_test_pins_no_default():
    text = open(ROOT / "perf_tests" / "test_resnet50.py").read()
    assert "bpsperf_train()" in text and "model=" not in text


# --- xdist ------------------------------------------------------------------------

def test_perf_tests_under_xdist_are_a_usage_error_others_run_in_parallel(fake_project):
    pytest.importorskip("xdist")
    result = fake_project.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    result.assert_outcomes(errors=6, passed=1)
    result.stdout.fnmatch_lines(["*usage: perf tests cannot run under pytest-xdist*-p no:xdist (or -n 0)*"])
    report = fake_project.path / "out.json"
    result = fake_project.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "-m", "not perf",
                                               f"--bpsperf-json={report}")
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
    args = ["-p", "no:cacheprovider", "--bpsperf-update-baselines", f"--bpsperf-baselines-dir={baselines}",
            "--bpsperf-profile=ci-box"]
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
    result.stdout.fnmatch_lines(["*bpsperf*", f"*baselines NOT written to {path}: *No space left on device*",
                                 f"*wrote {report}*"])
    assert path.read_bytes() == before
    doc = json.loads(report.read_text())
    assert len(doc["tests"]) == 6


def test_read_only_baselines_mount_is_a_usage_error_and_files_stay(fake_project, small_tmpfs):
    baselines = small_tmpfs / "baselines"
    args = ["-p", "no:cacheprovider", "--bpsperf-update-baselines", f"--bpsperf-baselines-dir={baselines}",
            "--bpsperf-profile=ci-box"]
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
        fake_project, monkeypatch):
    (fake_project.path / "plain").write_text("x")
    summary = fake_project.path / "plain" / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    report = fake_project.path / "out.json"
    result = fake_project.runpytest_subprocess("-p", "no:cacheprovider", f"--bpsperf-json={report}",
                                               f"--bpsperf-markdown={fake_project.path / 'out.md'}")
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


# --- echoed environments ------------------------------------------------------------

def test_every_variable_a_trick_sets_is_echoed_in_records_and_reports():
    from pytest_bpsperf.config.settings import Hardware, Source, resolve
    from pytest_bpsperf.config.tricks import Trick
    from pytest_bpsperf.planning.model import Node
    from pytest_bpsperf.planning.plan import make_plan
    from pytest_bpsperf.remote.environ import reported

    trick = Trick("preload", env={"worker": {"LD_PRELOAD": "/usr/lib/libfast.so", "MALLOC_ARENA_MAX": "2"}})
    settings = resolve([Source("cli", "command line", {"role_env": "server:GLOO_SOCKET_IFNAME=lo"})],
                       Hardware(gpus=0, cores=2))
    plan = make_plan(settings, trick, [Node("n0", "127.0.0.1", 2, 0)], backend=backends.get("mxnet"), run_id="r")
    worker = plan.by_role("worker")[0].env
    server = plan.by_role("server")[0].env
    # what the role process gets is what the workload's start record and the reports show
    assert reported({**worker, "PATH": "/bin"}).items() >= {"LD_PRELOAD": "/usr/lib/libfast.so",
                                                           "MALLOC_ARENA_MAX": "2"}.items()
    assert "PATH" not in reported(worker)
    assert reported(server)["GLOO_SOCKET_IFNAME"] == "lo"
    assert "LD_PRELOAD" not in plan.scheduler.env


def test_a_gpu_workload_gets_longer_to_its_first_step():
    from pytest_bpsperf.launch.session import first_step_allowance
    from pytest_bpsperf.launch.watchdog import FIRST_STEP_GPU_S, FIRST_STEP_S, StallWatch

    assert first_step_allowance("byteps") == FIRST_STEP_GPU_S > first_step_allowance("mxnet") == FIRST_STEP_S
    watch = StallWatch(0.0, "default", first_step_s=FIRST_STEP_GPU_S)
    status = {"worker-0": {"code": None, "steps": 0}}
    assert watch.check(status, ["worker-0"], 0.0) is None
    assert watch.check(status, ["worker-0"], FIRST_STEP_S + 10) is None  # a CPU run would be stalled by now
    stall = watch.check(status, ["worker-0"], FIRST_STEP_GPU_S + 1)
    assert stall is not None and "worker-0 made no new step" in stall.message
