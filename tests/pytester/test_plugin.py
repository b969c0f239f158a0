"""The pytest layer: options, markers, parametrization, fixtures, reports.

No distributed run here: the pytester projects implement the plugin's public
hook ``pytest_bpsperf_run`` and return finished job outputs built from
synthetic step timings in the overlapped timing (omp-passive runs 2x faster
than the default trick); each run says what it was asked in calls.jsonl.
"""

from __future__ import annotations

import json
import os

import pytest

from helpers.fakes import GATED_TEST, MATRIX_TEST, OMP_PASSIVE_2X, fake_run_conftest, run
from pytest_bpsperf.config.settings import OPTION_GROUPS, OPTIONS_BY_NAME, default_text, flag

#: Each run writes what it was asked to calls.jsonl; the session writes the tests' order to order.txt.
CALLS_AND_ORDER = """
import json

import pytest  # for the hooks some tests append

ORDER = []


def scenario(config, spec):
    s = spec.settings
    with open(config.rootpath / "calls.jsonl", "a") as fh:
        fh.write(json.dumps({
            "nodeid": spec.nodeid, "test": spec.test, "trick": spec.trick.name,
            "env": {r: dict(v) for r, v in spec.trick.env.items()},
            "extra_servers": spec.trick.extra_servers_per_node, "repeat": spec.repeat,
            "steps": s.steps, "batch_size": s.batch_size, "origins": dict(s.origins),
        }) + "\\n")
    return 1.0


def pytest_runtest_call(item):
    ORDER.append(item.name)


def pytest_sessionfinish(session):
    (session.config.rootpath / "order.txt").write_text("\\n".join(ORDER))
"""

CONFTEST = fake_run_conftest(OMP_PASSIVE_2X, extra=CALLS_AND_ORDER)


@pytest.fixture
def fake_run() -> str:
    """This module's runs: ``CONFTEST`` (ourtester writes it)."""
    return CONFTEST


def calls(pytester: pytest.Pytester) -> list:
    path = pytester.path / "calls.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def order(pytester: pytest.Pytester) -> list:
    return (pytester.path / "order.txt").read_text().splitlines()


# --- help and markers -----------------------------------------------------------------------


def _help_groups(text: str) -> "dict[str, dict[str, str]]":
    """pytest --help's bpsperf groups: heading -> {flag: its help, unwrapped}."""
    groups: "dict[str, dict[str, str]]" = {}
    flags: "dict[str, str]" = {}
    name = None
    for line in text.splitlines():
        if line.startswith("bpsperf ") and line.endswith(":"):
            flags = groups.setdefault(line[:-1], {})
        elif not line.strip() or not line.startswith(" "):
            flags, name = {}, None
        elif line.startswith("  --"):
            name, _, rest = line.strip().partition(" ")
            flags[name.split("=")[0]] = rest.strip()
        elif name is not None:
            flags[name.split("=")[0]] = (flags[name.split("=")[0]] + " " + line.strip()).strip()
    return groups


def test_help_groups_settings_by_what_they_are_about_each_ending_with_its_default(ourtester):
    result = run(ourtester, "--help")
    assert result.ret == 0
    groups = _help_groups(result.stdout.str())
    headings = {h.split(":")[0]: h for h in groups}
    assert list(headings) == [
        "bpsperf workload",
        "bpsperf topology",
        "bpsperf gate",
        "bpsperf cluster",
        "bpsperf reports",
    ]
    for group, _title, names in OPTION_GROUPS:
        shown = groups[headings[f"bpsperf {group}"]]
        for name in names:
            opt = OPTIONS_BY_NAME[name]
            assert shown[flag(name)].endswith(f"(default: {default_text(opt)})"), (name, shown[flag(name)])
    gate, reports = groups[headings["bpsperf gate"]], groups[headings["bpsperf reports"]]
    assert gate["--bpsperf-tolerance"].endswith("(default: 10%)")
    assert gate["--bpsperf-no-strict"].endswith("(default: off)")
    assert "--bpsperf-update-baselines" in gate and "--bpsperf-ps-verbose" in groups[headings["bpsperf cluster"]]
    assert set(reports) >= {"--bpsperf-json", "--bpsperf-markdown", "--bpsperf-plots", "--bpsperf-history"}
    every = [h for flags in groups.values() for h in flags.values()]
    assert all(h.rstrip().endswith(")") and "(default: " in h for h in every), every
    out = " ".join(result.stdout.str().split())  # argparse wraps the help
    for text in (
        "BPSPERF_STEPS",
        "a percentage with % such as 10%, or a bare fraction below 1 such as 0.1",
        "bpsperf_steps",
        "bpsperf_define_tricks",
    ):
        assert text in out


def test_markers_are_registered(ourtester):
    result = run(ourtester, "--markers")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "@pytest.mark.perf:*",
            "@pytest.mark.bpsperf(**settings):*",
            "@pytest.mark.bpsperf_tricks(*names, servers_optional=False):*",
        ]
    )


def test_strict_markers_accepts_plugin_markers(ourtester):
    ourtester.makepyfile(MATRIX_TEST)
    result = run(ourtester, "--strict-markers", "--collect-only", "-q")
    assert result.ret == 0


def test_list_tricks(ourtester):
    ourtester.makeini("[pytest]\nbpsperf_define_tricks =\n    omp-4: worker:OMP_NUM_THREADS=4 -- four threads\n")
    result = run(ourtester, "--bpsperf-list-tricks")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "default *built-in*",
            "omp-4 *ini key bpsperf_define_tricks*four threads",
            "omp-passive *built-in*OMP_WAIT_POLICY*",
        ]
    )


