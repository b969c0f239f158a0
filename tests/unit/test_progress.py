"""Live progress while a run trains: the progress line, how often it is said, the records it reads.

That the lines reach the terminal of a session is in ``tests/pytester/test_pictures_exports.py``.
"""

from __future__ import annotations

import json

from pytest_bpsperf.launch import launcher, watchdog
from pytest_bpsperf.remote.roles import RoleProcess


def test_progress_line_uses_the_slowest_worker_and_sums_rates():
    latest = {"worker-0": {"event": "step", "step": 11, "images": 8, "total_s": 0.5},
              "worker-1": {"event": "step", "step": 10, "images": 8, "total_s": 0.25}}
    assert watchdog.progress_line("t[omp-passive] repeat 1/3", 20, latest) == \
        "t[omp-passive] repeat 1/3: step 11/20, 48.0 img/s"
    assert watchdog.progress_line("t", 20, {"worker-0": None, "worker-1": latest["worker-1"]}) is None


class FakeGroup:
    """Roles that exit after a number of polls; the clock advances 1 s per poll."""

    def __init__(self, polls):
        self.roles = [type("R", (), {"name": "worker-0", "role": "worker"})()]
        self.polls, self.now = polls, 0.0
        self.status = {}  # the stall watchdog reads it: no progress known, nothing stalls

    def poll(self):
        self.now += 1.0
        self.polls -= 1
        return {"worker-0": 0 if self.polls <= 0 else None}


def test_watch_reports_progress_about_every_ten_seconds(monkeypatch):
    monkeypatch.setattr(launcher.time, "sleep", lambda _s: None)
    group, calls = FakeGroup(35), []
    assert launcher._watch(group, 1e9, 1e9, 30.0, lambda: calls.append(group.now), clock=lambda: group.now) is None
    assert calls == [10.0, 20.0, 30.0]


def test_latest_record_skips_a_torn_line(tmp_path):
    role = RoleProcess("worker-0", str(tmp_path))
    assert role.latest_record() is None
    with open(role.records_path, "w") as fh:
        fh.write(json.dumps({"event": "step", "step": 4}) + "\n" + '{"event": "st')
    assert role.latest_record() == {"event": "step", "step": 4}
