"""``judge/offline.py``: verdicts and baseline records from files take the option table's defaults.

That ``bpsperf check`` decides a session as the plugin did is in ``tests/pytester/test_cli.py``.
"""

from __future__ import annotations

import pytest


def _run(test: str, img_per_sec: float, **extra) -> dict:
    """One run of a results document, as the plugin writes it, with only the settings a verdict needs."""
    return {
        "key": f"{test}|default|-|-",
        "test": test,
        "trick": "default",
        "nodeid": f"{test}[default]",
        "img_per_sec": img_per_sec,
        "settings": {"tolerance": 0.15},
        **extra,
    }


def test_offline_verdicts_take_the_tables_defaults_for_settings_a_file_lacks(retabled):
    from pytest_bpsperf.judge.offline import compare_results

    retabled(confidence=0.9, session_spread=0.05)
    base = {"tests": [_run("t", 100.0), _run("t", 101.0), _run("t", 99.0)]}
    head = {"tests": [_run("t", 98.0), _run("t", 99.0)]}
    verdicts, missing = compare_results(base, head)
    assert missing == [] and verdicts[0].comparison.confidence == 0.9
    assert verdicts[0].comparison.between_sd_pct == pytest.approx(5.0)


def test_offline_baseline_records_take_the_tables_max_spread(retabled):
    from pytest_bpsperf.judge.offline import baseline_sessions

    results = {"tests": [_run("t", 100.0), _run("t", 110.0), _run("t", 90.0)]}  # spread 10%
    assert list(baseline_sessions(results)[0]) == ["t|default|-|-"]
    retabled(max_spread=0.05)
    sessions, refused = baseline_sessions(results)
    assert sessions == {} and len(refused) == 1


def test_offline_pair_verdicts_take_the_tables_defaults(retabled):
    from pytest_bpsperf.judge.offline import pair_verdicts

    retabled(confidence=0.9, max_pairs=5, repeats=4)
    runs = []
    for index in range(4):
        runs += [_run("t", 100.0 + index, arm="base", pair=index), _run("t", 99.0 + index, arm="head", pair=index)]
    [verdict] = pair_verdicts({"base_vs_head": {"arms": {}}, "tests": runs})
    c = verdict.comparison
    assert (c.confidence, c.last_look, c.first_look) == (0.9, 5, 4)
