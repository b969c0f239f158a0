"""``config/ray_env.py``: the Ray a session runs under and the merge of the role actors' runtime_env (no Ray started).

Under a Ray job (ray job submit), RAY_ADDRESS or RAY_JOB_ID: what ray_address becomes, and what is
said; the layers of the runtime_env (the job's, the plugin's, the setting's) and their conflicts.
"""

from __future__ import annotations

import json

import pytest

from helpers.settings import CPU, cli
from pytest_bpsperf.config.parsers import EntryPoint, parse_runtime_env
from pytest_bpsperf.config.ray_env import (
    JOB,
    JOB_CONFIG_VAR,
    PLUGIN,
    SETTING,
    Layer,
    RayJob,
    RuntimeEnvError,
    check_session,
    entry_module_path,
    job_origin,
    merge,
    ray_job_source,
    ray_notices,
    session_layers,
)
from pytest_bpsperf.config.settings import Source, resolve

PACKAGE = "/site/pytest_bpsperf"


# --- merging the layers ----------------------------------------------------------------------------

JOB_LAYER = Layer(
    JOB,
    "the runtime_env of Ray job raysubmit_1",
    {"working_dir": "gcs://_ray_pkg_wd.zip", "py_modules": ["gcs://_ray_pkg_m.zip"], "env_vars": {"FROM_JOB": "j"}},
)


def setting(env):
    return Layer(SETTING, "setting 'runtime_env' from command line option --bpsperf-runtime-env", env)


PLUGIN_PACKAGE = Layer(PLUGIN, "the plugin, which ships its own package to the nodes", {"py_modules": [PACKAGE]})


