"""``cli/bisect.py``: how ``bpsperf bisect`` reads a step's session and what it exits with.

The bisection's rules alone are in ``tests/unit/judge/test_bisect.py``; ``bpsperf bisect`` over a real git
history, each step a pytest session, in ``tests/pytester/test_bisect.py``.
"""

from __future__ import annotations

import pytest

from pytest_bpsperf.cli.bisect import outcome_of


def verdict(status, ratio, nodeid="t.py::t[default]"):
    return {
        "kind": "pairs",
        "status": status,
        "ratio": ratio,
        "ci_low": ratio - 0.05,
        "ci_high": ratio + 0.05,
        "pairs": 4,
        "looks": 2,
        "nodeid": nodeid,
        "change_pct": 100 * (ratio - 1),
        "breakdown": {
            "base": {"total_s": 0.3, "compute_s": 0.2, "sync_s": 0.1},
            "head": {"total_s": 0.4, "compute_s": 0.3, "sync_s": 0.1},
        },
    }


def test_the_worst_job_of_a_session_decides_its_step():
    doc = {
        "verdicts": [verdict("ok", 0.99, "a"), verdict("regression", 0.7, "b"), verdict("regression", 0.8, "c")],
        "tests": [{"settings": {"max_pairs": 12}}],
    }
    o = outcome_of(doc, 1, "")
    assert (o.status, o.nodeid, o.ratio, o.max_pairs) == ("regression", "b", 0.7, 12)
    assert o.where.startswith("head 30.0% slower: compute +50%")
    doc["verdicts"] = [verdict("ok", 0.99), verdict("inconclusive", 0.9)]
    assert outcome_of(doc, 0, "").status == "inconclusive"


@pytest.mark.parametrize(
    "output, doc, broken",
    [
        (
            "ERROR: bpsperf: head arm (/tmp/x/tree) on this machine: entry point bench:build: module 'bench' does not "
            "import: SyntaxError",
            None,
            "head",
        ),
        ("", {"failures": [{"nodeid": "t", "reason": "worker-0 (head arm, pair 1): died"}], "verdicts": []}, "head"),
        ("ERROR: file or directory not found: nope.py", None, ""),
    ],
)
def test_a_session_without_a_verdict_failed_and_says_which_arm(output, doc, broken):
    o = outcome_of(doc, 4, output)
    assert o.status == "failed" and o.broken == broken and o.reason


def test_an_internal_error_is_exit_3_never_1_which_means_no_drop(monkeypatch, capsys):
    from pytest_bpsperf.cli import bisect as module
    from pytest_bpsperf.cli import main

    def broken(args):
        raise RuntimeError("a bug")

    monkeypatch.setattr(module, "bisect", broken)
    assert main(["bisect", "A", "B", "--", "-m", "perf"]) == 3
    assert "internal error" in capsys.readouterr().err
    monkeypatch.setattr(module, "bisect", lambda args: (_ for _ in ()).throw(module.BisectError("bad GOOD")))
    assert main(["bisect", "A", "B"]) == 2
