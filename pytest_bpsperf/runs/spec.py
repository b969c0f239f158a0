"""What one run is asked to be: the test, trick, repeat, settings and arm of :class:`RunSpec`.

The pytest layer makes one for every run a test asks for; the hook
``pytest_bpsperf_run`` takes it, and the launcher plans and starts its roles
from it. :func:`run_key` names the job (and the baseline entry) it belongs to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..config.settings import Settings
from ..config.tricks import Trick
from ..store.baselines import entry_key

if TYPE_CHECKING:
    from ..config.arms import Arm


@dataclass(frozen=True)
class RunSpec:
    """One run a test asked for."""

    nodeid: str
    test: str  # the test without its trick/repeat parameter (groups a matrix)
    trick: Trick
    repeat: int  # 0-based
    settings: Settings
    log_dir: str
    #: base-vs-head: the arm this run measures (None without a base) and its job's pair (0-based)
    arm: "Arm | None" = None
    pair: "int | None" = None


def run_key(spec: RunSpec, backend: str) -> str:
    """The key of the job ``spec`` belongs to (and of its baseline entry): test, trick, topology, workload."""
    return entry_key(spec.test, spec.trick.name, spec.settings.topology(), spec.settings.workload(backend))


def job_dir_name(nodeid: str) -> str:
    """A short file-system-safe name for a run's log directory."""
    name = nodeid.split("::")[-1]
    return re.sub(r"[^A-Za-z0-9_.+-]+", "-", name).strip("-")[:80] or "run"
