"""The ``runtime_env`` setting and the merge of the role actors' runtime_env (no Ray started)."""

from __future__ import annotations

import json
import os

import pytest

from pytest_bpsperf.config.parsers import EntryPoint, RuntimeEnvSetting, parse_runtime_env
from pytest_bpsperf.config.ray_env import (
    JOB,
    JOB_CONFIG_VAR,
    OVERRIDE_VAR,
    PLUGIN,
    SETTING,
    Layer,
    RayJob,
    RuntimeEnvError,
    check_session,
    entry_module_path,
    merge,
    session_layers,
)
from pytest_bpsperf.config.settings import Hardware, SettingsError, Source, resolve
from pytest_bpsperf.launch.cluster import RayCluster

CPU = Hardware(gpus=0, cores=2)
PACKAGE = "/site/pytest_bpsperf"


def cli(**values):
    return Source("cli", "command line", values)


# --- the setting -----------------------------------------------------------------------------------


def test_inline_json_with_local_paths_made_absolute(tmp_path, monkeypatch):
    (tmp_path / "mylib").mkdir()
    monkeypatch.chdir(tmp_path)
    s = resolve([cli(runtime_env='{"py_modules": ["mylib", "gcs://_ray_pkg_x.zip"], '
                                  '"env_vars": {"NCCL_DEBUG": "INFO"}, "pip": ["six"]}')], CPU)
    assert isinstance(s.runtime_env, RuntimeEnvSetting) and s.runtime_env.path is None
    assert s.runtime_env.env() == {"py_modules": [str(tmp_path / "mylib"), "gcs://_ray_pkg_x.zip"],
                                   "env_vars": {"NCCL_DEBUG": "INFO"}, "pip": ["six"]}
    assert s.origins["runtime_env"] == "command line option --bpsperf-runtime-env"
    # the results keep where it came from and the names of its variables, not their values
    assert s.as_dict()["runtime_env"] == {"from": "inline", "env": {
        "py_modules": [str(tmp_path / "mylib"), "gcs://_ray_pkg_x.zip"], "env_vars": ["NCCL_DEBUG"], "pip": ["six"]}}
    json.dumps(s.as_dict())


def test_json_and_yaml_files(tmp_path):
    (tmp_path / "env.json").write_text('{"env_vars": {"A": "1"}}')
    (tmp_path / "env.yaml").write_text("env_vars:\n  A: '1'\npip:\n  - six\n")
    assert parse_runtime_env(str(tmp_path / "env.json")) == RuntimeEnvSetting('{"env_vars": {"A": "1"}}',
                                                                              str(tmp_path / "env.json"))
    from_yaml = parse_runtime_env(str(tmp_path / "env.yaml"))
    assert from_yaml.env() == {"env_vars": {"A": "1"}, "pip": ["six"]} and from_yaml.path == str(tmp_path / "env.yaml")
    # the same content compares equal, whatever its spelling
    assert parse_runtime_env('{ "pip":["six"],"env_vars":{"A":"1"} }').text == from_yaml.text
    assert parse_runtime_env("") is None and resolve([], CPU).runtime_env is None


@pytest.mark.parametrize("raw, says", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "expected a JSON object of runtime_env fields"),
    ('{"py_modules": "mylib"}', "py_modules must be a list"),
    ('{"env_vars": {"A": 1}}', "env_vars must map variable names to strings"),
    ('{"working_dir": "/no/such/dir"}', "working_dir names /no/such/dir, which does not exist here"),
    ("/no/such/env.yaml", "cannot read /no/such/env.yaml"),
])
def test_bad_values_name_the_setting_where_from_and_what_is_accepted(raw, says):
    with pytest.raises(SettingsError) as excinfo:
        resolve([Source("env", "environment", {"runtime_env": raw})], CPU)
    msg = str(excinfo.value)
    assert "for setting 'runtime_env' from environment variable BPSPERF_RUNTIME_ENV" in msg and says in msg


def test_bad_yaml_file(tmp_path):
    (tmp_path / "env.yml").write_text("env_vars: [unclosed\n")
    with pytest.raises(ValueError, match=r"env.yml is not valid YAML"):
        parse_runtime_env(str(tmp_path / "env.yml"))


def test_not_per_test():
    with pytest.raises(SettingsError, match="cannot be set per test"):
        resolve([Source("marker", "@pytest.mark.bpsperf(...) on test_x", {"runtime_env": "{}"})], CPU)


# --- merging the layers ----------------------------------------------------------------------------

JOB_LAYER = Layer(JOB, "the runtime_env of Ray job raysubmit_1",
                  {"working_dir": "gcs://_ray_pkg_wd.zip", "py_modules": ["gcs://_ray_pkg_m.zip"],
                   "env_vars": {"FROM_JOB": "j"}})


def setting(env):
    return Layer(SETTING, "setting 'runtime_env' from command line option --bpsperf-runtime-env", env)


PLUGIN_PACKAGE = Layer(PLUGIN, "the plugin, which ships its own package to the nodes", {"py_modules": [PACKAGE]})


