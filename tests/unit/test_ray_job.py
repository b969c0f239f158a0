"""Under a Ray job (ray job submit), RAY_ADDRESS or RAY_JOB_ID: what ray_address becomes, and what is said."""

from __future__ import annotations

import json

import pytest

from pytest_bpsperf.config.ray_env import JOB_CONFIG_VAR, RayJob, job_origin, ray_job_source, ray_notices
from pytest_bpsperf.config.settings import Hardware, Source, resolve

CPU = Hardware(gpus=0, cores=2)

#: What Ray 2.60's job supervisor gives the entrypoint (ray job submit --working-dir . -- pytest ...).
JOB_ENV = {
    "RAY_ADDRESS": "127.0.0.1:48393",
    JOB_CONFIG_VAR: json.dumps({"runtime_env": {"working_dir": "gcs://_ray_pkg_64418a401e7ded0e.zip",
                                                "env_vars": {"FROM_JOB": "j"}},
                                "metadata": {"job_submission_id": "raysubmit_jAm2", "job_name": "raysubmit_jAm2"}}),
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
    assert line.startswith("inside Ray job raysubmit_jAm2 (RAY_JOB_CONFIG_JSON_ENV_VAR set by ray job submit; "
                           "RAY_ADDRESS=127.0.0.1:48393): the roles run on the job's cluster (127.0.0.1:48393), "
                           "not on an embedded Ray beside it")


@pytest.mark.parametrize("source, value, says", [
    (Source("cli", "command line", {"ray_address": "auto"}), "auto", "the roles run on the job's cluster (ray_address "
                                                                     "auto, from command line option "
                                                                     "--bpsperf-ray-address, is RAY_ADDRESS)"),
    (Source("cli", "command line", {"ray_address": "10.0.0.9:6379"}), "10.0.0.9:6379",
     "the roles run on 10.0.0.9:6379 (setting 'ray_address' from command line option"),
    (Source("ini", "/r/pytest.ini", {"ray_address": "local"}), "", "but ray_address is empty (from ini key "
                                                                   "bpsperf_ray_address in /r/pytest.ini): an "
                                                                   "embedded Ray on this node runs the roles"),
])
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
    assert line == ("RAY_ADDRESS=10.0.0.1:6379 is set, but ray_address is empty (from default): perf tests start an "
                    "embedded Ray on 127.0.0.1 and train on this machine alone; --bpsperf-ray-address=auto trains on "
                    "the cluster RAY_ADDRESS names")
    (line,) = ray_notices({"RAY_JOB_ID": "02000000"}, s)
    assert "RAY_JOB_ID=02000000 is set (pytest runs in a Ray worker process)" in line
    assert ray_notices({}, s) == []
    # connected on purpose: nothing to say
    assert ray_notices(environ, resolve([Source("cli", "command line", {"ray_address": "auto"})], CPU)) == []
