"""The GitHub Actions recipe under examples/ uses only options and commands that exist (``pytest --help``).

The workflows' structure, and actionlint on them, are in ``tests/unit/test_ci_recipe.py``.
"""

from __future__ import annotations

import re

import pytest
from helpers.workflows import GATES, WORKFLOWS, all_runs, load

yaml = pytest.importorskip("yaml")  # PyYAML comes with Ray


def test_every_option_and_command_used_exists(pytester):
    used = set()
    for path in WORKFLOWS:
        used |= set(re.findall(r"--bpsperf-[a-z-]+", path.read_text()))
    result = pytester.runpytest("--help")
    help_text = result.stdout.str()
    assert sorted(o for o in used if o not in help_text) == []

    from pytest_bpsperf.cli import _parser

    runs = "\n".join(all_runs(load(p)) for p in GATES)
    # a folded command (>-) continues on the lines that start with an option
    for command in re.findall(r"bin/bpsperf ([^\n]*(?:\n *--[^\n]*)*)", runs):
        args = command.replace('"', "").split()
        _parser().parse_args(args)  # exits (fails the test) on an unknown command or option
