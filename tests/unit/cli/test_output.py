"""``cli/output.py``: the ``--json`` output keeps errors on stderr and prints numbers that are not finite as null."""

from __future__ import annotations

import json
import math

import pytest

from helpers.cli import bpsperf


@pytest.mark.parametrize(
    "argv",
    [["check", "missing.json"], ["compare", "missing.json", "missing.json"], ["baselines", "show", "nope"]],
    ids=" ".join,
)
def test_errors_stay_on_stderr_with_json(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, out, err = bpsperf(capsys, *argv, "--json")
    assert code == 2 and out == "" and err.startswith(f"bpsperf {argv[0]}: error: ")


def test_numbers_that_are_not_finite_print_as_null():
    from pytest_bpsperf.cli.output import dumps

    assert json.loads(dumps({"a": math.nan, "b": [math.inf, 1.5]})) == {"a": None, "b": [None, 1.5]}
