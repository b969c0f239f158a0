"""``report/plots.py``: the pairs picture draws what was measured."""

from __future__ import annotations

import math

from helpers.verdicts import paired_verdict
from pytest_bpsperf.report.plots import pairs_picture


def test_pairs_picture_draws_what_was_measured(tmp_path):
    v = paired_verdict()
    job = {**v.as_dict(), "nodeid": v.nodeid}
    picture = pairs_picture(job, tmp_path)
    assert picture.kind == "pairs" and (tmp_path / picture.path.split("/")[-1]).stat().st_size > 1000
    assert picture.data["ratio"] == [0.7, 0.71, 0.69, 0.7] and picture.data["status"] == "regression"
    assert math.isclose(picture.data["ci_high"], v.comparison.ci_high)
