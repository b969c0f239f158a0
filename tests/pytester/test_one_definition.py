"""One definition of each thing: defaults from the option table, one decision for plugin and command,
one list of report options, one meaning of ``auto``, one hardware detection, one PYTHONPATH rule.

Each test here failed while the thing it checks was written twice (and had drifted).
"""

from __future__ import annotations

import inspect
import os

import pytest

from helpers.fakes import fake_run_conftest
from pytest_bpsperf.config.settings import OPTIONS_BY_NAME


def table(name: str):
    """The option table's default of setting ``name``."""
    return OPTIONS_BY_NAME[name].default


# --- 1. defaults from the option table ----------------------------------------------------------------


def test_decide_defaults_to_the_option_tables_confidence_and_session_spread():
    from pytest_bpsperf.judge.verdict import decide

    verdict = decide(nodeid="t", test="t", trick="x", profile_id="p", key="k", samples=[100.0, 101.0],
                     baseline={"sessions": [{"samples": [100.0, 99.0, 101.0]}]}, tolerance=0.15)
    assert verdict.comparison.confidence == table("confidence") == 0.99  # the user-facing default
    assert verdict.comparison.between_assumed  # one recorded session: the assumed spread, the table's
    assert verdict.comparison.between_sd_pct == pytest.approx(table("session_spread") * 100)


def test_the_settings_and_verdict_fields_default_to_the_table():
    from dataclasses import MISSING, fields

    from pytest_bpsperf.config.settings import Settings
    from pytest_bpsperf.judge.verdict import Verdict

    defaulted = {f.name: f.default for f in fields(Settings) if f.default is not MISSING and f.name in OPTIONS_BY_NAME}
    assert defaulted and defaulted == {name: table(name) for name in defaulted}
    assert {f.name: f.default for f in fields(Verdict)}["normalize"] == table("normalize")


@pytest.mark.parametrize("name", ["compare", "session_difference", "log_difference"])
def test_statistics_take_the_confidence_from_their_caller(name):
    # stats is the bottom of the import graph: it cannot read the table, so it has no default of its own
    import pytest_bpsperf.stats as stats

    parameter = inspect.signature(getattr(stats, name)).parameters["confidence"]
    assert parameter.default is inspect.Parameter.empty


def test_paired_comparison_takes_its_last_look_from_the_caller():
    # the last look is the max_pairs setting: the table's, passed in
    from pytest_bpsperf.stats.sequential import paired_compare

    assert inspect.signature(paired_compare).parameters["last_look"].default is inspect.Parameter.empty


@pytest.fixture
def retabled(monkeypatch):
    """Change the option table's default of some settings for one test: every default must follow."""
    from dataclasses import replace

    def change(**defaults):
        for name, value in defaults.items():
            monkeypatch.setitem(OPTIONS_BY_NAME, name, replace(OPTIONS_BY_NAME[name], default=value))

    return change


def _run(test: str, img_per_sec: float, **extra) -> dict:
    """One run of a results document, as the plugin writes it, with only the settings a verdict needs."""
    return {"key": f"{test}|default|-|-", "test": test, "trick": "default", "nodeid": f"{test}[default]",
            "img_per_sec": img_per_sec, "settings": {"tolerance": 0.15}, **extra}


def test_offline_verdicts_take_the_tables_defaults_for_settings_a_file_lacks(retabled):
    from pytest_bpsperf.judge.offline import compare_results

    retabled(confidence=0.9, session_spread=0.05)
    base = {"tests": [_run("t", 100.0), _run("t", 101.0), _run("t", 99.0)]}
    head = {"tests": [_run("t", 98.0), _run("t", 99.0)]}
    verdicts, missing = compare_results(base, head)
    assert missing == [] and verdicts[0].comparison.confidence == 0.9
    assert verdicts[0].comparison.between_sd_pct == pytest.approx(5.0)