def test_py_modules_joined_env_vars_merged_other_fields_kept():
    merged = merge([JOB_LAYER, setting({"py_modules": ["/repo/mylib"], "env_vars": {"NCCL_DEBUG": "INFO"},
                                        "pip": ["six"], "excludes": ["*.ckpt"]}), PLUGIN_PACKAGE])
    assert merged.env == {
        "working_dir": "gcs://_ray_pkg_wd.zip",
        "py_modules": ["gcs://_ray_pkg_m.zip", "/repo/mylib", PACKAGE],
        "env_vars": {"FROM_JOB": "j", "NCCL_DEBUG": "INFO"},
        "pip": ["six"], "excludes": ["*.ckpt"],
    }
    assert merged.notes == ()
    # the same module twice is one entry; the same value of a field twice is no conflict
    again = merge([setting({"py_modules": [PACKAGE], "pip": ["six"]}), PLUGIN_PACKAGE, setting({"pip": ["six"]})])
    assert again.env == {"py_modules": [PACKAGE], "pip": ["six"]}


def test_another_copy_of_the_plugin_in_py_modules_is_a_conflict_naming_both():
    with pytest.raises(RuntimeEnvError) as excinfo:
        merge([setting({"py_modules": ["/elsewhere/pytest_bpsperf"]}), PLUGIN_PACKAGE])
    msg = str(excinfo.value)
    assert "/elsewhere/pytest_bpsperf from setting 'runtime_env' from command line option --bpsperf-runtime-env" in msg
    assert f"{PACKAGE} from the plugin, which ships its own package" in msg
    assert "would both import as 'pytest_bpsperf'" in msg and "accepted: py_modules of other names" in msg


def test_a_field_set_twice_names_both_values_and_places():
    with pytest.raises(RuntimeEnvError) as excinfo:
        merge([JOB_LAYER, setting({"working_dir": "/repo"})])
    msg = str(excinfo.value)
    assert "runtime_env field 'working_dir' is set twice" in msg
    assert '"gcs://_ray_pkg_wd.zip" by the runtime_env of Ray job raysubmit_1' in msg
    assert '"/repo" by setting \'runtime_env\'' in msg and "accepted: working_dir set in one place" in msg
    with pytest.raises(RuntimeEnvError, match=r"env_vars FROM_JOB is set twice: 'j' by the runtime_env of Ray job "
                                              r"raysubmit_1 and 'k' by setting"):
        merge([JOB_LAYER, setting({"env_vars": {"FROM_JOB": "k"}})])


def test_an_arms_tree_replaces_the_jobs_working_dir_and_says_so_but_not_the_settings():
    arm = Layer(PLUGIN, "the plugin, which ships the base arm's tree as the role actors' working_dir",
                {"working_dir": "gcs://_ray_pkg_base.zip"})
    merged = merge([JOB_LAYER, arm])
    assert merged.env["working_dir"] == "gcs://_ray_pkg_base.zip"
    assert merged.env["py_modules"] == ["gcs://_ray_pkg_m.zip"]  # the job's modules are kept
    (note,) = merged.notes
    assert 'working_dir "gcs://_ray_pkg_wd.zip" of the runtime_env of Ray job raysubmit_1 is replaced' in note
    with pytest.raises(RuntimeEnvError, match=r"no working_dir of your own in a base-vs-head session on a cluster"):
        merge([setting({"working_dir": "/repo"}), arm])


@pytest.mark.parametrize("var, says", [
    ("DMLC_ROLE", "is set by the planner for each role"),
    ("BPSPERF_RUN_ID", "is set by the planner for each role"),
    ("DMLC_INTERFACE", "would never reach the roles"),
    ("OMP_NUM_THREADS", "would never reach the roles"),
])
def test_env_vars_the_roles_never_get_are_refused(var, says):
    with pytest.raises(RuntimeEnvError) as excinfo:
        merge([setting({"env_vars": {var: "x"}})])
    msg = str(excinfo.value)
    assert f"runtime_env env_vars {var}='x' from setting 'runtime_env'" in msg and says in msg
    assert "accepted: other variables" in msg


def test_session_layers_embedded_and_existing():
    job = RayJob("raysubmit_1", "127.0.0.1:6379", '{"working_dir": "gcs://_ray_pkg_wd.zip"}')
    value = parse_runtime_env('{"pip": ["six"]}')
    existing = session_layers(existing=True, job=job, setting=value, setting_origin="ini key x", package=PACKAGE)
    assert [layer.kind for layer in existing] == [JOB, SETTING, PLUGIN]
    assert existing[1].origin == "setting 'runtime_env' from ini key x"
    embedded = session_layers(existing=False, job=job, setting=value, setting_origin="ini key x", package=PACKAGE)
    assert [layer.kind for layer in embedded] == [SETTING]
    assert session_layers(existing=False, job=None, setting=None, setting_origin="default", package=PACKAGE) == []


