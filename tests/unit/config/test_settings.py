"""``config/settings.py``: precedence, origins, hardware defaults, parsing and error messages.

Also: Ray Client addresses (``ray://``) are refused, with why and what to run instead (Ray Jobs); the
defaults of the settings and the verdict are the option table's; the settings count the GPUs the
profile counts.
"""

from __future__ import annotations

import pytest

from helpers.byteps_source import byteps_source
from helpers.settings import table
from pytest_bpsperf import backends
from pytest_bpsperf.config.parsers import PERCENT_ACCEPTED
from pytest_bpsperf.config.settings import (
    OPTIONS,
    OPTIONS_BY_NAME,
    Hardware,
    Settings,
    SettingsError,
    Source,
    env_source,
    env_var,
    flag,
    hardware_defaults,
    ini_key,
    resolve,
)

CPU = Hardware(gpus=0, cores=2)
GPU = Hardware(gpus=4, cores=32)
INI_PATH = "/repo/pyproject.toml"


def marker(**values):
    return Source("marker", "@pytest.mark.bpsperf(...) on test_x", values)


def cli(**values):
    return Source("cli", "command line", values)


def env(**values):
    return env_source({env_var(k): str(v) for k, v in values.items()})


def ini(**values):
    return Source("ini", INI_PATH, values)


def test_spellings_derive_from_one_name():
    assert flag("batch_size") == "--bpsperf-batch-size"
    assert env_var("batch_size") == "BPSPERF_BATCH_SIZE"
    assert ini_key("batch_size") == "bpsperf_batch_size"


def test_defaults_without_sources_on_cpu():
    s = resolve([], CPU)
    assert isinstance(s, Settings)
    assert (s.steps, s.batch_size, s.image_size, s.omp_threads) == (20, 8, 32, 2)
    hw = hardware_defaults(CPU)
    for opt in OPTIONS:
        if opt.name not in hw and opt.name != "server_nodes":  # auto: resolved (a single machine: 1)
            assert getattr(s, opt.name) == opt.default, opt.name
    assert (s.backend, s.workers, s.server_nodes, s.servers_per_node) == ("auto", 2, 1, 1)
    assert s.tricks is None
    assert s.ray_address == ""
    assert set(s.origins) == {o.name for o in OPTIONS}
    assert set(s.origins.values()) == {"default"}


def test_gpu_defaults_follow_the_byteps_report_workload():
    s = resolve([], GPU)
    assert (s.steps, s.batch_size, s.image_size, s.omp_threads) == (100, 64, 224, 4)


@pytest.mark.parametrize(
    "cores, expected",
    [(1, 1), (2, 2), (3, 3), (4, 4), (64, 4)],
)
def test_cpu_omp_threads_default_is_min_4_cores(cores, expected):
    assert hardware_defaults(Hardware(gpus=0, cores=cores))["omp_threads"] == expected
    assert resolve([], Hardware(gpus=0, cores=cores)).omp_threads == expected


@pytest.mark.parametrize("hw, expected", [(CPU, 2), (Hardware(gpus=0, cores=16), 4), (GPU, 4)])
def test_omp_threads_auto_resolves_against_hardware(hw, expected):
    s = resolve([cli(omp_threads="auto")], hw)
    assert s.omp_threads == expected
    assert s.origins["omp_threads"] == "command line option --bpsperf-omp-threads"
    assert resolve([env(omp_threads=" AUTO ")], hw).omp_threads == expected


def test_omp_threads_explicit_value_is_kept():
    assert resolve([cli(omp_threads="3")], GPU).omp_threads == 3
    assert resolve([marker(omp_threads=1)], CPU).omp_threads == 1


# --- precedence -------------------------------------------------------------------


def _all_sources():
    return [marker(steps=11), cli(steps="12"), env(steps=13), ini(steps="14")]


