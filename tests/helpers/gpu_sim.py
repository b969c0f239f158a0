"""The GPU simulation (tests only): BytePS's GPU worker path end to end on CPUs.

Nothing of it is a setting or a default of the plugin. A simulated GPU cluster is Ray's
``ray.cluster_utils.Cluster`` on loopback whose worker nodes announce fake GPUs
(``num_gpus`` and ``accelerator_type:V100``); the BytePS stand-in (``standin/``: BytePS's MXNet
plugin on CPU MXNet under BytePS's rules, MXNet's own parameter server behind ``byteps.server``)
goes first on the import path of every process of the session through the ``runtime_env`` setting
(:func:`runtime_env`). The plugin then runs its real BytePS code, with real MXNet, real
parameter-server processes and the real ``bpslaunch``; every process marks itself as a simulation,
so reports say so and baselines refuse it.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Iterator

from .paths import HELPERS, ROOT

#: The folder that goes first on the import path (sitecustomize, byteps, _bpsperf_simulation).
STANDIN = HELPERS / "standin"

GPU_IPS = ("127.0.0.2", "127.0.0.3")
SERVER_IPS = ("127.0.0.4", "127.0.0.5")


def standin_env(tmp_path: "Path | str", **values: "str | None") -> "dict[str, str]":
    """This process's environment for a process under the stand-in: no inherited role configuration, the
    stand-in first on ``PYTHONPATH``, its sockets in ``tmp_path``; ``values`` set (None removes)."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("DMLC_", "BYTEPS_", "PYTHONPATH", "CUDA_", "BPSPERF_"))
    }
    env.update({"PYTHONPATH": os.pathsep.join([str(STANDIN), str(ROOT)]), "BYTEPS_SOCKET_PATH": str(tmp_path)})
    for key, value in values.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def runtime_env() -> str:
    """The ``runtime_env`` setting that puts the stand-in first on the path of every actor of a session."""
    return json.dumps({"env_vars": {"PYTHONPATH": str(STANDIN)}})


@contextlib.contextmanager
def simulated_cluster(tmp: Path, head_cpus: int = 1) -> Iterator[object]:
    """A head (127.0.0.1, ``head_cpus`` CPUs), two nodes with two fake V100 GPUs and one CPU each, two
    server nodes (one CPU, the ``bpsperf_server`` resource); Ray's temp dir under ``tmp``."""
    from ray.cluster_utils import Cluster

    (tmp / "ray").mkdir(parents=True, exist_ok=True)
    saved = {k: os.environ.get(k) for k in ("RAY_TMPDIR", "RAY_AUTH_MODE")}
    os.environ["RAY_TMPDIR"] = str(tmp)
    os.environ["RAY_AUTH_MODE"] = "disabled"  # as every cluster of the tests (see tests/conftest.py)
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": head_cpus,
            "node_ip_address": "127.0.0.1",
            "include_dashboard": False,
            "_system_config": {
                "health_check_period_ms": 500,
                "health_check_failure_threshold": 3,
                "health_check_timeout_ms": 500,
            },
        },
    )
    try:
        for ip in GPU_IPS:
            cluster.add_node(num_cpus=1, num_gpus=2, node_ip_address=ip, resources={"accelerator_type:V100": 1})
        for ip in SERVER_IPS:
            cluster.add_node(num_cpus=1, node_ip_address=ip, resources={"bpsperf_server": 1})
        cluster.wait_for_nodes()
        yield cluster
    finally:
        cluster.shutdown()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
