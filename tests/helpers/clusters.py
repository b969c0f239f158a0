"""A made-up cluster to plan on: the simulated GPU cluster of issue 25, and settings resolved for it.

A head node (2 CPUs, the head resource), two nodes of 8 CPUs and 2 GPUs, two CPU nodes of 4 CPUs;
``settings`` resolves values as the command line gives them, with the backends' workload defaults.
"""

from __future__ import annotations

from pytest_bpsperf import backends
from pytest_bpsperf.config.settings import Hardware, Source, resolve
from pytest_bpsperf.config.tricks import Trick
from pytest_bpsperf.planning.placement import HEAD_RESOURCE
from pytest_bpsperf.runs.plan import Node

CPU_ONLY = Hardware(gpus=0, cores=2)


def settings(hw=CPU_ONLY, **values):
    """Settings of these command-line values (each given as a string) on hardware ``hw``."""
    return resolve(
        [Source("cli", "command line", {k: str(v) for k, v in values.items()})] if values else [],
        hw,
        backends.workload_defaults,
    )


HEAD = Node("head", "127.0.0.1", 2, 0, "head", {"CPU": 2, HEAD_RESOURCE: 1})
GPUS = [Node(f"g{i}", f"127.0.0.{2 + i}", 8, 2, f"g{i}", {"CPU": 8, "GPU": 2}) for i in range(2)]
CPUS = [Node(f"c{i}", f"127.0.0.{4 + i}", 4, 0, f"c{i}", {"CPU": 4}) for i in range(2)]
DEFAULT = Trick("default")
