"""``launch/cluster.py``: the runtime_env and environment the driver gives ``ray.init``, and the Ray job it runs in."""

from __future__ import annotations

import json

from pytest_bpsperf.config.parsers import parse_runtime_env
from pytest_bpsperf.config.ray_env import JOB_CONFIG_VAR, OVERRIDE_VAR, RayJob
from pytest_bpsperf.launch.cluster import RayCluster


def _package():
    from pytest_bpsperf.remote.environ import package_dir

    return package_dir()


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


def test_the_cluster_reads_the_job_from_the_environment(monkeypatch):
    monkeypatch.setenv(JOB_CONFIG_VAR, json.dumps({"runtime_env": {}, "metadata": {"job_submission_id": "rs_2"}}))
    assert RayCluster(address="auto").job.submission_id == "rs_2"
    monkeypatch.delenv(JOB_CONFIG_VAR)
    assert RayCluster(address="auto").job is None
