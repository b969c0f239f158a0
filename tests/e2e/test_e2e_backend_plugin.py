"""A backend added by another plugin runs through the real launcher on Ray.

The test project's conftest registers a tiny backend: its scheduler and
servers are Python processes that exit at once, its workers are small Python
processes (two per worker node) that write the records format. Everything
else is the plugin's own: placement, plan, Ray actors, teardown, measurement,
reports.
"""

from __future__ import annotations

import json

import pytest

from helpers.procs import role_processes

pytest.importorskip("ray")

CONFTEST = '''
from pytest_bpsperf import backends
from pytest_bpsperf.backends import BackendBase, WorkerProcess
from pytest_bpsperf.remote.environ import PYTHON, RECORDS

WORKER = """
import json, os, sys, time
out = open(sys.argv[1], "a")
def write(**record):
    out.write(json.dumps(record) + "\\\\n")
    out.flush()
write(event="start", batch_size=4, env={k: v for k, v in os.environ.items() if k.startswith(("DMLC_", "TOY_"))})
for step in range(int(sys.argv[2])):
    time.sleep(0.02)
    write(event="step", step=step, total_s=0.02, images=4)
write(event="end")
"""


class ToyBackend(BackendBase):
    name = "toy"
    needs_gpu_workers = False

    def server_command(self):
        return (PYTHON, "-c", "import os; print('toy', os.environ['DMLC_ROLE'], 'up')")

    def worker_command(self, settings):
        return (PYTHON, "-c", WORKER, RECORDS, str(settings.steps))

    def worker_processes(self, settings, worker_id, node, gpus):
        return tuple(WorkerProcess(f".{rank}", {"TOY_RANK": str(rank)}) for rank in range(2))


backends.register(ToyBackend())
'''

PERF_TEST = '''
import pytest

pytestmark = pytest.mark.perf


def test_toy(bpsperf_train):
    result = bpsperf_train()
    assert result.backend == "toy"
    assert result.img_per_sec > 0
'''


def test_registered_backend_runs_through_the_launcher_on_ray(pytester: pytest.Pytester, tmp_path):
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


def test_unregistered_backend_is_a_usage_error_naming_the_registered_ones(pytester: pytest.Pytester):
    pytester.makepyfile(test_perf=PERF_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", "--bpsperf-backend=toy")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "invalid value 'toy' for setting 'backend' from command line option --bpsperf-backend" in err
    assert "registered backend (mxnet, byteps)" in err
