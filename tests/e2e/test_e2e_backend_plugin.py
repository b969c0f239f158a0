"""A backend added by another plugin runs through the real launcher on Ray.

The test project's conftest imports the example backend of
docs/writing-a-backend.md (``examples/toy_backend.py``, written against the
public face only), which registers it: its scheduler and servers are Python
processes that exit at once, its workers are small Python processes (two per
worker node) that write the records format. Everything
else is the plugin's own: placement, plan, Ray actors, teardown, measurement,
reports. That an unregistered backend is a usage error is in
``tests/pytester/test_backend_plugin.py``.
"""

from __future__ import annotations

import json

import pytest

from helpers.procs import role_processes
from helpers.toy_backend import CONFTEST, EXAMPLE, PERF_TEST

pytest.importorskip("ray")


def test_registered_backend_runs_through_the_launcher_on_ray(pytester: pytest.Pytester, tmp_path):
    pytester.makepyfile(toy_backend=EXAMPLE)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_perf=PERF_TEST)
    pytester.makeini("[pytest]\nbpsperf_steps = 6\nbpsperf_scaling = off\nbpsperf_backend = toy\n")
    out = tmp_path / "result.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-m", "perf", f"--bpsperf-json={out}")
    result.assert_outcomes(passed=1)
    doc = json.loads(out.read_text())
    (entry,) = doc["tests"]
    assert entry["backend"] == "toy"
    roles = {r["name"]: r for r in entry["roles"]}
    assert set(roles) == {"scheduler", "server-0", "worker-0.0", "worker-0.1", "worker-1.0", "worker-1.1"}
    assert all(r["exit_code"] == 0 and not r["killed"] for r in roles.values())
    # the backend's per-process variables and the plan's ps-lite variables reached each process
    assert roles["worker-1.1"]["env"]["DMLC_ROLE"] == "worker"
    assert roles["worker-1.1"]["env"]["DMLC_NUM_WORKER"] == "2"
    assert set(entry["per_worker_img_per_sec"]) == {"worker-0.0", "worker-0.1", "worker-1.0", "worker-1.1"}
    assert entry["topology"]["worker_processes"] == 4
    assert "trick matrix" in result.stdout.str() and "(toy, resnet50_v2" in result.stdout.str()
    assert role_processes(doc["session_info"]["run_id"]) == []
