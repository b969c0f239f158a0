"""``config/reports.py``: one table of report options, for the plugin's flags and the ``bpsperf`` command."""

from __future__ import annotations

from helpers.reports import REPORTS


def test_the_report_options_are_one_list():
    from pytest_bpsperf.config import reports
    from pytest_bpsperf.plugin.options import REPORT_OPTIONS

    assert REPORT_OPTIONS is reports.REPORT_OPTIONS  # the plugin's flags and the command read one table
    assert [o.flag for o in REPORT_OPTIONS] == REPORTS
    assert {o.flag for o in REPORT_OPTIONS if o.directory} == {"--bpsperf-plots", "--bpsperf-history"}