def test_py_modules_joined_env_vars_merged_other_fields_kept():
    merged = merge(
        [
            JOB_LAYER,
            setting(
                {
                    "py_modules": ["/repo/mylib"],
                    "env_vars": {"NCCL_DEBUG": "INFO"},
                    "pip": ["six"],
                    "excludes": ["*.ckpt"],
                }
            ),
            PLUGIN_PACKAGE,
        ]
    )
    assert merged.env == {
        "working_dir": "gcs://_ray_pkg_wd.zip",
        "py_modules": ["gcs://_ray_pkg_m.zip", "/repo/mylib", PACKAGE],
        "env_vars": {"FROM_JOB": "j", "NCCL_DEBUG": "INFO"},
        "pip": ["six"],
        "excludes": ["*.ckpt"],
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
    assert "\"/repo\" by setting 'runtime_env'" in msg and "accepted: working_dir set in one place" in msg
    with pytest.raises(
        RuntimeEnvError,
        match=r"env_vars FROM_JOB is set twice: 'j' by the runtime_env of Ray job "
        r"raysubmit_1 and 'k' by setting",
    ):
        merge([JOB_LAYER, setting({"env_vars": {"FROM_JOB": "k"}})])


def test_an_arms_tree_replaces_the_jobs_working_dir_and_says_so_but_not_the_settings():
    arm = Layer(
        PLUGIN,
        "the plugin, which ships the base arm's tree as the role actors' working_dir",
        {"working_dir": "gcs://_ray_pkg_base.zip"},
    )
    merged = merge([JOB_LAYER, arm])
    assert merged.env["working_dir"] == "gcs://_ray_pkg_base.zip"
    assert merged.env["py_modules"] == ["gcs://_ray_pkg_m.zip"]  # the job's modules are kept
    (note,) = merged.notes
    assert 'working_dir "gcs://_ray_pkg_wd.zip" of the runtime_env of Ray job raysubmit_1 is replaced' in note
    with pytest.raises(RuntimeEnvError, match=r"no working_dir of your own in a base-vs-head session on a cluster"):
        merge([setting({"working_dir": "/repo"}), arm])


@pytest.mark.parametrize(
    "var, says",
    [
        ("DMLC_ROLE", "is set by the planner for each role"),
        ("BPSPERF_RUN_ID", "is set by the planner for each role"),
        ("DMLC_INTERFACE", "would never reach the roles"),
        ("OMP_NUM_THREADS", "would never reach the roles"),
    ],
)
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


#: What Ray 2.60's job supervisor gives the entrypoint (ray job submit --working-dir . -- pytest ...).
JOB_ENV = {
    "RAY_ADDRESS": "127.0.0.1:48393",
    JOB_CONFIG_VAR: json.dumps(
        {
            "runtime_env": {"working_dir": "gcs://_ray_pkg_64418a401e7ded0e.zip", "env_vars": {"FROM_JOB": "j"}},
            "metadata": {"job_submission_id": "raysubmit_jAm2", "job_name": "raysubmit_jAm2"},
        }
    ),
}


def settings(environ, *sources):
    return resolve([*sources, *ray_job_source(environ)], CPU)


def test_a_job_is_read_from_what_the_supervisor_sets():
    job = RayJob.detect(JOB_ENV)
    assert job.submission_id == "raysubmit_jAm2" and job.address == "127.0.0.1:48393"
    assert job.runtime_env() == {"working_dir": "gcs://_ray_pkg_64418a401e7ded0e.zip", "env_vars": {"FROM_JOB": "j"}}
    assert job.cluster == "127.0.0.1:48393"
    assert RayJob.detect({"RAY_ADDRESS": "127.0.0.1:1"}) is None  # RAY_ADDRESS alone is no job
    assert RayJob.detect({"RAY_JOB_ID": "02000000"}) is None  # nor a Ray worker's job id
    odd = RayJob.detect({JOB_CONFIG_VAR: "not json", "RAY_ADDRESS": "http://head:8265"})
    assert odd.runtime_env() == {} and odd.submission_id is None and odd.cluster == "auto"


def test_inside_a_job_ray_address_defaults_to_the_jobs_cluster_and_says_where_from():
    s = settings(JOB_ENV)
    assert s.ray_address == "127.0.0.1:48393"
    assert s.origins["ray_address"] == job_origin(RayJob.detect(JOB_ENV))
    assert "the Ray job this session runs in (Ray job raysubmit_jAm2" in s.origins["ray_address"]
    (line,) = ray_notices(JOB_ENV, s)
    assert line.startswith(
        "inside Ray job raysubmit_jAm2 (RAY_JOB_CONFIG_JSON_ENV_VAR set by ray job submit; "
        "RAY_ADDRESS=127.0.0.1:48393): the roles run on the job's cluster (127.0.0.1:48393), "
        "not on an embedded Ray beside it"
    )


@pytest.mark.parametrize(
    "source, value, says",
    [
        (
            Source("cli", "command line", {"ray_address": "auto"}),
            "auto",
            "the roles run on the job's cluster (ray_address "
            "auto, from command line option "
            "--bpsperf-ray-address, is RAY_ADDRESS)",
        ),
        (
            Source("cli", "command line", {"ray_address": "10.0.0.9:6379"}),
            "10.0.0.9:6379",
            "the roles run on 10.0.0.9:6379 (setting 'ray_address' from command line option",
        ),
        (
            Source("ini", "/r/pytest.ini", {"ray_address": "local"}),
            "",
            "but ray_address is empty (from ini key "
            "bpsperf_ray_address in /r/pytest.ini): an "
            "embedded Ray on this node runs the roles",
        ),
    ],
)
def test_what_the_user_set_wins_over_the_job_and_is_said(source, value, says):
    s = settings(JOB_ENV, source)
    assert s.ray_address == value
    (line,) = ray_notices(JOB_ENV, s)
    assert line.startswith("inside Ray job raysubmit_jAm2") and says in line


def test_ray_address_without_a_job_is_not_used_and_that_is_said():
    environ = {"RAY_ADDRESS": "10.0.0.1:6379"}
    s = settings(environ)
    assert s.ray_address == "" and s.origins["ray_address"] == "default"
    (line,) = ray_notices(environ, s)
    assert line == (
        "RAY_ADDRESS=10.0.0.1:6379 is set, but ray_address is empty (from default): perf tests start an "
        "embedded Ray on 127.0.0.1 and train on this machine alone; --bpsperf-ray-address=auto trains on "
        "the cluster RAY_ADDRESS names"
    )
    (line,) = ray_notices({"RAY_JOB_ID": "02000000"}, s)
    assert "RAY_JOB_ID=02000000 is set (pytest runs in a Ray worker process)" in line
    assert ray_notices({}, s) == []
    # connected on purpose: nothing to say
    assert ray_notices(environ, resolve([Source("cli", "command line", {"ray_address": "auto"})], CPU)) == []
