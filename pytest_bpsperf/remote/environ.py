"""The contract between a role plan and the process that runs it: placeholders and variables.

One definition, used by the planner (driver), the role actor that scrubs what a
process inherits, the workload that echoes what it got, and the reports.
"""

from __future__ import annotations

import os
from typing import Mapping, Sequence

#: Stands for the Python interpreter of the environment on the role's node; the
#: role actor replaces it there (so no node runs "whatever python3 is on PATH").
PYTHON = "{python}"
#: Stands for the worker's per-step records file, chosen by the role actor.
RECORDS = "{records}"
#: Stands for the root of the arm's source tree on the role's node (base-vs-head runs):
#: the local checkout on this machine, or where Ray unpacked it on a cluster's node.
TREE = "{tree}"
#: Import path entries (``os.pathsep``-separated, may use ``TREE``) that the role actor
#: puts first on a role's PYTHONPATH, after the harness: the code under test.
IMPORT_PATH = "BPSPERF_IMPORT_PATH"
#: Stands for this run's scratch directory on the role's node (``<tmp>/bpsperf-<BPSPERF_RUN_ID>``);
#: the role actor creates every directory an environment value names under it before the role
#: starts (BytePS binds its sockets in ``BYTEPS_SOCKET_PATH`` and creates no directory), and
#: removes the scratch directory after the role stops.
SCRATCH = "{scratch}"
#: Set in every process of a simulated run (a stand-in for BytePS, tests/helpers/standin): what
#: ran instead of the real thing. The workload records it; reports say the run was a simulation,
#: and its figures never become baselines.
SIMULATION = "BPSPERF_SIMULATION"

#: Variables that configure OpenMP, ps-lite, BytePS, MXNet or the GPUs a role
#: sees. A role inherits none of them (Ray puts OMP_NUM_THREADS=1 into every
#: actor's environment; OpenMP reads these once, when it loads): it gets exactly
#: the values its plan sets.
CONFIG_PREFIXES = (
    "OMP_", "KMP_", "GOMP_", "DMLC_", "BYTEPS_", "PS_", "MXNET_",
    "NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
)
#: What records and reports show of a role's environment: its configuration and
#: the harness's own variables.
REPORTED_PREFIXES = CONFIG_PREFIXES + ("BPSPERF_",)


#: Variables the planner sets from the topology and from where Ray placed each role;
#: a trick or ``role_env`` that sets one of them is a usage error. (Other
#: ``DMLC_*``/``BYTEPS_*`` variables, such as DMLC_INTERFACE, DMLC_ENABLE_RDMA or
#: BYTEPS_SERVER_ENGINE_THREAD, are the user's to set.)
PLANNER_OWNED = (
    "DMLC_ROLE", "DMLC_NUM_WORKER", "DMLC_NUM_SERVER", "DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT", "DMLC_NODE_HOST",
    "DMLC_WORKER_ID", "BYTEPS_LOCAL_RANK", "BYTEPS_LOCAL_SIZE", "BYTEPS_TRACE_*", "NVIDIA_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES", "BPSPERF_RUN_ID", "BYTEPS_SOCKET_PATH",
)


def package_dir() -> str:
    """The directory of this package (``pytest_bpsperf``) as this process imported it."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pythonpath(first: Sequence[str], inherited: Mapping[str, str]) -> str:
    """The ``PYTHONPATH`` of a process this one starts: ``first``, then what ``inherited`` had.

    Empty entries are left out (an empty entry would put the child's working directory on its path).
    """
    return os.pathsep.join([p for p in first if p] + [p for p in [inherited.get("PYTHONPATH", "")] if p])


def planner_owned(name: str) -> bool:
    """Whether the planner sets variable ``name`` itself."""
    return any(name == p or (p.endswith("*") and name.startswith(p[:-1])) for p in PLANNER_OWNED)


def scrub(inherited: Mapping[str, str]) -> dict:
    """``inherited`` minus every variable that configures a role."""
    return {k: v for k, v in inherited.items() if not k.startswith(CONFIG_PREFIXES)}


#: Names of the variables a trick or ``role_env`` set for a role (comma-separated): reported
#: whatever their prefix (e.g. LD_PRELOAD), so the records show everything a trick changed.
CHOSEN_VARS = "BPSPERF_CHOSEN_VARS"


def reported(environ: Mapping[str, str], extra: "tuple[str, ...]" = ()) -> dict:
    """The variables of ``environ`` that records and reports show, sorted: configuration, the
    harness's own, every variable named in ``CHOSEN_VARS`` and the names in ``extra``."""
    chosen = set(filter(None, environ.get(CHOSEN_VARS, "").split(","))) | set(extra)
    return {k: v for k, v in sorted(environ.items()) if k.startswith(REPORTED_PREFIXES) or k in chosen}


def rank_records_path(records: str, local_rank: "str | int") -> str:
    """The records file of local rank ``local_rank`` of a role that runs several workers (bpslaunch)."""
    base, ext = os.path.splitext(records)
    return f"{base}.rank{local_rank}{ext}"