def test_offline_baseline_records_take_the_tables_max_spread(retabled):
    from pytest_bpsperf.judge.offline import baseline_sessions

    results = {"tests": [_run("t", 100.0), _run("t", 110.0), _run("t", 90.0)]}  # spread 10%
    assert list(baseline_sessions(results)[0]) == ["t|default|-|-"]
    retabled(max_spread=0.05)
    sessions, refused = baseline_sessions(results)
    assert sessions == {} and len(refused) == 1


def test_offline_pair_verdicts_take_the_tables_defaults(retabled):
    from pytest_bpsperf.judge.offline import pair_verdicts

    retabled(confidence=0.9, max_pairs=5, repeats=4)
    runs = []
    for index in range(4):
        runs += [_run("t", 100.0 + index, arm="base", pair=index), _run("t", 99.0 + index, arm="head", pair=index)]
    [verdict] = pair_verdicts({"base_vs_head": {"arms": {}}, "tests": runs})
    c = verdict.comparison
    assert (c.confidence, c.last_look, c.first_look) == (0.9, 5, 4)


def test_the_commands_defaults_come_from_the_option_table(retabled):
    from pytest_bpsperf.cli import _parser

    retabled(sessions=7)
    assert _parser().parse_args(["baselines", "record", "r.json"]).sessions == 7


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

#: Finished runs through the plugin's public hook (tests/helpers/fakes.py): FAKE_SPEED scales img/s,
#: FAKE_SINGLE is the session's single-process img/s; the repeats differ by 1%.
FAKE_RUNS = fake_run_conftest(step_s=0.25, extra='''

import os


def scenario(config, spec):
    return float(os.environ.get("FAKE_SPEED", "1.0")) * (1.0 + 0.01 * (spec.repeat % 3 - 1))


def single_img_per_sec(config, spec):
    return float(os.environ["FAKE_SINGLE"]) if os.environ.get("FAKE_SINGLE") else None
''')

PERF_TEST = '''
import pytest


@pytest.mark.perf
def test_x(bpsperf_train):
    bpsperf_train().assert_within_baseline()
'''

#: the workload is pinned (a GPU machine's defaults would differ); the fake has no session effect
PINNED = ("-p", "no:cacheprovider", "--bpsperf-profile=testprof", "--bpsperf-baselines-dir=bl", "--bpsperf-steps=12",
          "--bpsperf-batch-size=8", "--bpsperf-image-size=32", "--bpsperf-omp-threads=2", "--bpsperf-scaling",
          "--bpsperf-session-spread=1%")


@pytest.fixture
def fed(pytester, monkeypatch):
    """A project whose perf test is fed finished runs, isolated from the outer environment."""
    for key in list(os.environ):
        if key.startswith(("BPSPERF_", "GITHUB_", "FAKE_")):
            monkeypatch.delenv(key)
    pytester.makeconftest(FAKE_RUNS)
    pytester.makepyfile(test_x=PERF_TEST)
    return pytester


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

#: every option that names a file or directory the session writes at its end
REPORTS = ["--bpsperf-json", "--bpsperf-markdown", "--bpsperf-benchmark-json", "--bpsperf-bmf",
           "--bpsperf-github-benchmark", "--bpsperf-plots", "--bpsperf-history"]


@pytest.mark.parametrize("option", REPORTS)
def test_an_unwritable_report_path_is_refused_before_anything_runs(fed, option):
    (fed.path / "plain").write_text("a file, so nothing can be made under it")
    result = fed.runpytest("-p", "no:cacheprovider", f"{option}=plain/out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*cannot write the report {option}=plain/out: *plain is a file*"])
    result.stdout.no_fnmatch_line("*passed*")


def test_the_report_options_are_one_list():
    from pytest_bpsperf.config import reports
    from pytest_bpsperf.plugin.options import REPORT_OPTIONS

    assert REPORT_OPTIONS is reports.REPORT_OPTIONS  # the plugin's flags and the command read one table
    assert [o.flag for o in REPORT_OPTIONS] == REPORTS
    assert {o.flag for o in REPORT_OPTIONS if o.directory} == {"--bpsperf-plots", "--bpsperf-history"}


