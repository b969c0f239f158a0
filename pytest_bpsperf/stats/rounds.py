"""Statistics of one benchmark's rounds as pytest-benchmark's JSON names them (its ``stats`` object).

The ``--bpsperf-benchmark-json`` export is read by pytest-benchmark's own tools
(``pytest-benchmark compare``), which take these fields as written. They are
computed here from their definitions, with the standard library, so that the
plugin needs no pytest-benchmark (whose pytest plugin would print its header
line in every session of the user):

- the quartiles by the two methods of Tukey's hinges on Wikipedia's
  "Quartile" page (Computing methods): method 2 for an even number of rounds
  (the median of each half), method 3 for an odd number (a weighted mean of
  the two data points nearest to the quarter positions); one round is its own
  quartiles;
- ``ld15iqr`` / ``hd15iqr``: the lowest and highest datum within 1.5 IQR of the
  quartiles (Tukey's fences); ``iqr_outliers`` counts the data beyond the fences
  and ``stddev_outliers`` those beyond one standard deviation of the mean;
  ``outliers`` is the two counts as ``"STDDEV;IQR"``;
- ``ops``: rounds per second of their total (0 for a total of 0).

``tests/unit/stats/test_rounds.py`` checks every field against pytest-benchmark's
own ``Stats`` where a pytest-benchmark is installed beside (``.ci/benchmark``).
"""

from __future__ import annotations

import bisect
import statistics
from typing import Any, Dict, Sequence

__all__ = ["FIELDS", "quartiles", "round_stats"]

#: The fields of pytest-benchmark's ``stats`` object, in its order.
FIELDS = (
    "min",
    "max",
    "mean",
    "stddev",
    "rounds",
    "median",
    "iqr",
    "q1",
    "q3",
    "iqr_outliers",
    "stddev_outliers",
    "outliers",
    "ld15iqr",
    "hd15iqr",
    "ops",
    "total",
)


def quartiles(data: Sequence[float]) -> "tuple[float, float]":
    """(Q1, Q3) of ``data`` (not empty): Tukey's hinges, method 2 for an even count, method 3 for an odd one."""
    xs = sorted(data)
    n = len(xs)
    if n == 1:
        return xs[0], xs[0]
    if n % 2 == 0:  # method 2: the median of the lower and of the upper half
        return statistics.median(xs[: n // 2]), statistics.median(xs[n // 2 :])
    # method 3, 1-based positions: n = 4m+1 puts Q1 a quarter past the m-th datum, n = 4m+3 three quarters
    # past the (m+1)-th; Q3 mirrors it from the top. Here 0-based.
    m = n // 4
    if n % 4 == 1:
        return 0.25 * xs[m - 1] + 0.75 * xs[m], 0.75 * xs[3 * m] + 0.25 * xs[3 * m + 1]
    return 0.75 * xs[m] + 0.25 * xs[m + 1], 0.25 * xs[3 * m + 1] + 0.75 * xs[3 * m + 2]


def round_stats(data: Sequence[float]) -> "Dict[str, Any]":
    """pytest-benchmark's ``stats`` of the rounds ``data`` (seconds, not empty): :data:`FIELDS` and ``data``."""
    if not data:
        raise ValueError("round_stats needs at least one round")
    xs = sorted(data)
    n = len(xs)
    mean = statistics.mean(data)
    stddev = statistics.stdev(data) if n > 1 else 0
    q1, q3 = quartiles(xs)
    iqr = q3 - q1
    low_fence, high_fence = q1 - 1.5 * iqr, q3 + 1.5 * iqr
    iqr_outliers = sum(1 for x in xs if x < low_fence or x > high_fence)
    stddev_outliers = sum(1 for x in xs if x < mean - stddev or x > mean + stddev)
    total = sum(data)
    return {
        "min": xs[0],
        "max": xs[-1],
        "mean": mean,
        "stddev": stddev,
        "rounds": n,
        "median": statistics.median(xs),
        "iqr": iqr,
        "q1": q1,
        "q3": q3,
        "iqr_outliers": iqr_outliers,
        "stddev_outliers": stddev_outliers,
        "outliers": f"{stddev_outliers};{iqr_outliers}",
        # the first datum at or above the low fence, the last at or below the high one
        "ld15iqr": xs[bisect.bisect_left(xs, low_fence)],
        "hd15iqr": xs[bisect.bisect_right(xs, high_fence) - 1],
        "ops": n / total if total else 0,
        "total": total,
        "data": list(data),
    }