@pytest.mark.parametrize(
    "drop, expected, origin",
    [
        (0, 11, "steps= of @pytest.mark.bpsperf(...) on test_x"),
        (1, 12, "command line option --bpsperf-steps"),
        (2, 13, "environment variable BPSPERF_STEPS"),
        (3, 14, f"ini key bpsperf_steps in {INI_PATH}"),
        (4, 20, "default"),
    ],
)
def test_precedence_marker_cli_env_ini_default(drop, expected, origin):
    sources = _all_sources()[drop:]
    s = resolve(sources, CPU)
    assert s.steps == expected
    assert s.origins["steps"] == origin


def test_each_option_resolved_independently_with_its_origin():
    s = resolve(
        [marker(batch_size=16), cli(workers="3"), env(model="resnet18_v1"), ini(tolerance="5%")],
        CPU,
    )
    assert (s.batch_size, s.workers, s.model, s.tolerance) == (16, 3, "resnet18_v1", pytest.approx(0.05))
    assert s.origins["batch_size"] == "batch_size= of @pytest.mark.bpsperf(...) on test_x"
    assert s.origins["workers"] == "command line option --bpsperf-workers"
    assert s.origins["model"] == "environment variable BPSPERF_MODEL"
    assert s.origins["tolerance"] == f"ini key bpsperf_tolerance in {INI_PATH}"
    assert s.origins["steps"] == "default"


def test_empty_env_values_count_as_unset():
    src = env_source({"BPSPERF_STEPS": "  ", "BPSPERF_WORKERS": "3", "OTHER": "x"})
    assert dict(src.values) == {"workers": "3"}
    assert resolve([src, ini(steps="7")], CPU).steps == 7


def test_explicit_value_beats_hardware_default():
    s = resolve([ini(batch_size="2")], GPU)
    assert s.batch_size == 2
    assert s.steps == 100  # still the GPU default


def test_settings_views():
    s = resolve([cli(tricks="default,omp-passive")], CPU)
    d = s.as_dict()
    assert d["tricks"] == ["default", "omp-passive"]
    assert "origins" not in d
    assert s.workload() == {
        "backend": "auto",
        "model": "resnet50_v2",
        "steps": 20,
        "batch_size": 8,
        "image_size": 32,
        "omp_threads": 2,
        "timing": "overlapped",
        "dtype": "float32",
        "data": "synthetic",
    }
    assert s.topology() == {"workers": 2, "server_nodes": 1, "servers_per_node": 1}
    assert s.with_values(steps=40).steps == 40


# --- value parsing ------------------------------------------------------------------


@pytest.mark.parametrize("raw", ["10%", "0.1", " 10% ", "10.0%", 0.1, ".1"])
def test_tolerance_forms(raw):
    assert resolve([cli(tolerance=raw)], CPU).tolerance == pytest.approx(0.1)


@pytest.mark.parametrize(
    "raw, expected", [("2.5%", 0.025), ("50%", 0.5), ("0.5", 0.5), ("99%", 0.99), ("1%", 0.01), ("0.5%", 0.005)]
)
def test_tolerance_values(raw, expected):
    assert resolve([env(tolerance=raw)], CPU).tolerance == pytest.approx(expected)


@pytest.mark.parametrize(
    "name, raw",
    [("tolerance", "10"), ("tolerance", "1"), ("confidence", "99"), ("max_spread", "20"), ("session_spread", "1.0")],
)
def test_a_bare_number_of_one_or_more_is_never_read_as_a_percentage(name, raw):
    # 1 once meant 1% and 0.9 meant 90%: a bare number is a fraction now, so 1 or more is refused.
    with pytest.raises(SettingsError) as info:
        resolve([env(**{name: raw})], CPU)
    message = str(info.value)
    assert f"invalid value {raw!r} for setting {name!r} from environment variable {env_var(name)}: " in message
    assert f"a bare number is a fraction of 1, so {raw} would be {float(raw) * 100:g}%" in message
    assert f"expected {PERCENT_ACCEPTED} (write {raw}% for {raw} percent)" in message


