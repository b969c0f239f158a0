"""A decided verdict as the test's outcome in pytest: one rule for the stored gate and base against head.

A regression fails the test; a missing baseline and an inconclusive verdict
skip it (both fail under ``--bpsperf-strict``); an improvement passes and is
noted in the session's summary; ok passes.
"""

from __future__ import annotations

from typing import Callable

import pytest

from ..judge.verdict import IMPROVEMENT, INCONCLUSIVE, NO_BASELINE, REGRESSION

__all__ = ["settle"]

_STRICT = {NO_BASELINE: "a missing baseline fails", INCONCLUSIVE: "an inconclusive verdict fails"}


def settle(status: str, text: str, *, strict: bool, note: Callable[[str], None]) -> None:
    """End the test as ``status`` says (``text``: the verdict's message); ``note`` takes the summary line
    of an improvement."""
    if status == REGRESSION:
        pytest.fail(text, pytrace=False)
    if status in _STRICT:
        if strict:
            pytest.fail(f"{text} (--bpsperf-strict: {_STRICT[status]})", pytrace=False)
        pytest.skip(text)
    if status == IMPROVEMENT:
        note(text.splitlines()[0])
