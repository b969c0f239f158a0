"""The statistics as a package (``stats/``): plain stdlib, and no default confidence of their own."""

from __future__ import annotations

import inspect
import re

import pytest

from pytest_bpsperf import stats


def test_module_does_not_import_pytest_or_numpy():
    import pathlib

    imported = set()
    for path in pathlib.Path(stats.__file__).parent.glob("*.py"):
        imported |= set(re.findall(r"^\s*(?:from|import)\s+([A-Za-z_][\w.]*)", path.read_text(), re.M))
    assert not {m.split(".")[0] for m in imported} & {"pytest", "numpy", "scipy"}
    assert {"math", "statistics"} <= imported


@pytest.mark.parametrize("name", ["compare", "session_difference", "log_difference"])
def test_statistics_take_the_confidence_from_their_caller(name):
    # stats is the bottom of the import graph: it cannot read the table, so it has no default of its own
    import pytest_bpsperf.stats as stats

    parameter = inspect.signature(getattr(stats, name)).parameters["confidence"]
    assert parameter.default is inspect.Parameter.empty