def test_a_markers_number_follows_the_same_rule():
    assert resolve([marker(tolerance=0.1)], CPU).tolerance == pytest.approx(0.1)
    with pytest.raises(
        SettingsError,
        match=r"invalid value 10 for setting 'tolerance' from tolerance= of .*"
        r"a bare number is a fraction of 1, so 10 would be 1000%",
    ):
        resolve([marker(tolerance=10)], CPU)


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("", ""),  # from a marker-less source an empty string is still "embedded"
        ("local", ""),
        ("embedded", ""),
        ("auto", "auto"),
        ("10.0.0.1:6379", "10.0.0.1:6379"),
        ("head.example:6379", "head.example:6379"),
    ],
)
def test_ray_address_forms(raw, expected):
    s = resolve([cli(ray_address=raw)], CPU)
    assert s.ray_address == expected


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("on", True),
        ("YES", True),
        ("1", True),
        ("true", True),
        ("off", False),
        ("no", False),
        ("0", False),
        (" False ", False),
    ],
)
def test_switches(raw, expected):
    s = resolve([env(scaling=raw), cli(strict=raw)], CPU)
    assert s.scaling is expected
    assert s.strict is expected


def test_marker_switch_may_be_a_bool():
    assert resolve([marker(scaling=False), cli(scaling="on")], CPU).scaling is False


@pytest.mark.parametrize("raw", ["MXNET", " byteps ", "Auto"])
def test_backend_choice_is_case_insensitive(raw):
    assert resolve([cli(backend=raw)], CPU).backend == raw.strip().lower()


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("default", ("default",)),
        ("default, omp-passive", ("default", "omp-passive")),
        ("omp-passive+extra-servers,", ("omp-passive+extra-servers",)),
        (["default", "omp-passive"], ("default", "omp-passive")),
    ],
)
def test_tricks_list(raw, expected):
    assert resolve([marker(tricks=raw)], CPU).tricks == expected


def test_marker_values_may_be_typed():
    s = resolve([marker(steps=30, timeout=12, batch_size=4)], CPU)
    assert (s.steps, s.timeout, s.batch_size) == (30, 12.0, 4)


# --- invalid values -------------------------------------------------------------------

INVALID = [
    ("backend", "tensor flow"),
    ("workers", "0"),
    ("workers", "two"),
    ("server_nodes", "-1"),
    ("servers_per_node", "1.5"),
    ("steps", "3"),
    ("batch_size", "0"),
    ("image_size", "8"),
    ("model", "resnet 50"),
    ("omp_threads", "0"),
    ("omp_threads", "many"),
    ("timeout", "0"),
    ("timeout", "-5"),
    ("timeout", "nan"),
    ("timeout", "soon"),
    ("repeats", "0"),
    ("tricks", " , "),
    ("tolerance", "0"),
    ("tolerance", "100%"),
    ("tolerance", "150"),
    ("tolerance", "10"),
    ("tolerance", "-5%"),
    ("tolerance", "lots"),
    ("scaling", "maybe"),
    ("ray_address", "headnode"),
    ("profile", "my profile"),
    ("profile", "a/b"),
    ("baselines_dir", "  "),
    ("strict", "2"),
    ("max_spread", "0"),
    ("max_spread", "abc"),
    ("confirm", "-1"),
    ("confirm", "x"),
    ("trace", "10"),
    ("trace", "0:5"),
    ("trace", "20:10"),
    ("log_dir", "   "),
    ("server_resource", "CPU"),
    ("server_resource", "two words"),
    ("colocate", "sometimes"),
    ("gpus_per_worker", "0"),
    ("gpus_per_worker", "many"),
    ("role_env", "DMLC_INTERFACE=eth0"),
    ("role_env", "gpu:DMLC_INTERFACE=eth0"),
    ("role_env", "worker:DMLC_WORKER_ID=3"),
    ("placement_timeout", "0"),
    ("max_repeats", "0"),
    ("max_repeats", "many"),
    ("confidence", "100%"),
    ("confidence", "99"),
    ("confidence", "sure"),
    ("session_spread", "0"),
    ("session_spread", "wide"),
    ("sessions", "0"),
    ("lock_timeout", "0"),
    ("lock_timeout", "soon"),
    ("normalize", "double"),
    ("timing", "serial"),
    ("data", "imagenet.zip"),
    ("data", "  "),
    ("data_threads", "0"),
    ("dtype", "float64"),
    ("entry", "mymodule"),
    ("entry", "my module:build"),
    ("entry", "mod:build:x"),
    ("launch", "mpirun"),
    ("stall_timeout", "0"),
    ("stall_timeout", "soon"),
    ("connect_timeout", "-1"),
    ("base", "two words"),
    ("base_python", "/usr/bin/"),
    ("head", "two words"),
    ("breakdown_steps", "-1"),
    ("max_pairs", "2"),
    ("max_pairs", "many"),
    ("seed", "-1"),
    ("seed", "lucky"),
    ("sync_every", "0"),
    ("cpus_per_worker", "0"),
    ("cpus_per_worker", "-2"),
    ("cpus_per_worker", "many"),
    ("cpus_per_server", "nan"),
    ("cpus_per_server", "0"),
    ("workers", "some"),
    ("runtime_env", "{not json"),
    ("runtime_env", "/no/such/runtime_env.yaml"),
    ("foreign_load", "0"),
    ("foreign_load", "-0.5"),
    ("foreign_load", "busy"),
]


