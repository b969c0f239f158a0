"""Run under an interpreter with Ray at the floor pyproject.toml names: a real reservation of a plan.

``python tests/helpers/floor_check.py`` (with this checkout on PYTHONPATH) starts a local Ray, plans a
run on its node and reserves it the way the launcher does (a placement group whose bundles are
pinned by Ray's node labels), then releases it. Prints ``ok <ray version>``; raises otherwise.
"""

import os

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

import ray  # noqa: E402

from pytest_bpsperf import backends
from pytest_bpsperf.config.settings import Hardware, Source, resolve  # noqa: E402
from pytest_bpsperf.config.tricks import TrickRegistry  # noqa: E402
from pytest_bpsperf.launch.reservation import reserve  # noqa: E402
from pytest_bpsperf.planning.planner import make_plan  # noqa: E402
from pytest_bpsperf.runs.plan import Node  # noqa: E402

ray.init(address="local", num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
try:
    nodes = [
        Node(
            node_id=n["NodeID"],
            ip=n["NodeManagerAddress"],
            cpus=n["Resources"].get("CPU", 0.0),
            gpus=0,
            label="local",
            resources=n["Resources"],
        )
        for n in ray.nodes()
        if n["Alive"]
    ]
    settings = resolve([Source("cli", "floor", {"backend": "mxnet"})], Hardware(gpus=0, cores=2))
    plan = make_plan(settings, TrickRegistry().get("default"), nodes, backend=backends.get("mxnet"), run_id="floor")
    reservation = reserve(plan, 60)
    reservation.release()
    print("ok", ray.__version__)
finally:
    ray.shutdown()