def test_one_history_directory_for_the_plugin_and_the_command(monkeypatch):
    from pytest_bpsperf.cli import _parser
    from pytest_bpsperf.config.reports import REPORT_OPTIONS
    from pytest_bpsperf.store import history

    [option] = [o for o in REPORT_OPTIONS if o.flag == "--bpsperf-history"]
    assert history.HISTORY_DIR == ".bpsperf-history" and history.HISTORY_DIR in option.help
    monkeypatch.setattr(history, "HISTORY_DIR", "perf-history")
    parse = _parser().parse_args
    assert {parse(argv).history for argv in (["history"], ["history", "show"], ["history", "add", "r.json"])} \
        == {"perf-history"}


def test_the_xdist_notice_names_every_report_it_does_not_write(fed):
    pytest.importorskip("xdist")
    result = fed.runpytest_subprocess("-p", "no:cacheprovider", "-n", "1", "-m", "not perf",
                                      "--bpsperf-bmf=bmf.json", "--bpsperf-plots=img")
    result.stdout.fnmatch_lines(["*no report files under pytest-xdist (--bpsperf-bmf, --bpsperf-plots)*"])
    assert not (fed.path / "bmf.json").exists()


# --- 4. what a backend needs, and what auto means: said once ---------------------------------------------


@pytest.fixture
def cpu_backend():
    """A backend of another plugin whose workers train on CPUs (registered for one test)."""
    from pytest_bpsperf import backends
    from pytest_bpsperf.backends import BackendBase, WorkerProcess

    class CPUWorkers(BackendBase):
        name = "cpu-workers"
        needs_gpu_workers = False

        def server_command(self):
            return ("true",)

        def worker_processes(self, settings, worker_id, node, gpus):
            return (WorkerProcess(""),)

        def workload_defaults(self, device):
            return {"steps": 14, "batch_size": 3, "image_size": 48}

    backends.register(CPUWorkers())
    yield CPUWorkers.name
    backends.unregister(CPUWorkers.name)


@pytest.mark.parametrize("setting, value", [("dtype", "float16"), ("launch", "bpslaunch")])
def test_what_a_backend_cannot_run_is_refused_before_ray_whatever_its_name(fed, cpu_backend, setting, value):
    # the backend's own check (float16 needs GPU workers, bpslaunch needs BytePS), not a list of names
    result = fed.runpytest("-p", "no:cacheprovider", f"--bpsperf-backend={cpu_backend}", f"--bpsperf-{setting}={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: bpsperf: setting '{setting}' ({value}, from command line option *"
                                 f"backend*{cpu_backend}*"])


@pytest.mark.parametrize("backend, values, message", [
    ("mxnet", {"dtype": "float16"}, r"setting 'dtype' \(float16, from command line option --bpsperf-dtype\) needs "
                                    r"GPU workers: backend mxnet trains on CPU.*FP16 gemm"),
    ("auto", {"dtype": "float16"}, r"setting 'dtype' .*backend mxnet trains on CPU.*\(backend auto is mxnet on this "
                                   r"machine: no GPU\)"),
    ("mxnet", {"launch": "bpslaunch"}, r"setting 'launch' \(bpslaunch, from command line option --bpsperf-launch\) "
                                       r".*needs backend byteps, not mxnet"),
])
def test_what_the_workers_cannot_run_is_refused_before_ray(backend, values, message):
    # these were also written in config/workload_spec.py, with the backends' names
    from pytest_bpsperf import backends
    from pytest_bpsperf.config.settings import Hardware, Source, resolve

    s = resolve([Source("cli", "command line", {"backend": backend, **values})], Hardware(0, 2))
    with pytest.raises(backends.PlanError, match=message):
        backends.check_settings(s, gpus=0)


@pytest.mark.parametrize("backend, gpus, ray_address, launch", [
    ("byteps", 0, "", "direct"), ("auto", 2, "", "direct"), ("auto", 0, "auto", "direct"), ("byteps", 0, "", "bpslaunch"),
    ("auto", 0, "auto", "bpslaunch")])
