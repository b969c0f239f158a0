"""pytest-bpsperf: performance-regression tests for parameter-server training.

This module is the public face: every name in :data:`__all__` is what a user
or a backend author needs, and only these names are public (the modules below
``pytest_bpsperf.`` are the plugin's own and change between releases).

- A perf test gets a :class:`RunResult` from the ``bpsperf_train`` fixture.
- An entry point (``bpsperf_entry = module:build``) gets a :class:`TrainContext`
  (MXNet code), or with backend ``torch`` a :class:`TorchContext` (PyTorch code).
- A trick is a :class:`Trick`: environment variables per role kind.
- A backend implements :class:`Backend` (usually as a :class:`BackendBase`
  subclass), describes its worker processes with :class:`WorkerProcess`, may use
  the :data:`PYTHON` and :data:`RECORDS` placeholders in its commands, and is
  made known with :func:`register`; its workers write the records format of
  docs/writing-a-backend.md, which the plugin reads as :class:`WorkerRecords`.
- The run contract, for the ``pytest_bpsperf_run`` hook: a :class:`RunSpec`
  goes in, a :class:`RunOutput` comes out.

The names are imported when first used, so that ``import pytest_bpsperf``
stays cheap: a role process on a node imports this package too, and needs
none of the driver's code.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: public name -> the module that defines it
_WHERE = {
    "RunResult": "pytest_bpsperf.judge.job",
    "RunSpec": "pytest_bpsperf.runs.spec",
    "RunOutput": "pytest_bpsperf.runs.output",
    "RoleOutcome": "pytest_bpsperf.runs.output",
    "WorkerRecords": "pytest_bpsperf.runs.output",
    "TrainContext": "pytest_bpsperf.remote.entry",
    "TorchContext": "pytest_bpsperf.remote.torch_workload",
    "Trick": "pytest_bpsperf.config.tricks",
    "Settings": "pytest_bpsperf.config.settings",
    "Backend": "pytest_bpsperf.backends.base",
    "BackendBase": "pytest_bpsperf.backends.base",
    "WorkerProcess": "pytest_bpsperf.backends.base",
    "PlanError": "pytest_bpsperf.runs.plan",
    "CommWindow": "pytest_bpsperf.runs.output",
    "Node": "pytest_bpsperf.runs.plan",
    "Plan": "pytest_bpsperf.runs.plan",
    "RolePlan": "pytest_bpsperf.runs.plan",
    "register": "pytest_bpsperf.backends",
    "unregister": "pytest_bpsperf.backends",
    "PYTHON": "pytest_bpsperf.remote.environ",
    "RECORDS": "pytest_bpsperf.remote.environ",
}

__all__ = [
    "__version__",
    "RunResult",
    "RunSpec",
    "RunOutput",
    "RoleOutcome",
    "WorkerRecords",
    "TrainContext",
    "TorchContext",
    "Trick",
    "Settings",
    "Backend",
    "BackendBase",
    "WorkerProcess",
    "PlanError",
    "CommWindow",
    "Node",
    "Plan",
    "RolePlan",
    "register",
    "unregister",
    "PYTHON",
    "RECORDS",
]

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time each name is imported on first use
    from .backends import register, unregister
    from .backends.base import Backend, BackendBase, WorkerProcess
    from .config.settings import Settings
    from .config.tricks import Trick
    from .judge.job import RunResult
    from .remote.entry import TrainContext
    from .remote.environ import PYTHON, RECORDS
    from .remote.torch_workload import TorchContext
    from .runs.output import CommWindow, RoleOutcome, RunOutput, WorkerRecords
    from .runs.plan import Node, Plan, PlanError, RolePlan
    from .runs.spec import RunSpec


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(
            f"module 'pytest_bpsperf' has no attribute {name!r}; its public names: {', '.join(__all__)}"
        )
    value = getattr(importlib.import_module(where), name)
    globals()[name] = value  # once: later lookups are plain attribute reads
    return value


def __dir__() -> "list[str]":
    return sorted(set(globals()) | set(__all__))
