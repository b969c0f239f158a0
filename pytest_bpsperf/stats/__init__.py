"""Measurement statistics: steady state, summaries and the regression method.

Pure standard-library Python so that a CLI, a notebook or the pytest glue can
use it without numpy or scipy. The modules: :mod:`.steady` (warm-up
detection), :mod:`.method` (the one method: a t interval on log img/s
that includes between-session noise, :func:`session_difference`, and its
one-session form :func:`log_difference`), :mod:`.comparison` (summaries, the
verdict's :func:`compare`, the matrix's :func:`significance`), :mod:`.tdist`
(Student's t), :mod:`.paired` (base against head in pairs), :mod:`.changepoint`
(steps in a trend), :mod:`.rounds` (pytest-benchmark's statistics of a benchmark's
rounds, for the export).
"""

from .comparison import (
    Comparison,
    LogDifference,
    Significance,
    Summary,
    as_sessions,
    change_pct,
    compare,
    log_difference,
    scaling_efficiency,
    significance,
    summarize,
)
from .method import BetweenPrior, pooled_between, satterthwaite_dof, session_difference
from .steady import SteadyState, detect_steady_state
from .tdist import normal_quantile, t_cdf, t_quantile, t_sf

__all__ = [
    "BetweenPrior",
    "Comparison",
    "as_sessions",
    "LogDifference",
    "Significance",
    "SteadyState",
    "Summary",
    "change_pct",
    "compare",
    "detect_steady_state",
    "log_difference",
    "normal_quantile",
    "pooled_between",
    "scaling_efficiency",
    "significance",
    "satterthwaite_dof",
    "session_difference",
    "summarize",
    "t_cdf",
    "t_quantile",
    "t_sf",
]