def test_every_option_has_invalid_values_under_test():
    assert {name for name, _ in INVALID} == {o.name for o in OPTIONS}


def _describe(kind, name):
    return {
        "cli": f"command line option {flag(name)}",
        "env": f"environment variable {env_var(name)}",
        "ini": f"ini key {ini_key(name)} in {INI_PATH}",
        "marker": f"{name}= of @pytest.mark.bpsperf(...) on test_x",
    }[kind]


# Every source that can carry the value: a marker only sets per-test options, and
# a blank environment variable counts as unset (tested separately).
SOURCED_INVALID = [
    (kind, name, raw)
    for name, raw in INVALID
    for kind in ("cli", "env", "ini", "marker")
    if not (kind == "marker" and not OPTIONS_BY_NAME[name].per_test) and not (kind == "env" and not raw.strip())
]


@pytest.mark.parametrize("kind, name, raw", SOURCED_INVALID)
def test_invalid_value_names_option_value_and_source(kind, name, raw):
    source = {"cli": cli, "env": env, "ini": ini, "marker": marker}[kind](**{name: raw})
    # A valid lower-precedence source must not hide the error of a higher one.
    with pytest.raises(SettingsError) as excinfo:
        resolve([source, ini(steps="20")], CPU)
    msg = str(excinfo.value)
    assert repr(name) in msg
    assert repr(raw) in msg
    assert _describe(kind, name) in msg


@pytest.mark.parametrize("value", [True, 2.5, "12.0"])
def test_marker_rejects_non_integer_types(value):
    with pytest.raises(SettingsError, match="steps"):
        resolve([marker(steps=value)], CPU)


def test_invalid_value_message_says_what_is_accepted():
    with pytest.raises(SettingsError, match=r"expected an integer >= 4"):
        resolve([cli(steps="2")], CPU)
    with pytest.raises(SettingsError, match=r"expected auto or a backend name such as mxnet, byteps"):
        resolve([env(backend="t f")], CPU)


def test_invalid_value_in_shadowed_source_is_not_checked():
    # The first source that sets an option wins; lower ones are never parsed.
    assert resolve([cli(steps="10"), env(steps="nope")], CPU).steps == 10


def test_unknown_key_is_an_error_naming_it_and_where():
    with pytest.raises(SettingsError) as excinfo:
        resolve([marker(stepz=10)], CPU)
    msg = str(excinfo.value)
    assert "'stepz'" in msg
    assert "@pytest.mark.bpsperf(...) on test_x" in msg
    assert "steps" in msg  # lists what is accepted
    # per-test listing leaves out what a marker cannot set
    assert "ray_address" not in msg.split("accepted:")[1]