# --- on/off settings are flags ---------------------------------------------------------------


def _session_settings(config):
    return config.pluginmanager.get_plugin("bpsperf-SettingsPlugin").settings


def test_an_on_off_flag_takes_no_value(ourtester):
    # `--bpsperf-strict perf_tests` once read perf_tests as the flag's value
    ourtester.makepyfile(test_x=MATRIX_TEST)
    config = ourtester.parseconfigure("--bpsperf-strict", "test_x.py", "--bpsperf-no-scaling")
    assert config.args == ["test_x.py"]
    settings = _session_settings(config)
    assert (settings.strict, settings.scaling) == (True, False)
    assert settings.origins["strict"] == "command line option --bpsperf-strict"
    assert settings.origins["scaling"] == "command line option --bpsperf-no-scaling"


def test_the_no_flag_wins_over_the_environment_and_the_last_flag_wins(ourtester, monkeypatch):
    monkeypatch.setenv("BPSPERF_COLOCATE", "on")
    ourtester.makeini("[pytest]\nbpsperf_strict = on\n")
    config = ourtester.parseconfigure("--bpsperf-no-colocate", "--bpsperf-no-strict", "--bpsperf-strict")
    settings = _session_settings(config)
    assert (settings.colocate, settings.strict) == (False, True)
    assert settings.origins["colocate"] == "command line option --bpsperf-no-colocate"


def test_environment_and_ini_take_on_off_values(ourtester, monkeypatch):
    monkeypatch.setenv("BPSPERF_STRICT", "on")
    ourtester.makeini("[pytest]\nbpsperf_scaling = off\n")
    settings = _session_settings(ourtester.parseconfigure())
    assert (settings.strict, settings.scaling) == (True, False)
    assert settings.origins["strict"] == "environment variable BPSPERF_STRICT"


@pytest.mark.parametrize("arg", ["--bpsperf-strict=on", "--bpsperf-scaling=off", "--bpsperf-no-colocate=yes"])
def test_an_on_off_flag_with_a_value_is_a_usage_error(ourtester, arg):
    ourtester.makepyfile(test_x=MATRIX_TEST)
    result = run(ourtester, arg)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*argument {arg.split('=')[0]}: ignored explicit argument*"])


def test_a_strict_flag_before_a_path_runs_that_path(ourtester):
    ourtester.makepyfile(test_x=MATRIX_TEST, test_other="def test_other():\n    pass\n")
    ourtester.makepyfile(test_gated=GATED_TEST)
    result = run(ourtester, "--bpsperf-strict", "test_gated.py")
    result.assert_outcomes(failed=2)
    assert result.stdout.str().count("(--bpsperf-strict: a missing baseline fails)") == 2


# --- invalid settings are usage errors --------------------------------------------------------


