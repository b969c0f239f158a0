"""Verdicts made up for the reports: one of the stored-baseline gate, and base-vs-head ones decided from
made-up pair tables (for the reports and the recipe's comment)."""

from __future__ import annotations

from pytest_bpsperf.judge.pairs import decide_pairs
from pytest_bpsperf.judge.verdict import Verdict

ARMS = {
    "base": {
        "ref": "origin/main",
        "commit": "a" * 40,
        "dirty": False,
        "python": None,
        "versions": {"mxnet": "1.9.1", "python": "3.11.7"},
    },
    "head": {"ref": "working tree", "commit": "b" * 40, "dirty": True, "python": None, "versions": {}},
}


def paired_verdict(ratios=(0.7, 0.71, 0.69, 0.7), dropped=0, **kw):
    """A verdict decided from a pair table with these head/base ratios (base at 100 img/s)."""
    table = [
        {
            "pair": i + 1,
            "order": ("base-head", "head-base")[i % 2],
            "base_img_per_sec": 100.0,
            "head_img_per_sec": 100.0 * r,
            "ratio": r,
        }
        for i, r in enumerate(ratios)
    ]
    table += [
        {
            "pair": len(table) + i + 1,
            "order": "base-head",
            "base_img_per_sec": None,
            "head_img_per_sec": 70.0,
            "ratio": None,
            "dropped": "base run failed: worker-0 died",
        }
        for i in range(dropped)
    ]
    args = dict(
        nodeid="t.py::test_x[default]",
        test="t.py::test_x",
        trick="default",
        profile_id="p",
        key="k",
        pairs=table,
        tolerance=0.15,
        confidence=0.99,
        first_look=3,
        max_pairs=12,
        arms=ARMS,
    )
    args.update(kw)
    return decide_pairs(**args)


def verdict(nodeid, status="regression", trick="default"):
    """A stored-baseline gate's verdict of ``status`` for ``nodeid`` (two samples, tolerance 15%)."""
    return Verdict(
        status=status,
        nodeid=nodeid,
        test=nodeid.split("[")[0],
        trick=trick,
        profile_id="p",
        key="k",
        samples=(1.0, 1.1),
        tolerance=0.15,
    )
