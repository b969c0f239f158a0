"""``launch/watchdog.py``: the stall watchdog of a run, and the live progress line, without a session.

Sessions that the guards stop or warn are in ``tests/pytester/test_guard.py``; how often the line is
said, in ``tests/unit/launch/test_launcher.py``.
"""

from __future__ import annotations

import pytest

from pytest_bpsperf.launch import watchdog
from pytest_bpsperf.launch.watchdog import FIRST_STEP_S, FLOOR_S, StallWatch

# --- stall watchdog ---------------------------------------------------------------


def _status(steps: int, state: str = "S", step_s: float = 0.5) -> dict:
    return {"code": None, "state": state, "steps": steps, "last_step": steps - 1 if steps else None, "step_s": step_s}


def test_stall_names_the_stopped_worker_with_its_last_step():
    watch = StallWatch(setting=10.0, origin="command line option --bpsperf-stall-timeout")
    workers = ["worker-0", "worker-1"]
    assert watch.check({"worker-0": _status(5), "worker-1": _status(5)}, workers, now=0.0) is None
    assert watch.check({"worker-0": _status(7), "worker-1": _status(7)}, workers, now=5.0) is None
    # dist_sync: both wait once one stops; the stopped one (state T) is the culprit
    stall = watch.check({"worker-0": _status(7), "worker-1": _status(7, "T")}, workers, now=16.0)
    assert stall is not None and stall.culprits == ("worker-1",)
    assert "worker-1 made no new step for 11s (last step 6)" in stall.message
    assert "stopped (SIGSTOP)" in stall.message and "--bpsperf-stall-timeout" in stall.message


def test_stall_without_a_stopped_process_names_the_worker_behind():
    watch = StallWatch(setting=10.0)
    workers = ["worker-0", "worker-1"]
    watch.check({"worker-0": _status(9), "worker-1": _status(4)}, workers, now=0.0)
    stall = watch.check({"worker-0": _status(9), "worker-1": _status(4)}, workers, now=11.0)
    assert stall.culprits == ("worker-1",) and "behind" in stall.message


def test_derived_stall_limit_follows_step_times_with_a_floor_and_allows_a_slow_first_step():
    watch = StallWatch()
    assert watch.limit() == FLOOR_S
    watch.check({"worker-0": _status(3, step_s=4.0)}, ["worker-0"], now=0.0)
    assert watch.limit() == pytest.approx(80.0)
    fresh = StallWatch()
    fresh.check({"worker-0": _status(0)}, ["worker-0"], now=0.0)
    assert fresh.check({"worker-0": _status(0)}, ["worker-0"], now=FIRST_STEP_S - 1) is None
    assert fresh.check({"worker-0": _status(0)}, ["worker-0"], now=FIRST_STEP_S + 1) is not None


# --- the scheduler's port --------------------------------------------------------------


def test_progress_line_uses_the_slowest_worker_and_sums_rates():
    latest = {
        "worker-0": {"event": "step", "step": 11, "images": 8, "total_s": 0.5},
        "worker-1": {"event": "step", "step": 10, "images": 8, "total_s": 0.25},
    }
    assert (
        watchdog.progress_line("t[omp-passive] repeat 1/3", 20, latest)
        == "t[omp-passive] repeat 1/3: step 11/20, 48.0 img/s"
    )
    assert watchdog.progress_line("t", 20, {"worker-0": None, "worker-1": latest["worker-1"]}) is None