def test_what_workers_may_run_passes_before_ray(backend, gpus, ray_address, launch):
    # auto on an existing cluster is known once resolved there: planning checks it then
    from pytest_bpsperf import backends
    from pytest_bpsperf.config.settings import Hardware, Source, resolve

    values = {"dtype": "float16", "backend": backend, "ray_address": ray_address or "local", "launch": launch}
    backends.check_settings(resolve([Source("cli", "command line", values)], Hardware(gpus, 2)), gpus=gpus)


def test_auto_means_one_thing(cpu_backend, monkeypatch):
    # defaults, resolution and the check before Ray all read what auto picks from one place
    from pytest_bpsperf import backends
    from pytest_bpsperf.config.settings import Hardware, Source, resolve
    from pytest_bpsperf.runs.plan import Node

    monkeypatch.setitem(backends.AUTO, "cpu", cpu_backend)
    assert backends.workload_defaults("auto", "cpu") == {"steps": 14, "batch_size": 3, "image_size": 48}
    assert backends.resolve("auto", [Node("n", "127.0.0.1", 2)], probe=lambda b, n: None)[0] == cpu_backend
    s = resolve([Source("cli", "command line", {"launch": "bpslaunch"})], Hardware(0, 2))
    with pytest.raises(backends.PlanError, match=f"needs backend byteps, not {cpu_backend}"):
        backends.check_settings(s, gpus=0)


# --- 5. this machine's hardware, detected once ---------------------------------------------------------


@pytest.fixture
def two_gpus(tmp_path, monkeypatch):
    """An nvidia-smi that lists two GPUs, and no detection left over from before."""
    from pytest_bpsperf.remote import hardware

    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\nprintf 'NVIDIA A100-SXM4-40GB\\nNVIDIA A100-SXM4-40GB\\n'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    hardware.local_gpus.cache_clear()
    yield
    hardware.local_gpus.cache_clear()


def test_the_settings_and_the_profile_count_the_same_gpus(two_gpus):
    from pytest_bpsperf.config.settings import Hardware
    from pytest_bpsperf.remote.hardware import collect_facts

    facts = collect_facts()
    hardware = Hardware.detect()
    assert (hardware.gpus, hardware.cores) == (facts["gpu_count"], facts["cores"]) == (2, facts["cores"])


def test_the_embedded_ray_node_is_the_machine_the_settings_saw(two_gpus):
    from pytest_bpsperf.config.settings import Hardware
    from pytest_bpsperf.launch.session import _local_node

    node, hardware = _local_node(), Hardware.detect()
    assert (node.gpus, node.cpus) == (hardware.gpus, hardware.cores)


# --- 6. a child's PYTHONPATH, made in one place ------------------------------------------------------------


def test_a_childs_pythonpath_puts_its_entries_first_and_keeps_what_was_there():
    from pytest_bpsperf.remote.environ import pythonpath

    assert pythonpath(["/harness", "/tree"], {"PYTHONPATH": "/site"}) == os.pathsep.join(["/harness", "/tree", "/site"])
    assert pythonpath(["/harness"], {}) == pythonpath(["/harness"], {"PYTHONPATH": ""}) == "/harness"


def test_pythonpath_is_made_only_by_that_function():
    # every env["PYTHONPATH"] = ... or {"PYTHONPATH": ...} of the package calls it
    import ast
    import pathlib

    import pytest_bpsperf

    package = pathlib.Path(pytest_bpsperf.__file__).parent
    made = {}
    for path in sorted(package.rglob("*.py")):
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(node, ast.Assign):
                keys = [t.slice for t in node.targets if isinstance(t, ast.Subscript)]
            else:
                keys = node.keys if isinstance(node, ast.Dict) else []
            if any(isinstance(k, ast.Constant) and k.value == "PYTHONPATH" for k in keys):
                made[f"{path.relative_to(package)}:{node.lineno}"] = lines[node.lineno - 1].strip()
    assert made, "no PYTHONPATH found: the scan is broken"
    assert {where: line for where, line in made.items() if "pythonpath(" not in line} == {}