@pytest.mark.parametrize("name, raw", [("ray_address", "auto"), ("log_dir", "/tmp/logs")])
def test_non_per_test_option_in_marker_is_an_error(name, raw):
    assert not OPTIONS_BY_NAME[name].per_test
    with pytest.raises(SettingsError) as excinfo:
        resolve([marker(**{name: raw})], CPU)
    msg = str(excinfo.value)
    assert repr(name) in msg
    assert "cannot be set per test" in msg
    assert flag(name) in msg and env_var(name) in msg and ini_key(name) in msg
    # The same value is fine from the command line.
    assert resolve([cli(**{name: raw})], CPU).as_dict()[name] == raw


def test_settings_error_is_a_value_error():
    assert issubclass(SettingsError, ValueError)


def test_blank_environment_variable_counts_as_unset():
    src = env_source({"BPSPERF_STEPS": "  ", "BPSPERF_WORKERS": "3"})
    assert src.values == {"workers": "3"}
    resolved = resolve([src], CPU)
    assert resolved.steps == 20 and resolved.origins["steps"] == "default"


def test_role_env_items_and_planner_owned_variables():
    s = resolve([cli(role_env="server,scheduler:DMLC_INTERFACE=eth0 worker:DMLC_ENABLE_RDMA=1")], CPU)
    assert s.role_env == (
        ("server", "DMLC_INTERFACE", "eth0"),
        ("scheduler", "DMLC_INTERFACE", "eth0"),
        ("worker", "DMLC_ENABLE_RDMA", "1"),
    )
    with pytest.raises(SettingsError, match="DMLC_PS_ROOT_URI is set by the planner"):
        resolve([cli(role_env="all:DMLC_PS_ROOT_URI=10.0.0.1")], CPU)


def test_verdict_settings_defaults_and_spellings():
    s = resolve([], Hardware(gpus=0, cores=2))
    assert (s.max_repeats, s.confidence, s.session_spread, s.sessions, s.normalize) == (4, 0.99, 0.25, 10, "off")
    s = resolve(
        [
            Source(
                "cli",
                "command line",
                {
                    "max_repeats": "6",
                    "confidence": "95%",
                    "session_spread": "5%",
                    "sessions": "3",
                    "normalize": "Single",
                },
            )
        ],
        Hardware(gpus=0, cores=2),
    )
    assert (s.max_repeats, s.confidence, s.session_spread, s.sessions, s.normalize) == (6, 0.95, 0.05, 3, "single")


def test_every_option_is_in_one_help_group():
    from pytest_bpsperf.config.settings import OPTION_GROUPS

    names = [name for _group, _title, names in OPTION_GROUPS for name in names]
    assert sorted(names) == sorted(o.name for o in OPTIONS) and len(names) == len(set(names))


@pytest.mark.parametrize(
    "hw, values, expected",
    [
        (Hardware(gpus=8, cores=32, gpu_nodes=2, server_nodes=2), {}, 2),  # 2 GPU nodes, 2 CPU nodes: one each
        (Hardware(gpus=8, cores=32, gpu_nodes=4, server_nodes=2), {}, 2),  # no more than the cluster has
        (Hardware(gpus=8, cores=32, gpu_nodes=2, server_nodes=5), {}, 2),  # no more than the workers
        (Hardware(gpus=8, cores=32, gpu_nodes=2, server_nodes=0), {}, 1),  # none: planning asks for colocate
        (Hardware(gpus=8, cores=32, gpu_nodes=2, server_nodes=0), {"colocate": "on"}, 2),
        (Hardware(gpus=1, cores=8), {}, 1),  # a single machine
        (Hardware(gpus=8, cores=32, gpu_nodes=2, server_nodes=2), {"server_nodes": "1"}, 1),  # as set
    ],
)
def test_server_nodes_default_to_one_per_worker_node_as_byteps_asks(hw, values, expected):
    tutorial = byteps_source("docs/step-by-step-tutorial.md").splitlines()[73]
    assert "at least equal to the number of workers" in tutorial  # docs/step-by-step-tutorial.md:74
    s = resolve([Source("cli", "c", {"backend": "byteps", **values})], hw, backends.workload_defaults)
    assert s.server_nodes == expected
    assert s.origins["server_nodes"] == (
        "default" if "server_nodes" not in values else "command line option --bpsperf-server-nodes"
    )


