"""``judge/job.py``: a run result's views, and the ledger of a session's jobs, runs, notes and failures."""

from __future__ import annotations

import json

import pytest

from helpers.results import TEST, make_result


def test_run_result_views():
    r = make_result("omp-passive")
    assert r.trick == "omp-passive"
    assert r.img_per_sec == pytest.approx(2 * 16.0, rel=0.01)
    assert set(r.per_worker_img_per_sec) == {"worker-0", "worker-1"}
    d = r.as_dict()
    assert d["nodeid"] == f"{TEST}[omp-passive]"
    assert d["trick"] == "omp-passive"
    assert d["trick_env"]["server"] == {"OMP_WAIT_POLICY": "PASSIVE"}
    assert d["settings"]["steps"] == 20
    assert d["img_per_sec"] == pytest.approx(r.img_per_sec)
    assert "verdict" not in d
    json.dumps(d)


def test_the_ledger_writes_its_own_lists():
    from pytest_bpsperf.judge.job import Ledger, RunFailure

    ledger = Ledger()
    ledger.note("recorded a session")
    ledger.fail(RunFailure("t.py::test", "role worker-0 died"))
    made = []
    first = ledger.job("k", lambda: made.append(1) or "job of k")
    assert (first, ledger.job("k", lambda: made.append(2) or "another"), made) == ("job of k", "job of k", [1])
    ledger.keep("a run")
    assert (ledger.notes, ledger.failures, ledger.jobs, ledger.runs) == (
        ["recorded a session"],
        [RunFailure("t.py::test", "role worker-0 died")],
        {"k": "job of k"},
        ["a run"],
    )
