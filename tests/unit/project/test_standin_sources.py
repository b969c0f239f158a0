"""The BytePS stand-in's rules cite BytePS's source: every citation is in its table, and each line says so.

The stand-in (``tests/helpers/standin/byteps/mxnet``) is read as text (importing it imports MXNet); its
``SOURCES`` quote BytePS 0.2.5.post15, compared here with the mirror of BytePS's repository where it
exists (the comparison skips with the reason elsewhere, as in CI).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess

import pytest

from helpers.paths import HELPERS

STANDIN = HELPERS / "standin" / "byteps" / "mxnet" / "__init__.py"
MIRROR = "/work/.mirror/bytedance+byteps/repo"
TAG = "v0.2.5.post15"


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


def _file(path: str) -> "list[str]":
    proc = subprocess.run(["git", "-C", MIRROR, "show", f"{TAG}:{path}"], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"the mirror has no {TAG}:{path}: {proc.stderr.strip()}")
    return proc.stdout.splitlines()


@pytest.mark.skipif(not os.path.isdir(MIRROR), reason=f"BytePS's source is not mirrored here ({MIRROR})")
@pytest.mark.parametrize("path, first, last, text", SOURCES, ids=[f"{p}:{a}-{b}" for p, a, b, _t in SOURCES])
def test_each_cited_line_of_byteps_says_what_the_stand_in_enforces(path, first, last, text):
    lines = _file(path)[first - 1 : last]
    joined = " ".join(line.strip() for line in lines)
    assert text in joined or any(text in line for line in lines), f"{path}:{first}-{last} reads: {lines}"
