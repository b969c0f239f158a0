"""Every test in tests/e2e is marked ``e2e``: it starts Ray, MXNet, BytePS or role processes (minutes).

``pytest -m "not e2e"`` runs the rest (tests/unit and tests/pytester); ``pytest tests/e2e`` only these.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: "list[pytest.Item]") -> None:
    # A conftest's hook sees every item of the session: mark only those collected from this folder.
    for item in items:
        if HERE in item.path.resolve().parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture
def driver(cluster, tmp_path):
    """This process as the plugin's driver on the module's own ``cluster`` fixture (ships the package,
    disconnects after): test_e2e_multinode.py and test_e2e_gpu_sim.py each define theirs."""
    from pytest_bpsperf.launch.cluster import RayCluster

    c = RayCluster(address=cluster.address, watch_dir=str(tmp_path)).start()
    try:
        yield c
    finally:
        c.close()
