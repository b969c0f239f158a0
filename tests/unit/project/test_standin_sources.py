"""The BytePS stand-in's rules cite BytePS's source: every citation is in its table, and each line says so.

The stand-in (``tests/helpers/standin/byteps/mxnet``) is read as text (importing it imports MXNet); its
``SOURCES`` quote BytePS 0.2.5.post15, compared here with BytePS's sdist, which ``make setup`` keeps
(``helpers.byteps_source``).
"""

from __future__ import annotations

import ast
import re

import pytest

from helpers.byteps_source import byteps_source
from helpers.paths import HELPERS

STANDIN = HELPERS / "standin" / "byteps" / "mxnet" / "__init__.py"


def _module() -> "tuple[str, tuple]":
    tree = ast.parse(STANDIN.read_text())
    sources = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "SOURCES" for t in node.targets)
    )
    return ast.get_docstring(tree), sources


DOC, SOURCES = _module()
#: ``byteps/x/y.cc:12`` or ``:12-14`` in the docstring.
CITED = re.compile(r"``(byteps/[\w/]+\.(?:cc|py|h)):(\d+)(?:-(\d+))?``")


def _cited() -> "set[tuple[str, int, int]]":
    return {(path, int(first), int(last or first)) for path, first, last in CITED.findall(DOC)}


def test_every_rule_of_the_docstring_cites_a_line_the_table_quotes():
    quoted = {(path, first, last) for path, first, last, _text in SOURCES}
    assert _cited() and _cited() <= quoted, sorted(_cited() - quoted)
    assert quoted <= _cited(), f"quoted but not cited: {sorted(quoted - _cited())}"


def test_the_rules_cover_what_the_issue_asks_of_the_stand_in():
    for topic in (
        "``init()`` first",
        "communicator.cc:67-72",
        "declared",
        "One name per tensor",
        "is_average",
        "DistributedTrainer(params, optimizer, optimizer_params=None, root_rank=0,",
        "broadcasts the parameters itself",
    ):
        assert topic in DOC, topic


@pytest.mark.parametrize("path, first, last, text", SOURCES, ids=[f"{p}:{a}-{b}" for p, a, b, _t in SOURCES])
def test_each_cited_line_of_byteps_says_what_the_stand_in_enforces(path, first, last, text):
    lines = byteps_source(path).splitlines()[first - 1 : last]
    joined = " ".join(line.strip() for line in lines)
    assert text in joined or any(text in line for line in lines), f"{path}:{first}-{last} reads: {lines}"
