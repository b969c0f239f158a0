"""Input checks shared by the statistics modules."""

from __future__ import annotations

import math
from typing import List, Sequence


def as_floats(values: Sequence[float], what: str, *, positive: bool) -> List[float]:
    """Validate a numeric sequence once so that every caller gets the same message."""
    out: List[float] = []
    for i, v in enumerate(values):
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise ValueError(f"{what}[{i}] is {v!r}, expected a number") from None
        if not math.isfinite(f):
            raise ValueError(f"{what}[{i}] is {f!r}, expected a finite number")
        if positive and f <= 0:
            raise ValueError(f"{what}[{i}] is {f!r}, expected a number > 0")
        out.append(f)
    if not out:
        raise ValueError(f"{what} is empty, expected at least one value")
    return out
