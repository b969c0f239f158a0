"""Sessions under a Ray job, RAY_ADDRESS and the runtime_env setting (fed runs or no run: no Ray started)."""

from __future__ import annotations

import json
import socket

import pytest

from helpers.fakes import MATRIX_TEST, PINNED_SESSION
from pytest_bpsperf.config.ray_env import JOB_CONFIG_VAR

PINNED = PINNED_SESSION


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def project(ourtester: pytest.Pytester) -> pytest.Pytester:
    # no RAY_ADDRESS or Ray job of the developer's reaches here (tests/conftest.py): the tests set their own
    ourtester.makepyfile(test_x=MATRIX_TEST)
    return ourtester


def job_env(monkeypatch, address: str, runtime_env: "dict | None" = None) -> None:
    """This process as the entrypoint of a Ray job, as Ray's job supervisor starts it."""
    monkeypatch.setenv("RAY_ADDRESS", address)
    monkeypatch.setenv(
        JOB_CONFIG_VAR,
        json.dumps(
            {
                "runtime_env": runtime_env or {"working_dir": "gcs://_ray_pkg_a.zip"},
                "metadata": {"job_submission_id": "raysubmit_T"},
            }
        ),
    )


def test_inside_a_job_the_session_connects_to_the_jobs_cluster_not_an_embedded_ray(project, monkeypatch):
    port = closed_port()
    job_env(monkeypatch, f"127.0.0.1:{port}")
    result = project.runpytest(*PINNED, "--bpsperf-show-settings")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            f"bpsperf: inside Ray job raysubmit_T (*RAY_ADDRESS=127.0.0.1:{port}): the roles run "
            f"on the job's cluster (127.0.0.1:{port}), not on an embedded Ray beside it*"
        ]
    )
    # the session goes to the job's cluster (nothing answers there: one usage error naming where it came from)
    result = project.runpytest(*PINNED, "--bpsperf-connect-timeout=1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: bpsperf: nothing answers at '127.0.0.1:{port}'*(setting 'ray_address' "
            "from the Ray job this session runs in (Ray job raysubmit_T*"
        ]
    )


def test_ray_address_without_a_job_is_said_up_front_and_the_runs_stay_here(project, monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    result = project.runpytest(*PINNED, "--bpsperf-json=r.json")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "bpsperf: RAY_ADDRESS=10.0.0.1:6379 is set, but ray_address is empty (from "
            "default): perf tests start an embedded Ray on 127.0.0.1*--bpsperf-ray-address=auto*"
        ]
    )
    monkeypatch.delenv("RAY_ADDRESS")
    result = project.runpytest(*PINNED)
    result.assert_outcomes(passed=2)
    assert "RAY_ADDRESS" not in result.stdout.str()


def test_a_runtime_env_the_roles_cannot_have_is_a_usage_error_before_anything_runs(project):
    result = project.runpytest(*PINNED, '--bpsperf-runtime-env={"env_vars": {"DMLC_ROLE": "server"}}')
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: bpsperf: runtime_env env_vars DMLC_ROLE='server' from setting 'runtime_env' "
            "from command line option --bpsperf-runtime-env: DMLC_ROLE is set by the planner*"
            "accepted: other variables"
        ]
    )


def test_a_field_both_the_job_and_the_setting_set_names_both(project, monkeypatch):
    job_env(monkeypatch, f"127.0.0.1:{closed_port()}")
    project.makefile(".yaml", env="working_dir: .\n")
    project.makeini(f"[pytest]\nbpsperf_runtime_env = {project.path / 'env.yaml'}\n")
    result = project.runpytest(*PINNED, "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: bpsperf: runtime_env field 'working_dir' is set twice: \"gcs://_ray_pkg_a.zip\" by the "
            f"runtime_env of Ray job raysubmit_T * and \"{project.path}\" by setting 'runtime_env' from ini key "
            "bpsperf_runtime_env in "
            f"{project.path / 'tox.ini'}; accepted: working_dir set in one place*"
        ]
    )


def test_the_results_keep_where_the_runtime_env_came_from_and_no_values_of_its_variables(project):
    project.makefile(".json", env=json.dumps({"env_vars": {"WANDB_API_KEY": "s3cret-value"}, "pip": ["six"]}))
    result = project.runpytest(*PINNED, f"--bpsperf-runtime-env={project.path / 'env.json'}", "--bpsperf-json=r.json")
    result.assert_outcomes(passed=2)
    text = (project.path / "r.json").read_text()
    assert "s3cret-value" not in text
    for test in json.loads(text)["tests"]:
        assert test["settings"]["runtime_env"] == {
            "from": str(project.path / "env.json"),
            "env": {"env_vars": ["WANDB_API_KEY"], "pip": ["six"]},
        }