def test_the_drivers_runtime_env_and_environment_for_ray_init(monkeypatch):
    monkeypatch.delenv(JOB_CONFIG_VAR, raising=False)  # not inside a job unless a test says so
    job = RayJob("raysubmit_1", "127.0.0.1:6379", '{"py_modules": ["gcs://_ray_pkg_m.zip"]}')
    value = parse_runtime_env('{"env_vars": {"A": "1"}}')
    # today's behaviour without anything set: the plugin ships itself, the embedded Ray gets nothing
    assert RayCluster(address="10.0.0.1:6379", job=None).init_args()[0] == {"py_modules": [_package()]}
    plain = RayCluster(address="", job=None)
    assert plain.init_args() == (None, {}) and plain.job is None
    # inside a job, on its cluster: the merge holds the job's fields; Ray is told to let it stand
    env, environ = RayCluster(address="127.0.0.1:6379", job=job, runtime_env=value).init_args()
    assert env == {"py_modules": ["gcs://_ray_pkg_m.zip", _package()], "env_vars": {"A": "1"}}
    assert environ == {OVERRIDE_VAR: "1"}
    # an embedded Ray inside a job: the job's runtime_env (URIs of the job's cluster) is hidden from ray.init
    env, environ = RayCluster(address="", job=job, runtime_env=value).init_args()
    assert env == {"env_vars": {"A": "1"}} and environ == {JOB_CONFIG_VAR: None}


def _package():
    from pytest_bpsperf.remote.environ import package_dir

    return package_dir()


def test_the_cluster_reads_the_job_from_the_environment(monkeypatch):
    monkeypatch.setenv(JOB_CONFIG_VAR, json.dumps({"runtime_env": {}, "metadata": {"job_submission_id": "rs_2"}}))
    assert RayCluster(address="auto").job.submission_id == "rs_2"
    monkeypatch.delenv(JOB_CONFIG_VAR)
    assert RayCluster(address="auto").job is None


def test_check_session_before_ray(monkeypatch):
    base = resolve([cli(ray_address="10.0.0.1:6379", base="HEAD~1", runtime_env='{"working_dir": "/"}')], CPU)
    with pytest.raises(RuntimeEnvError, match="no working_dir of your own in a base-vs-head session on a cluster"):
        check_session(base, {}, PACKAGE)
    check_session(base.with_values(base=None), {}, PACKAGE)
    check_session(base.with_values(ray_address=""), {}, PACKAGE)  # embedded: the arms' trees are read in place
    job = {JOB_CONFIG_VAR: json.dumps({"runtime_env": {"env_vars": {"DMLC_INTERFACE": "eth1"}}})}
    with pytest.raises(RuntimeEnvError, match=r"DMLC_INTERFACE='eth1' from the runtime_env of a Ray job"):
        check_session(base.with_values(base=None, runtime_env=None), job, PACKAGE)


# --- the entry point's module ------------------------------------------------------------------------


def test_the_entry_points_top_level_module_is_what_travels(tmp_path):
    (tmp_path / "bench" / "models").mkdir(parents=True)
    (tmp_path / "bench" / "models" / "net.py").write_text("def build(ctx): pass\n")
    (tmp_path / "single.py").write_text("def build(ctx): pass\n")
    assert entry_module_path(EntryPoint("bench.models.net", "build", str(tmp_path))) == str(tmp_path / "bench")
    assert entry_module_path(EntryPoint("single", "build", str(tmp_path))) == str(tmp_path / "single.py")
    assert entry_module_path(EntryPoint("single", "build", None)) is None
    assert entry_module_path(EntryPoint("gone", "build", str(tmp_path))) is None
    site = tmp_path / "lib" / "site-packages"
    (site / "installed").mkdir(parents=True)
    assert entry_module_path(EntryPoint("installed.x", "build", str(site))) is None  # installed: not shipped


def test_a_session_ships_the_entry_module_on_a_cluster_only(tmp_path):
    from pytest_bpsperf.config.arms import Arm
    from pytest_bpsperf.launch.session import PerfSession

    (tmp_path / "single.py").write_text("def build(ctx): pass\n")
    settings = resolve([cli(entry="single:build")], CPU).with_values(entry=EntryPoint("single", "build",
                                                                                        str(tmp_path)))
    session = PerfSession(ray_address="10.0.0.1:6379", base_log_dir=str(tmp_path))
    assert session.shipping.entry_module(settings, None) == str(tmp_path / "single.py")
    # the plan's workers import the shipped copy: no --entry-path of the driver's directory
    assert session.shipping.plan_settings(settings, None).entry == EntryPoint("single", "build", None)
    in_tree = Arm("base", str(tmp_path), ("{tree}",), entry_path="{tree}")
    assert session.shipping.entry_module(settings, in_tree) is None  # the arm's tree carries it
    assert session.shipping.plan_settings(settings, in_tree) is settings
    session.cluster.owned = True  # the embedded Ray: read in place
    assert session.shipping.entry_module(settings, None) is None
    assert session.shipping.actor_env(settings, None) is None
    assert os.path.isfile(settings.entry.path + "/single.py")
