"""``stats/rounds.py``: a benchmark's round statistics, by hand and against pytest-benchmark's own."""

from __future__ import annotations

import json
import subprocess

import matplotlib.figure  # noqa: F401 - imported once here, not again inside each pytester run
import pytest

from helpers.paths import pytest_benchmark_tool
from pytest_bpsperf.stats.rounds import round_stats


def test_round_stats_by_hand():
    from pytest_bpsperf.stats.rounds import FIELDS, quartiles, round_stats

    # 9 = 4*2+1 rounds: Q1 a quarter past the 2nd datum, Q3 three quarters past the 7th (method 3)
    data = [5.0, 1.0, 2.0, 3.0, 4.0, 6.0, 7.0, 8.0, 100.0]
    s = round_stats(data)
    assert (s["q1"], s["q3"], s["iqr"]) == (2.75, 7.25, 4.5)
    assert (s["ld15iqr"], s["hd15iqr"], s["iqr_outliers"]) == (1.0, 8.0, 1)  # fences -4 and 14
    assert s["stddev_outliers"] == 1 and s["outliers"] == "1;1"
    assert (s["min"], s["max"], s["median"], s["rounds"], s["total"]) == (1.0, 100.0, 5.0, 9, 136.0)
    assert s["ops"] == pytest.approx(9 / 136) and s["data"] == data  # in the order measured
    assert list(s)[: len(FIELDS)] == list(FIELDS)
    assert quartiles([1.0, 2.0, 3.0, 4.0]) == (1.5, 3.5)  # method 2: the halves' medians
    assert quartiles([1.0, 2.0, 3.0]) == (1.25, 2.75)  # 4*0+3: three quarters of the way, and back
    one = round_stats([0.5])
    assert (one["q1"], one["q3"], one["stddev"], one["ld15iqr"], one["hd15iqr"]) == (0.5, 0.5, 0, 0.5, 0.5)
    with pytest.raises(ValueError, match="at least one round"):
        round_stats([])


#: Rounds of every count from 1 to 13, with ties and an outlier among them: each count takes its own
#: quartile method (one round, an even count, 4m+1, 4m+3).
ROUNDS = [[0.5 + 0.01 * ((7 * i) % 5) + (3.0 if i == 9 else 0.0) for i in range(n)] for n in range(1, 14)]


def test_round_statistics_are_pytest_benchmarks_own():
    python = pytest_benchmark_tool("python")
    code = (
        "import json, sys\nfrom pytest_benchmark.stats import Stats\nout = []\n"
        "for data in json.load(sys.stdin):\n    s = Stats()\n    [s.update(x) for x in data]\n"
        "    out.append(s.as_dict())\nprint(json.dumps(out))\n"
    )
    proc = subprocess.run(
        [str(python), "-c", code], input=json.dumps(ROUNDS), capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    theirs = json.loads(proc.stdout)
    for data, their in zip(ROUNDS, theirs):
        ours = round_stats(data)
        assert set(ours) == set(their) | {"data"} and ours["data"] == data
        for field, value in their.items():
            assert ours[field] == (value if isinstance(value, (str, int)) else pytest.approx(value)), (len(data), field)
