"""One definition of each thing: defaults from the option table, one decision for plugin and command,
one list of report options, one meaning of ``auto``, one hardware detection, one PYTHONPATH rule.

Each test here failed while the thing it checks was written twice (and had drifted).
"""

from __future__ import annotations

import inspect

import pytest

from pytest_bpsperf.config.settings import OPTIONS_BY_NAME


def table(name: str):
    """The option table's default of setting ``name``."""
    return OPTIONS_BY_NAME[name].default


# --- 1. defaults from the option table ----------------------------------------------------------------


def test_decide_defaults_to_the_option_tables_confidence_and_session_spread():
    from pytest_bpsperf.judge.verdict import decide

    verdict = decide(nodeid="t", test="t", trick="x", profile_id="p", key="k", samples=[100.0, 101.0],
                     baseline={"sessions": [{"samples": [100.0, 99.0, 101.0]}]}, tolerance=0.15)
    assert verdict.comparison.confidence == table("confidence") == 0.99  # the user-facing default
    assert verdict.comparison.between_assumed  # one recorded session: the assumed spread, the table's
    assert verdict.comparison.between_sd_pct == pytest.approx(table("session_spread") * 100)


@pytest.mark.parametrize("name", ["compare", "session_difference", "log_difference"])
def test_statistics_take_the_confidence_from_their_caller(name):
    # stats is the bottom of the import graph: it cannot read the table, so it has no default of its own
    import pytest_bpsperf.stats as stats

    parameter = inspect.signature(getattr(stats, name)).parameters["confidence"]
    assert parameter.default is inspect.Parameter.empty


def test_paired_comparison_takes_its_last_look_from_the_caller():
    # the last look is the max_pairs setting: the table's, passed in
    from pytest_bpsperf.stats.paired import paired_compare

    assert inspect.signature(paired_compare).parameters["last_look"].default is inspect.Parameter.empty
