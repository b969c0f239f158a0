"""Measurement statistics: steady state, summaries and the regression method.

Pure standard-library Python so that a CLI, a notebook or the pytest glue can
use it without numpy or scipy. The modules: :mod:`.steady` (warm-up
detection), :mod:`.compare` (summaries, :func:`log_difference`, the verdict's
:func:`compare` and the matrix's :func:`significance`), :mod:`.tdist`
(Student's t).
"""

from .compare import (
    Comparison,
    LogDifference,
    Significance,
    Summary,
    change_pct,
    compare,
    log_difference,
    scaling_efficiency,
    significance,
    summarize,
)
from .steady import SteadyState, detect_steady_state
from .tdist import normal_quantile, t_cdf, t_quantile, t_sf

__all__ = [
    "Comparison",
    "LogDifference",
    "Significance",
    "SteadyState",
    "Summary",
    "change_pct",
    "compare",
    "detect_steady_state",
    "log_difference",
    "normal_quantile",
    "scaling_efficiency",
    "significance",
    "summarize",
    "t_cdf",
    "t_quantile",
    "t_sf",
]