@pytest.mark.parametrize(
    "hw, values, expected",
    [
        (Hardware(gpus=8, cores=32), {"backend": "byteps"}, 10),  # 100 steps: a sync every 10
        (Hardware(gpus=8, cores=32), {"backend": "byteps", "steps": "12"}, 4),  # at most a third of the steps
        (Hardware(gpus=8, cores=32), {"backend": "byteps", "timing": "breakdown"}, 1),  # it syncs in every step
        (Hardware(gpus=8, cores=32), {"backend": "byteps", "sync_every": "1"}, 1),  # as set
        (Hardware(gpus=8, cores=32), {"backend": "mxnet"}, 1),  # MXNet's workers train on the CPUs
        (Hardware(gpus=0, cores=2), {}, 1),  # CPUs
    ],
)
def test_sync_every_defaults_to_a_window_on_gpus(hw, values, expected):
    s = resolve([Source("cli", "c", values)], hw, backends.workload_defaults)
    assert s.sync_every == expected
    command = backends.get(s.backend if s.backend != "auto" else "mxnet").worker_command(s)
    assert ("--sync-every" in command) == (expected != 1)


def test_traced_runs_are_a_workload_of_their_own():
    plain = resolve([Source("cli", "c", {"backend": "byteps"})], Hardware(gpus=1, cores=8))
    traced = resolve([Source("cli", "c", {"backend": "byteps", "trace": "10:20"})], Hardware(gpus=1, cores=8))
    assert "trace" not in plain.workload("byteps")
    assert traced.workload("byteps")["trace"] == "10:20"


@pytest.mark.parametrize(
    "source, where",
    [
        (
            Source("cli", "command line", {"ray_address": "ray://10.0.0.1:10001"}),
            "command line option --bpsperf-ray-address",
        ),
        (env_source({"BPSPERF_RAY_ADDRESS": "ray://head:10001"}), "environment variable BPSPERF_RAY_ADDRESS"),
        (
            Source("ini", "/repo/pytest.ini", {"ray_address": " ray://head:10001 "}),
            "ini key bpsperf_ray_address in /repo/pytest.ini",
        ),
    ],
)
def test_a_ray_client_address_is_a_usage_error_pointing_at_ray_jobs(source, where):
    with pytest.raises(SettingsError) as excinfo:
        resolve([source], CPU)
    msg = str(excinfo.value)
    assert "for setting 'ray_address'" in msg and where in msg and "ray://" in msg
    assert "Ray Client (ray://) is not supported" in msg
    # why, and what to run instead
    assert "runtime_env uploads" in msg and "ray._private.state" in msg
    assert (
        "ray job submit --address http://HEAD:8265 --working-dir . -- pytest -m perf --bpsperf-ray-address=auto" in msg
    )


@pytest.mark.parametrize("raw", ["auto", "127.0.0.1:6379", "head.example:6379"])
def test_gcs_addresses_are_still_accepted(raw):
    assert resolve([Source("cli", "command line", {"ray_address": raw})], CPU).ray_address == raw


def test_the_settings_and_verdict_fields_default_to_the_table():
    from dataclasses import MISSING, fields

    from pytest_bpsperf.config.settings import Settings
    from pytest_bpsperf.judge.verdict import Verdict

    defaulted = {f.name: f.default for f in fields(Settings) if f.default is not MISSING and f.name in OPTIONS_BY_NAME}
    assert defaulted and defaulted == {name: table(name) for name in defaulted}
    assert {f.name: f.default for f in fields(Verdict)}["normalize"] == table("normalize")


def test_the_settings_and_the_profile_count_the_same_gpus(two_gpus):
    from pytest_bpsperf.config.settings import Hardware
    from pytest_bpsperf.remote.hardware import collect_facts

    facts = collect_facts()
    hardware = Hardware.detect()
    assert (hardware.gpus, hardware.cores) == (facts["gpu_count"], facts["cores"]) == (2, facts["cores"])