@pytest.mark.parametrize(
    "args, option, value",
    [
        (["--bpsperf-steps=2"], "'steps'", "'2'"),
        (["--bpsperf-workers", "none"], "'workers'", "'none'"),
        (["--bpsperf-backend=tf"], "'backend'", "'tf'"),
        (["--bpsperf-tolerance=120%"], "'tolerance'", "'120%'"),
        (["--bpsperf-ray-address=headnode"], "'ray_address'", "'headnode'"),
        (["--bpsperf-timeout=-1"], "'timeout'", "'-1'"),
    ],
)
def test_invalid_cli_value_is_usage_error(ourtester, args, option, value):
    ourtester.makepyfile(MATRIX_TEST)
    result = run(ourtester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    flag = args[0].split("=")[0]
    assert option in err and value in err
    assert f"command line option {flag}" in err
    assert calls(ourtester) == []


@pytest.mark.parametrize(
    "var, raw, option",
    [
        ("BPSPERF_WORKERS", "0", "'workers'"),
        ("BPSPERF_STEPS", "many", "'steps'"),
        ("BPSPERF_OMP_THREADS", "-2", "'omp_threads'"),
        ("BPSPERF_REPEATS", "0", "'repeats'"),
    ],
)
def test_invalid_env_value_is_usage_error(ourtester, monkeypatch, var, raw, option):
    ourtester.makepyfile(MATRIX_TEST)  # settings are checked once perf tests are collected
    monkeypatch.setenv(var, raw)
    result = run(ourtester, "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert option in err and repr(raw) in err
    assert f"environment variable {var}" in err


def test_invalid_ini_value_is_usage_error(ourtester):
    ourtester.makepyfile(MATRIX_TEST)
    ini = ourtester.makeini("[pytest]\nbpsperf_batch_size = 0\n")
    result = run(ourtester, "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "'batch_size'" in err and "'0'" in err
    assert f"ini key bpsperf_batch_size in {ini}" in err


def test_invalid_pyproject_value_is_usage_error(ourtester):
    ourtester.makepyfile(MATRIX_TEST)
    path = ourtester.makepyprojecttoml("[tool.pytest.ini_options]\nbpsperf_tolerance = '0%'\n")
    result = run(ourtester, "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "'tolerance'" in err and "'0%'" in err
    assert f"ini key bpsperf_tolerance in {path}" in err


def test_cli_value_hides_invalid_env_value(ourtester, monkeypatch):
    monkeypatch.setenv("BPSPERF_STEPS", "nope")
    ourtester.makepyfile(MATRIX_TEST)
    result = run(ourtester, "--bpsperf-steps=6", "--collect-only", "-q")
    assert result.ret == 0


def test_bad_trick_definition_in_ini_is_usage_error(ourtester):
    ourtester.makepyfile(MATRIX_TEST)
    ini = ourtester.makeini("[pytest]\nbpsperf_define_tricks =\n    broken definition\n")
    result = run(ourtester, "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "'broken definition'" in err
    assert f"bpsperf_define_tricks in {ini}" in err


def test_user_trick_clashing_with_builtin_is_usage_error(ourtester):
    ourtester.makepyfile(MATRIX_TEST)
    ourtester.makeini("[pytest]\nbpsperf_define_tricks =\n    omp-passive: worker:OMP_WAIT_POLICY=ACTIVE\n")
    result = run(ourtester, "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "'omp-passive'" in result.stderr.str() and "already defined" in result.stderr.str()


# --- collection ids and order -------------------------------------------------------------------


def test_marker_parametrizes_over_tricks(ourtester):
    ourtester.makepyfile(test_x=MATRIX_TEST)
    result = run(ourtester, "--collect-only", "-q")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        ["test_x.py::test_x[[]default[]]", "test_x.py::test_x[[]omp-passive[]]", "", "2 tests collected*"]
    )


def test_without_marker_a_perf_test_runs_baseline(ourtester):
    ourtester.makepyfile(test_x="def test_x(bpsperf_train):\n    assert bpsperf_train().trick == 'default'\n")
    result = run(ourtester, "--collect-only", "-q")
    result.stdout.fnmatch_lines(["test_x.py::test_x[[]default[]]"])
    assert run(ourtester).ret == 0


def test_cli_tricks_override_marker(ourtester):
    ourtester.makepyfile(test_x=MATRIX_TEST)
    result = run(ourtester, "--collect-only", "-q", "--bpsperf-tricks", "omp-passive+extra-servers")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["test_x.py::test_x[[]omp-passive+extra-servers[]]", "", "1 test collected*"])
    assert "[default]" not in result.stdout.str()


def test_env_tricks_override_marker_but_ini_does_not(ourtester, monkeypatch):
    ourtester.makepyfile(test_x=MATRIX_TEST)
    ourtester.makeini("[pytest]\nbpsperf_tricks = extra-servers\n")
    result = run(ourtester, "--collect-only", "-q")
    result.stdout.fnmatch_lines(["test_x.py::test_x[[]default[]]", "test_x.py::test_x[[]omp-passive[]]"])
    monkeypatch.setenv("BPSPERF_TRICKS", "extra-servers,default")
    result = run(ourtester, "--collect-only", "-q")
    result.stdout.fnmatch_lines(["test_x.py::test_x[[]extra-servers[]]", "test_x.py::test_x[[]default[]]"])


def test_ini_tricks_apply_to_tests_without_marker(ourtester):
    ourtester.makepyfile(test_y="def test_y(bpsperf_train):\n    bpsperf_train()\n")
    ourtester.makeini("[pytest]\nbpsperf_tricks = default,extra-servers\n")
    result = run(ourtester, "--collect-only", "-q")
    result.stdout.fnmatch_lines(["test_y.py::test_y[[]default[]]", "test_y.py::test_y[[]extra-servers[]]"])


def test_unknown_cli_trick_is_usage_error_listing_known_tricks(ourtester):
    ourtester.makepyfile(test_x=MATRIX_TEST)
    result = run(ourtester, "--collect-only", "--bpsperf-tricks", "omp-pasive")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "unknown trick 'omp-pasive'" in err
    assert "command line option --bpsperf-tricks" in err
    assert "known tricks: default, extra-servers, omp-passive" in err


def test_unknown_marker_trick_is_an_error_listing_known_tricks(ourtester):
    ourtester.makepyfile(
        test_x="import pytest\n@pytest.mark.bpsperf_tricks('default', 'nope')\n"
        "def test_x(bpsperf_train):\n    bpsperf_train()\n"
    )
    result = run(ourtester)
    # a usage error once the test is selected (it was a collection error while parametrizing)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    out = result.stderr.str()
    assert "unknown trick 'nope'" in out
    assert "@pytest.mark.bpsperf_tricks on test_x.py::test_x" in out
    assert "known tricks: default, extra-servers, omp-passive" in out
    assert calls(ourtester) == []


def test_duplicate_trick_in_marker_is_an_error(ourtester):
    ourtester.makepyfile(
        test_x="import pytest\n@pytest.mark.bpsperf_tricks('default', 'default')\n"
        "def test_x(bpsperf_train):\n    bpsperf_train()\n"
    )
    result = run(ourtester, "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "names a trick twice" in result.stderr.str()


def test_repeats_give_ids_and_interleaved_order(ourtester):
    ourtester.makepyfile(test_x=MATRIX_TEST)
    result = run(ourtester, "--collect-only", "-q", "--bpsperf-repeats", "2")
    result.stdout.fnmatch_lines(
        [
            "test_x.py::test_x[[]default-r1[]]",
            "test_x.py::test_x[[]omp-passive-r1[]]",
            "test_x.py::test_x[[]default-r2[]]",
            "test_x.py::test_x[[]omp-passive-r2[]]",
        ]
    )
    result = run(ourtester, "--bpsperf-repeats", "2", "-v")
    result.assert_outcomes(passed=4)
    assert order(ourtester) == [
        "test_x[default-r1]",
        "test_x[omp-passive-r1]",
        "test_x[default-r2]",
        "test_x[omp-passive-r2]",
    ]
    assert [(c["trick"], c["repeat"]) for c in calls(ourtester)] == [
        ("default", 0),
        ("omp-passive", 0),
        ("default", 1),
        ("omp-passive", 1),
    ]


def test_interleaving_restores_order_of_shuffled_items(ourtester):
    # Another plugin reorders first (e.g. grouping by repeat); the runs must still alternate.
    ourtester.makeconftest(
        CONFTEST
        + """

@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    items.reverse()
"""
    )
    ourtester.makepyfile(test_x=MATRIX_TEST)
    result = run(ourtester, "--bpsperf-repeats=3")
    result.assert_outcomes(passed=6)
    assert order(ourtester) == [
        "test_x[default-r1]",
        "test_x[omp-passive-r1]",
        "test_x[default-r2]",
        "test_x[omp-passive-r2]",
        "test_x[default-r3]",
        "test_x[omp-passive-r3]",
    ]


def test_interleaving_keeps_other_tests_in_place(ourtester):
    ourtester.makepyfile(
        test_x=MATRIX_TEST + "\n\ndef test_plain():\n    pass\n\n\n"
        "@pytest.mark.bpsperf_tricks('extra-servers', 'default')\n"
        "def test_z(bpsperf_train):\n    bpsperf_train()\n"
    )
    result = run(ourtester, "--bpsperf-repeats=2")
    result.assert_outcomes(passed=9)
    assert order(ourtester) == [
        "test_x[default-r1]",
        "test_x[omp-passive-r1]",
        "test_x[default-r2]",
        "test_x[omp-passive-r2]",
        "test_plain",
        "test_z[extra-servers-r1]",
        "test_z[default-r1]",
        "test_z[extra-servers-r2]",
        "test_z[default-r2]",
    ]


# --- user-defined tricks ------------------------------------------------------------------------


def test_ini_defined_trick_is_selectable_and_reaches_the_job(ourtester):
    ourtester.makeini(
        "[pytest]\nbpsperf_define_tricks =\n"
        "    omp-4: server,worker:OMP_NUM_THREADS=4 -- four OpenMP threads\n"
        "    more: extra_servers=2\n"
    )
    ourtester.makepyfile(
        test_x="""
import pytest

@pytest.mark.bpsperf_tricks("omp-4", "omp-4+omp-passive", "more")
def test_x(bpsperf_train, bpsperf_trick):
    result = bpsperf_train()
    assert result.spec.trick is bpsperf_trick
"""
    )
    result = run(ourtester)
    result.assert_outcomes(passed=3)
    seen = {c["trick"]: c for c in calls(ourtester)}
    assert seen["omp-4"]["env"] == {"server": {"OMP_NUM_THREADS": "4"}, "worker": {"OMP_NUM_THREADS": "4"}}
    assert seen["omp-4+omp-passive"]["env"]["worker"] == {"OMP_NUM_THREADS": "4", "OMP_WAIT_POLICY": "PASSIVE"}
    assert "scheduler" not in seen["omp-4+omp-passive"]["env"]
    assert seen["more"]["extra_servers"] == 2


def test_pyproject_defined_trick(ourtester):
    ourtester.makepyprojecttoml("[tool.pytest.ini_options]\nbpsperf_define_tricks = ['kmp-0: all:KMP_BLOCKTIME=0']\n")
    ourtester.makepyfile(test_x="def test_x(bpsperf_train):\n    bpsperf_train()\n")
    result = run(ourtester, "--bpsperf-tricks=kmp-0")
    result.assert_outcomes(passed=1)
    (call,) = calls(ourtester)
    assert call["env"] == {role: {"KMP_BLOCKTIME": "0"} for role in ("scheduler", "server", "worker")}


def test_hook_defined_trick_is_selectable_and_reaches_the_job(ourtester):
    ourtester.makeconftest(
        CONFTEST
        + """

from pytest_bpsperf.config.tricks import Trick


def pytest_bpsperf_tricks(config):
    return {"no-spin": Trick("no-spin", "spin less", env={"worker": {"GOMP_SPINCOUNT": "0"}})}
"""
    )
    ourtester.makepyfile(test_x="def test_x(bpsperf_train):\n    bpsperf_train()\n")
    result = run(ourtester, "--bpsperf-tricks", "default,no-spin+extra-servers", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_x[[]default[]] PASSED*", "*test_x[[]no-spin+extra-servers[]] PASSED*"])
    seen = {c["trick"]: c for c in calls(ourtester)}
    assert seen["no-spin+extra-servers"]["env"] == {"worker": {"GOMP_SPINCOUNT": "0"}}
    assert seen["no-spin+extra-servers"]["extra_servers"] == 1
    assert seen["default"]["env"] == {}


def test_hook_trick_with_wrong_name_is_usage_error(ourtester):
    ourtester.makeconftest(
        CONFTEST
        + """

from pytest_bpsperf.config.tricks import Trick


def pytest_bpsperf_tricks(config):
    return {"alias": Trick("other")}
"""
    )
    ourtester.makepyfile(MATRIX_TEST)
    result = run(ourtester, "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "expected a Trick named 'alias'" in result.stderr.str()


# --- reports ---------------------------------------------------------------------------------------


def test_json_report_says_where_each_setting_of_each_run_came_from(ourtester, monkeypatch):
    from pytest_bpsperf.store.results import read_document

    ourtester.makepyfile(
        test_x=MATRIX_TEST,
        test_y="""
import pytest

pytestmark = pytest.mark.perf


@pytest.mark.bpsperf(batch_size=4)
def test_y(bpsperf_train):
    bpsperf_train(steps=12)
""",
    )
    ini = ourtester.makeini("[pytest]\nbpsperf_confirm = 1\n")
    monkeypatch.setenv("BPSPERF_STEPS", "8")
    result = run(ourtester, "--bpsperf-json=perf.json", "--bpsperf-tolerance=10%", "--bpsperf-no-scaling")
    result.assert_outcomes(passed=3)
    doc = read_document(ourtester.path / "perf.json", "results")  # valid against the schema
    assert doc["schema_version"] == 3
    runs = {t["nodeid"]: t for t in doc["tests"]}
    origins = runs["test_x.py::test_x[default]"]["settings_origins"]
    assert set(origins) == set(OPTIONS_BY_NAME)
    assert origins["tolerance"] == "command line option --bpsperf-tolerance"
    assert origins["scaling"] == "command line option --bpsperf-no-scaling"
    assert origins["steps"] == "environment variable BPSPERF_STEPS"
    assert origins["confirm"] == f"ini key bpsperf_confirm in {ini}"
    assert origins["confidence"] == "default"
    mine = runs["test_y.py::test_y[default]"]["settings_origins"]
    assert mine["batch_size"] == "batch_size= of @pytest.mark.bpsperf(...) on test_y.py::test_y[default]"
    assert mine["steps"] == "steps= of bpsperf_train(...) in test_y.py::test_y[default]"


def test_json_report(ourtester):
    ourtester.makepyfile(test_x=MATRIX_TEST)
    result = run(ourtester, "--bpsperf-json", "out/perf.json")
    result.assert_outcomes(passed=2)
    path = ourtester.path / "out" / "perf.json"
    doc = json.loads(path.read_text())
    assert doc["schema_version"] == 3
    assert [t["nodeid"] for t in doc["tests"]] == ["test_x.py::test_x[default]", "test_x.py::test_x[omp-passive]"]
    for entry in doc["tests"]:
        assert entry["img_per_sec"] > 0
        assert set(entry["per_worker_img_per_sec"]) == {"worker-0", "worker-1"}
        assert entry["settings"]["steps"] == 20
        assert entry["backend"] == "mxnet"
        assert entry["trick"] in ("default", "omp-passive")
    by_trick = {t["trick"]: t for t in doc["tests"]}
    assert by_trick["omp-passive"]["img_per_sec"] == pytest.approx(2 * by_trick["default"]["img_per_sec"])
    (table,) = doc["matrix"]
    assert table["test"] == "test_x.py::test_x"
    rows = {r["trick"]: r for r in table["rows"]}
    assert rows["default"]["change_vs_default_pct"] is None
    assert rows["omp-passive"]["change_vs_default_pct"] == pytest.approx(100.0, abs=1.0)
    assert rows["omp-passive"]["significance"]["significant"] is True
    assert doc["failures"] == []
    assert path.read_text() == json.dumps(doc, indent=2, sort_keys=True) + "\n"
    result.stdout.fnmatch_lines(["bpsperf: wrote out/perf.json"])
    assert [p.name for p in (ourtester.path / "out").iterdir()] == ["perf.json"]


def test_markdown_report(ourtester):
    ourtester.makepyfile(test_x=MATRIX_TEST)
    result = run(ourtester, "--bpsperf-markdown", "perf.md")
    result.assert_outcomes(passed=2)
    md = (ourtester.path / "perf.md").read_text()
    assert md.startswith("## bpsperf results")
    assert "| `test_x.py::test_x[default]` |" in md
    assert "| `test_x.py::test_x[omp-passive]` |" in md
    assert "#### `test_x.py::test_x`" in md
    row = next(line for line in md.splitlines() if line.startswith("| `omp-passive` |"))
    assert "+100.0%" in row or "+99." in row
    assert "yes (p=" in row


def test_terminal_summary_section(ourtester):
    ourtester.makepyfile(test_x=MATRIX_TEST)
    result = run(ourtester)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*= bpsperf =*",
            "test_x.py::test_x[[]default[]]: * img/s (worker-0 *, worker-1 *); step *",
            "test_x.py::test_x[[]omp-passive[]]: * img/s (worker-0 *, worker-1 *); step *",
            "trick matrix: test_x.py::test_x (mxnet, resnet50_v2, batch 8*",
            "trick *img/s*vs default*",
            "default *",
            "omp-passive * +10?.?% *yes (p=*",
        ]
    )
    out = result.stdout.str()
    summary = out[out.index("= bpsperf =") :]
    assert sum(1 for line in summary.splitlines() if line.startswith("test_x.py::") and " img/s (" in line) == 2


def test_no_summary_without_perf_tests(ourtester):
    ourtester.makepyfile(test_plain="def test_a():\n    pass\n")
    result = run(ourtester)
    result.assert_outcomes(passed=1)
    assert "= bpsperf =" not in result.stdout.str()


# --- settings per test -------------------------------------------------------------------------


def test_marker_settings_beat_the_command_line(ourtester):
    ourtester.makepyfile(
        test_x="""
import pytest

@pytest.mark.bpsperf(steps=12)
def test_marked(bpsperf_train, bpsperf_settings):
    result = bpsperf_train()
    assert result.spec.settings.steps == 12
    assert bpsperf_settings.steps == 12
    assert len(result.measurement.workers[0].step_seconds) == 12

def test_unmarked(bpsperf_train):
    assert bpsperf_train().spec.settings.steps == 7
"""
    )
    result = run(ourtester, "--bpsperf-steps=7")
    result.assert_outcomes(passed=2)
    seen = {c["test"].split("::")[1]: c for c in calls(ourtester)}
    assert seen["test_marked"]["steps"] == 12
    assert (
        seen["test_marked"]["origins"]["steps"]
        == "steps= of @pytest.mark.bpsperf(...) on test_x.py::test_marked[default]"
    )
    assert seen["test_unmarked"]["steps"] == 7
    assert seen["test_unmarked"]["origins"]["steps"] == "command line option --bpsperf-steps"


def test_call_arguments_beat_the_marker(ourtester):
    ourtester.makepyfile(
        test_x="""
import pytest

@pytest.mark.bpsperf(steps=12, batch_size=4)
def test_x(bpsperf_train):
    result = bpsperf_train(steps=6)
    assert result.spec.settings.steps == 6
    assert result.spec.settings.batch_size == 4
"""
    )
    result = run(ourtester, "--bpsperf-steps=9")
    result.assert_outcomes(passed=1)
    (call,) = calls(ourtester)
    assert (call["steps"], call["batch_size"]) == (6, 4)
    assert call["origins"]["steps"].startswith("steps= of bpsperf_train(...) in test_x.py::test_x")


def test_marker_repeats_and_tricks_drive_parametrization(ourtester):
    ourtester.makepyfile(
        test_x="""
import pytest

@pytest.mark.bpsperf(repeats=2, tricks="omp-passive")
def test_x(bpsperf_train):
    bpsperf_train()
"""
    )
    result = run(ourtester, "--collect-only", "-q")
    result.stdout.fnmatch_lines(["test_x.py::test_x[[]omp-passive-r1[]]", "test_x.py::test_x[[]omp-passive-r2[]]"])


def test_invalid_call_argument_fails_naming_it(ourtester):
    ourtester.makepyfile(test_x="def test_x(bpsperf_train):\n    bpsperf_train(steps=2)\n")
    result = run(ourtester)
    assert result.ret != 0
    out = result.stdout.str() + result.stderr.str()
    assert "'steps'" in out and "bpsperf_train(...) in test_x.py::test_x[default]" in out
    assert calls(ourtester) == []


def test_unknown_marker_setting_is_an_error(ourtester):
    ourtester.makepyfile(
        test_x="""
import pytest

@pytest.mark.bpsperf(stepz=12)
def test_x(bpsperf_train):
    bpsperf_train()
"""
    )
    result = run(ourtester)
    assert result.ret != 0
    assert "unknown setting 'stepz'" in result.stdout.str() + result.stderr.str()
    assert calls(ourtester) == []


# --- failures -------------------------------------------------------------------------------------


def test_role_failure_fails_the_test_with_its_message(ourtester):
    ourtester.makeconftest(
        CONFTEST
        + """

from pytest_bpsperf.launch.launcher import RoleFailed

_original = pytest_bpsperf_run


def pytest_bpsperf_run(config, spec):
    if spec.trick.name == "omp-passive":
        raise RoleFailed("role worker-1 on node-0 exited 86; last log lines: boom")
    return _original(config, spec)
"""
    )
    ourtester.makepyfile(test_x=MATRIX_TEST)
    result = run(ourtester, "-rf", "--bpsperf-json", "perf.json")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    failures = out[out.index("= FAILURES =") : out.index("= bpsperf =")]
    assert failures.count("role worker-1 on node-0 exited 86; last log lines: boom") == 1
    assert "During handling" not in failures
    result.stdout.fnmatch_lines(["FAILED test_x.py::test_x[[]omp-passive[]] - Failed: role worker-1 on node-0*"])
    result.stdout.fnmatch_lines(["test_x.py::test_x[[]omp-passive[]]: FAILED to measure: role worker-1 on node-0*"])
    doc = json.loads((ourtester.path / "perf.json").read_text())
    assert doc["failures"] == [
        {
            "nodeid": "test_x.py::test_x[omp-passive]",
            "reason": "role worker-1 on node-0 exited 86; last log lines: boom",
        }
    ]
    assert [t["trick"] for t in doc["tests"]] == ["default"]


def test_too_few_records_fail_the_test(ourtester):
    ourtester.makeconftest(
        CONFTEST
        + """

from pytest_bpsperf.runs.output import RunOutput as _RunOutput


def pytest_bpsperf_run(config, spec):
    return _RunOutput(workers=(), roles=(), bringup_s=0.0, teardown_s=0.0, wall_s=0.0, log_dir=spec.log_dir,
                       backend="mxnet")
"""
    )
    ourtester.makepyfile(test_x="def test_x(bpsperf_train):\n    bpsperf_train()\n")
    result = run(ourtester, "-rf")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["bpsperf: test_x.py::test_x[[]default[]]: cannot measure: the run has no worker records"]
    )
    assert "During handling" not in result.stdout.str()


# --- --bpsperf-show-settings ------------------------------------------------------------------------


def _setting_lines(result) -> "dict[str, str]":
    out = {}
    for line in result.stdout.lines:
        name = line.split(" ", 1)[0]
        if name in OPTIONS_BY_NAME and line.startswith(name + " "):
            out[name] = " ".join(line.split()[1:])
    return out


def test_show_settings_prints_every_setting_with_its_value_and_origin_and_exits(ourtester, monkeypatch):
    ourtester.makepyfile(test_x=MATRIX_TEST)
    ini = ourtester.makeini("[pytest]\nbpsperf_repeats = 3\n")
    monkeypatch.setenv("BPSPERF_STEPS", "8")
    result = run(ourtester, "--bpsperf-show-settings", "--bpsperf-tolerance=10%", "--bpsperf-no-scaling")
    assert result.ret == 0, result.stderr.str()
    shown = _setting_lines(result)
    assert set(shown) == set(OPTIONS_BY_NAME)
    assert shown["tolerance"] == "10% command line option --bpsperf-tolerance"
    assert shown["scaling"] == "off command line option --bpsperf-no-scaling"
    assert shown["steps"] == "8 environment variable BPSPERF_STEPS"
    assert shown["repeats"] == f"3 ini key bpsperf_repeats in {ini}"
    assert shown["confidence"] == "99% default"
    assert shown["profile"] == "detected from the hardware default"
    assert calls(ourtester) == []  # nothing collected, nothing run
    result.stdout.no_fnmatch_line("*test_x*")


def test_show_settings_of_a_bad_value_is_its_usage_error(ourtester, monkeypatch):
    monkeypatch.setenv("BPSPERF_STEPS", "abc")
    result = run(ourtester, "--bpsperf-show-settings")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "invalid value 'abc' for setting 'steps' from environment variable BPSPERF_STEPS" in result.stderr.str()


# --- the report header -----------------------------------------------------------------------------


def _header(result) -> "list[str]":
    return [line for line in result.stdout.lines if line.startswith("bpsperf")]


def test_header_of_a_perf_session_names_version_profile_baselines_ray_and_gate(ourtester):
    from pytest_bpsperf import __version__

    ourtester.makepyfile(test_x=MATRIX_TEST)
    ourtester.makeini("[pytest]\nbpsperf_profile = testprof\n")
    result = run(ourtester, "--bpsperf-tolerance=10%", "--bpsperf-strict")
    assert _header(result)[:4] == [
        f"bpsperf: {__version__}, profile testprof (from ini key bpsperf_profile in {ourtester.path / 'tox.ini'})",
        "bpsperf baselines: none for this profile: no file baselines/testprof.json (pytest -m perf "
        "--bpsperf-update-baselines records them)",
        "bpsperf Ray: embedded on 127.0.0.1 (started by the first run)",
        "bpsperf gate: tolerance 10%, confidence 99%, strict on",
    ]
    result.stdout.fnmatch_lines(["collected 2 items", "bpsperf: *", "*", "*", "bpsperf gate: *", "", "test_x.py *"])
    # recorded, the file is named with its entries, sessions and latest date
    result = run(ourtester, "--bpsperf-update-baselines", "--bpsperf-repeats=3")
    assert (
        "bpsperf gate: tolerance 10%, confidence 99%, strict off, recording baselines "
        "(--bpsperf-update-baselines)" in _header(result)
    )
    date = json.loads((ourtester.path / "baselines" / "testprof.json").read_text())
    date = next(iter(date["entries"].values()))["sessions"][0]["date"]
    result = run(ourtester)
    assert f"bpsperf baselines: baselines/testprof.json: 2 entries, 1 session, latest {date}" in _header(result)


def test_header_names_other_profiles_when_this_one_has_none(ourtester):
    ourtester.makepyfile(test_x=MATRIX_TEST)
    for name in ("other-a", "other-b"):
        run(ourtester, f"--bpsperf-profile={name}", "--bpsperf-update-baselines", "--bpsperf-repeats=3")
    result = run(ourtester, "--bpsperf-profile=mine")
    # the nearest recorded profile is named with how it differs, as information (all three are this machine)
    assert (
        "bpsperf baselines: none for this profile: no file baselines/mine.json; baselines holds 2 other "
        "profile(s): other-a, other-b (pytest -m perf --bpsperf-update-baselines records them); nearest recorded "
        "profile: other-a (no fact differs but the id), for information: nothing is compared with it"
    ) in _header(result)


def test_baselines_of_the_older_profile_scheme_are_named_then_adopted_and_used(ourtester, monkeypatch):
    from pytest_bpsperf.cli import main
    from pytest_bpsperf.store.profile import is_legacy, legacy_id

    ourtester.makepyfile(test_x=GATED_TEST)
    result = run(ourtester, "--bpsperf-update-baselines", "--bpsperf-repeats=3", "--bpsperf-json=rec.json")
    assert result.ret == 0, result.stdout.str()
    new_id = json.loads((ourtester.path / "rec.json").read_text())["profile"]["id"]
    new = ourtester.path / "baselines" / f"{new_id}.json"
    # the same file as the older scheme wrote it: its id and facts do not name the CPU's identity
    doc = json.loads(new.read_text())
    old_id = legacy_id(doc["profile"]["facts"])
    doc["profile"] = {
        "id": old_id,
        "facts": {
            k: v
            for k, v in doc["profile"]["facts"].items()
            if not k.startswith("cpu_") or k == "cpu_model"
            if k != "profile_scheme"
        },
    }
    assert is_legacy(doc["profile"]["facts"]) and old_id != new_id
    new.unlink()
    (ourtester.path / "baselines" / f"{old_id}.json").write_text(json.dumps(doc))
    result = run(ourtester, "-rs")
    assert result.parseoutcomes() == {"skipped": 2}  # no baseline: the older file is not used as it is
    header = _header(result)[1]
    assert f"baselines/{old_id}.json holds this machine's baselines under the older profile id {old_id}" in header
    assert f"`bpsperf baselines adopt {old_id} --baselines-dir baselines`" in header
    result.stdout.fnmatch_lines([f"*(baselines/{old_id}.json holds this machine's baselines under the older*"])
    monkeypatch.chdir(ourtester.path)
    # the command names this machine as a session on the embedded Ray does (one node); these sessions'
    # runs come from a hook, whose profile has no cluster: name it
    assert main(["baselines", "adopt", old_id, "--to", new_id]) == 0
    assert new.exists() and not (ourtester.path / "baselines" / f"{old_id}.json").exists()
    assert json.loads(new.read_text())["profile"]["adopted_from"] == old_id
    result = run(ourtester, "-rs")  # compared with them now (one recorded session: inconclusive, never no-baseline)
    assert f"baselines/{new_id}.json: 2 entries" in _header(result)[1]
    result.stdout.fnmatch_lines(["*INCONCLUSIVE: measured * vs baseline * (n=3, 1 session)*"])
    assert "no baseline" not in result.stdout.str()


def test_detected_profile_in_the_header_is_the_one_the_runs_get(ourtester):
    ourtester.makepyfile(test_x=MATRIX_TEST)
    result = run(ourtester, "--bpsperf-json=out.json")
    said = _header(result)[0].split("profile ", 1)[1]
    assert said.endswith(" (this machine)")
    assert json.loads((ourtester.path / "out.json").read_text())["profile"]["id"] == said[: -len(" (this machine)")]
    result.stdout.no_fnmatch_line("*not * as the header said*")


@pytest.mark.parametrize("args", [[], ["-m", "not perf"], ["-q"], ["--no-header"], ["--collect-only"]])
def test_no_header_without_perf_tests_to_run_or_when_headers_are_off(ourtester, args):
    ourtester.makepyfile(test_plain="def test_plain():\n    pass\n")
    if args:
        ourtester.makepyfile(test_x=MATRIX_TEST)
    result = run(ourtester, *args)
    assert not _header(result)


def test_show_settings_shows_the_header_too_with_a_cluster_and_a_base(ourtester):
    from pytest_bpsperf import __version__

    result = run(ourtester, "--bpsperf-show-settings", "--bpsperf-ray-address=10.0.0.1:6379", "--bpsperf-base=HEAD")
    assert result.ret == 0, result.stderr.str()
    assert _header(result)[:4] == [
        f"bpsperf: {__version__}, profile of the nodes that host roles (known after the first run)",
        "bpsperf baselines: not used: base vs head in one session (base HEAD)",
        "bpsperf Ray: existing cluster at 10.0.0.1:6379",
        "bpsperf gate: tolerance 10%, confidence 99%, strict off, base HEAD",
    ]


def test_a_profile_other_than_the_headers_is_said_at_the_end(ourtester):
    # Facts that change between the header and the runs (here a hook's counter; for real, Ray counting
    # this machine's cores otherwise) give another profile: the summary says so.
    ourtester.makeconftest(
        CONFTEST
        + """

CALLS = []


def pytest_bpsperf_profile_facts(config, facts):
    CALLS.append(1)
    facts["seen"] = len(CALLS)
"""
    )
    ourtester.makepyfile(test_x=MATRIX_TEST)
    result = run(ourtester)
    said = _header(result)[0].split("profile ", 1)[1].split(" ")[0]
    result.stdout.fnmatch_lines([f"bpsperf: the runs' profile is *, not {said} as the header said before Ray was up*"])


def test_a_notice_while_a_test_runs_is_shown_and_the_next_live_line_starts_its_own_line(ourtester):
    # a notice mid-test (the wait for another session's machine lock) was written into the test's
    # capture: lost, and the terminal took its line as ended, so the next live line ran on after
    # pytest's file name ("test_x.py bpsperf: ...")
    ourtester.makepyfile(
        test_x="""
        from pytest_bpsperf.plugin import runner_key

        def test_waits(request):
            runner = request.config.stash[runner_key]
            runner.notice("waiting for the machine lock")
            runner.live("4 roles up")
    """
    )
    result = ourtester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["test_x.py ", "bpsperf: waiting for the machine lock", "bpsperf: 4 roles up"])
    assert "test_x.py bpsperf" not in result.stdout.str()


# --- one baselines directory for the plugin and the command ------------------------------------------


def test_one_baselines_directory_for_the_plugin_and_the_command(pytester, monkeypatch):
    from pytest_bpsperf.cli import _parser
    from pytest_bpsperf.config import settings
    from pytest_bpsperf.plugin import gate_key

    monkeypatch.setattr(settings, "BASELINES_DIR", "perf-baselines")
    parse = _parser().parse_args
    assert {
        parse(["check", "r.json"]).baselines_dir,
        parse(["report", "--out", "o"]).baselines_dir,
        parse(["baselines", "list"]).baselines_dir,
        parse(["baselines", "record", "r.json"]).baselines_dir,
        parse(["baselines", "show", "p"]).baselines_dir,
        parse(["baselines", "prune", "p"]).baselines_dir,
    } == {"perf-baselines"}
    for key in list(os.environ):
        if key.startswith("BPSPERF_"):
            monkeypatch.delenv(key)
    config = pytester.parseconfigure()
    assert config.stash[gate_key].store().directory == pytester.path / "perf-baselines"
