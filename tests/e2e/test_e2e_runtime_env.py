"""End to end on an existing cluster: the entry point's module shipped, the runtime_env setting merged.

A throw-away cluster on loopback (``ray.cluster_utils.Cluster``: a head for the
server and a second node for the worker). The user's project lives on the driver
only: its entry point ``bench:build`` travels to the nodes with ``py_modules`` (the
plugin's, never the driver's directory: the plan has no ``--entry-path`` then), and
the user's ``runtime_env`` adds a module of its own and a variable. The entry point
imports that module when it builds, so the role actors' runtime_env kept the
setting's ``py_modules`` beside the plugin's and the entry's.
"""

from __future__ import annotations

import json

import pytest

from helpers.entries import ENTRY
from helpers.procs import role_processes

ray = pytest.importorskip("ray")
pytest.importorskip("mxnet")

PERF_TEST = """
import pytest

pytestmark = pytest.mark.perf


def test_train(bpsperf_train):
    assert bpsperf_train().img_per_sec > 0
"""

#: the entry point needs the user's own helper module, which only the runtime_env setting ships
BENCH = ENTRY.format(extra=0).replace("def build(ctx):\n", "def build(ctx):\n    import benchhelp  # noqa: F401\n")


@pytest.fixture
def cluster(monkeypatch):
    from ray.cluster_utils import Cluster

    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # as tests/e2e/test_e2e_cluster.py: a throw-away cluster
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    c.add_node(num_cpus=1)
    c.wait_for_nodes()
    try:
        yield c
    finally:
        c.shutdown()


def test_the_entry_module_and_the_settings_py_modules_reach_the_roles(cluster, pytester, tmp_path):
    pytester.makepyfile(bench=BENCH, test_perf=PERF_TEST)
    helper = tmp_path / "helpers_elsewhere" / "benchhelp"
    helper.mkdir(parents=True)
    (helper / "__init__.py").write_text("MARK = 1\n")
    runtime_env = {"py_modules": [str(helper)], "env_vars": {"BPSPERF_E2E_FROM_SETTING": "setting"}}
    pytester.makeini(
        "[pytest]\nbpsperf_entry = bench:build\nbpsperf_steps = 4\nbpsperf_batch_size = 2\n"
        "bpsperf_image_size = 16\nbpsperf_workers = 1\nbpsperf_scaling = off\nbpsperf_backend = mxnet\n"
        "bpsperf_omp_threads = 1\n"
    )
    out = tmp_path / "result.json"
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-m",
        "perf",
        f"--bpsperf-ray-address={cluster.address}",
        f"--bpsperf-runtime-env={json.dumps(runtime_env)}",
        f"--bpsperf-json={out}",
    )
    result.assert_outcomes(passed=1)
    doc = json.loads(out.read_text())
    (test,) = doc["tests"]
    (worker,) = test["workers"]
    # imported from what Ray unpacked from the plugin's py_modules, not from the driver's project directory
    assert "runtime_resources/py_modules_files/" in worker["entry_file"], worker["entry_file"]
    assert not worker["entry_file"].startswith(str(pytester.path))
    for role in test["roles"]:
        assert role["exit_code"] == 0, role
        assert role["env"]["BPSPERF_E2E_FROM_SETTING"] == "setting", role["name"]
    assert test["settings"]["runtime_env"] == {
        "from": "inline",
        "env": {"py_modules": [str(helper)], "env_vars": ["BPSPERF_E2E_FROM_SETTING"]},
    }
    assert role_processes(doc["session_info"]["run_id"]) == []
