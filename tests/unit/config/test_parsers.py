"""``config/parsers.py``: the ``runtime_env`` setting's value (inline JSON, a JSON or YAML file) and its errors."""

from __future__ import annotations

import json

import pytest

from helpers.settings import CPU, cli
from pytest_bpsperf.config.parsers import RuntimeEnvSetting, parse_runtime_env
from pytest_bpsperf.config.settings import SettingsError, Source, resolve


def test_inline_json_with_local_paths_made_absolute(tmp_path, monkeypatch):
    (tmp_path / "mylib").mkdir()
    monkeypatch.chdir(tmp_path)
    s = resolve(
        [
            cli(
                runtime_env='{"py_modules": ["mylib", "gcs://_ray_pkg_x.zip"], '
                '"env_vars": {"NCCL_DEBUG": "INFO"}, "pip": ["six"]}'
            )
        ],
        CPU,
    )
    assert isinstance(s.runtime_env, RuntimeEnvSetting) and s.runtime_env.path is None
    assert s.runtime_env.env() == {
        "py_modules": [str(tmp_path / "mylib"), "gcs://_ray_pkg_x.zip"],
        "env_vars": {"NCCL_DEBUG": "INFO"},
        "pip": ["six"],
    }
    assert s.origins["runtime_env"] == "command line option --bpsperf-runtime-env"
    # the results keep where it came from and the names of its variables, not their values
    assert s.as_dict()["runtime_env"] == {
        "from": "inline",
        "env": {
            "py_modules": [str(tmp_path / "mylib"), "gcs://_ray_pkg_x.zip"],
            "env_vars": ["NCCL_DEBUG"],
            "pip": ["six"],
        },
    }
    json.dumps(s.as_dict())


def test_json_and_yaml_files(tmp_path):
    (tmp_path / "env.json").write_text('{"env_vars": {"A": "1"}}')
    (tmp_path / "env.yaml").write_text("env_vars:\n  A: '1'\npip:\n  - six\n")
    assert parse_runtime_env(str(tmp_path / "env.json")) == RuntimeEnvSetting(
        '{"env_vars": {"A": "1"}}', str(tmp_path / "env.json")
    )
    from_yaml = parse_runtime_env(str(tmp_path / "env.yaml"))
    assert from_yaml.env() == {"env_vars": {"A": "1"}, "pip": ["six"]} and from_yaml.path == str(tmp_path / "env.yaml")
    # the same content compares equal, whatever its spelling
    assert parse_runtime_env('{ "pip":["six"],"env_vars":{"A":"1"} }').text == from_yaml.text
    assert parse_runtime_env("") is None and resolve([], CPU).runtime_env is None


@pytest.mark.parametrize(
    "raw, says",
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object of runtime_env fields"),
        ('{"py_modules": "mylib"}', "py_modules must be a list"),
        ('{"env_vars": {"A": 1}}', "env_vars must map variable names to strings"),
        ('{"working_dir": "/no/such/dir"}', "working_dir names /no/such/dir, which does not exist here"),
        ("/no/such/env.yaml", "cannot read /no/such/env.yaml"),
    ],
)
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
