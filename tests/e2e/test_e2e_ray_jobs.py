"""End to end under Ray Jobs: ``ray job submit --working-dir . -- pytest -m perf --bpsperf-ray-address=auto``.

A Ray head of its own (``ray start --head`` on 127.0.0.1, its own temporary
directory and ports, stopped by process group and recorded pids: see
``helpers/ray_head.py``) with its Jobs server, which needs ``ray[default]``.
``.ci/run`` makes ``.ci/rayjobs``, a venv that sees the project's packages and
adds ``ray[default]`` at the installed Ray's version; ``BPSPERF_RAYJOBS_PYTHON``
names another interpreter. Without one the test skips and says what it needs.

The job is a tiny perf project (its entry point, 4 steps of batch 2 at 16 px, one
worker and one server), submitted with a runtime_env of its own (a module in
``py_modules``, a variable). In the job, pytest connects to the job's cluster,
ships itself and the entry point's module, and the role actors keep the job's
runtime_env: the entry point imports the job's module, the roles see the job's
variable and the setting's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.entries import ENTRY
from helpers.paths import ROOT
from helpers.procs import role_processes
from helpers.ray_head import LOOPBACK, RayHead, has_jobs_server

pytest.importorskip("ray")
pytest.importorskip("mxnet")

JOBS_PYTHON = Path(os.environ.get("BPSPERF_RAYJOBS_PYTHON", ROOT / ".ci" / "rayjobs" / "bin" / "python"))

PERF_TEST = """
import pytest

pytestmark = pytest.mark.perf


def test_train(bpsperf_train):
    assert bpsperf_train().img_per_sec > 0
"""

#: the entry point needs a module that only the job's runtime_env ships (py_modules)
BENCH = ENTRY.format(extra=0).replace("def build(ctx):\n", "def build(ctx):\n    import jobhelp  # noqa: F401\n")

INI = (
    "[pytest]\nbpsperf_entry = bench:build\nbpsperf_steps = 4\nbpsperf_batch_size = 2\nbpsperf_image_size = 16\n"
    "bpsperf_workers = 1\nbpsperf_server_nodes = 1\nbpsperf_scaling = off\nbpsperf_backend = mxnet\n"
    "bpsperf_omp_threads = 1\n"
)


def jobs_python() -> str:
    """An interpreter with ray[default] (the Jobs server and CLI), or the test skips saying what it needs."""
    import ray

    for python in (str(JOBS_PYTHON), sys.executable):
        if os.path.exists(python) and has_jobs_server(python) is None:
            return python
    pytest.skip(
        f"needs ray[default]=={ray.__version__} (Ray's Jobs server and CLI: aiohttp, aiohttp_cors, ...), "
        f"which neither {JOBS_PYTHON} nor {sys.executable} has ({has_jobs_server(sys.executable)}): .ci/run "
        "makes .ci/rayjobs; or set BPSPERF_RAYJOBS_PYTHON to an interpreter that has it"
    )


@pytest.fixture(scope="module")
def head():
    python = jobs_python()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "BPSPERF_"))}
    env.update(LOOPBACK)
    # the roles, the job's entrypoint and its workers import this checkout's plugin
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH", "")] if p])
    ray_head = RayHead(python, env).start()
    try:
        yield ray_head
    finally:
        ray_head.stop()
        left = ray_head.processes()
        ray_head.remove()
        assert left == [], f"processes of the Ray head left running: {left}"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "bench.py").write_text(BENCH)
    (repo / "test_perf.py").write_text(PERF_TEST)
    (repo / "pytest.ini").write_text(INI)
    helper = tmp_path / "job_modules" / "jobhelp"  # outside the working dir: only py_modules ships it
    helper.mkdir(parents=True)
    (helper / "__init__.py").write_text("MARK = 1\n")
    return repo


def test_pytest_as_a_ray_job_trains_on_the_jobs_cluster_with_its_runtime_env(head, project, tmp_path):
    out = tmp_path / "result.json"  # an absolute path: the job's working dir is Ray's temporary copy
    job_env = {"py_modules": [str(tmp_path / "job_modules" / "jobhelp")], "env_vars": {"BPSPERF_E2E_FROM_JOB": "job"}}
    setting = {"env_vars": {"BPSPERF_E2E_FROM_SETTING": "setting"}}
    entrypoint = [
        head.python,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-m",
        "perf",
        "--bpsperf-ray-address=auto",
        f"--bpsperf-runtime-env={json.dumps(setting)}",
        f"--bpsperf-json={out}",
    ]
    t0 = time.monotonic()
    proc = subprocess.run(
        head.ray(
            "job",
            "submit",
            "--address",
            head.jobs_address,
            "--working-dir",
            str(project),
            "--runtime-env-json",
            json.dumps(job_env),
            "--",
            *entrypoint,
        ),
        env=head.env,
        capture_output=True,
        text=True,
        timeout=480,
        cwd=str(project),
    )
    logs = proc.stdout[-6000:] + proc.stderr[-3000:]
    assert proc.returncode == 0, logs
    assert "1 passed" in proc.stdout, logs
    # the plugin says where it trains, up front
    assert (
        "bpsperf: inside Ray job raysubmit_" in proc.stdout and "the roles run on the job's cluster" in proc.stdout
    ), logs
    doc = json.loads(out.read_text())
    ray_info = doc["session_info"]["ray"]
    assert ray_info["embedded"] is False and ray_info["address"] == "auto", ray_info
    assert ray_info["job"] and ray_info["job"].startswith("raysubmit_")
    (test,) = doc["tests"]
    (worker,) = test["workers"]
    # the entry point's module came through the plugin's py_modules (not the job's working_dir copy)
    assert "runtime_resources/py_modules_files/" in worker["entry_file"], worker["entry_file"]
    for role in test["roles"]:
        assert role["exit_code"] == 0 and role["ran_on"]["ip"] == "127.0.0.1", role
        # the job's runtime_env and the setting's both reached the roles (merged, not replaced)
        assert role["env"]["BPSPERF_E2E_FROM_JOB"] == "job", role["name"]
        assert role["env"]["BPSPERF_E2E_FROM_SETTING"] == "setting", role["name"]
    assert role_processes(doc["session_info"]["run_id"]) == []
    print(f"ray job submit took {time.monotonic() - t0:.1f}s")  # shown with -s
