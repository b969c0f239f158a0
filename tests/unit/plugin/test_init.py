"""The pytest layer as a whole (``plugin/``): each of its objects writes only its own state.

``plugin/__init__.py`` wires the objects it made; the others ask each other through methods. The check
reads every module of the folder, and a test shows that it finds the writes the layer used to make.
"""

from __future__ import annotations

_GLUE_NAMES = {"gate", "runner", "reports", "settings_plugin", "guard", "ledger", "session"}
#: writes that stay, each with its reason
_ALLOWED = {
    # plugin/__init__.py wires the objects it made: the runner's declared callback, and pytest's own exit status
    ("__init__.py", "runner.before_ray"),
    ("__init__.py", "session.exitstatus"),
}
_MUTATORS = {"append", "extend", "update", "add", "pop", "clear", "setdefault", "remove", "insert", "discard"}


def _chain(node):
    """``a.b.c`` as ["a", "b", "c"] (None unless it is names and attributes only)."""
    import ast

    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id] + parts[::-1]


def _foreign_writes(path):
    """Writes into another object's attributes: ``self.x.y = ...``, ``gate.y = ...``, ``self.x.y.append(...)``."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        targets = []
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for t in getattr(node, "targets", None) or [node.target]:
                targets.append(t.value if isinstance(t, ast.Subscript) else t)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS:
            targets.append(node.func.value)
        for t in targets:
            chain = _chain(t)
            if chain is None or len(chain) < 2:
                continue
            foreign = len(chain) >= 3 if chain[0] == "self" else chain[0] in _GLUE_NAMES
            if foreign and (path.name, ".".join(chain)) not in _ALLOWED:
                found.append((node.lineno, f"{path.name}:{node.lineno} {'.'.join(chain)}"))
    return [text for _, text in sorted(found)]


def test_no_object_of_the_pytest_layer_writes_another_ones_attributes():
    import pathlib

    import pytest_bpsperf

    root = pathlib.Path(pytest_bpsperf.__file__).parent
    files = sorted((root / "plugin").glob("*.py"))
    assert [w for f in files for w in _foreign_writes(f)] == []


def test_the_check_finds_what_the_pytest_layer_used_to_write(tmp_path):
    old = tmp_path / "__init__.py"
    old.write_text(
        "def f(gate, runner, self):\n    gate.lines.append('x')\n    gate.update_failed = True\n"
        "    self.settings_plugin.hardware = 1\n    self.gate.lines.append('y')\n"
        "    self.ledger.failures.append(2)\n    self.written.append(3)\n    runner.before_ray = f\n"
    )
    assert _foreign_writes(old) == [
        "__init__.py:2 gate.lines",
        "__init__.py:3 gate.update_failed",
        "__init__.py:4 self.settings_plugin.hardware",
        "__init__.py:5 self.gate.lines",
        "__init__.py:6 self.ledger.failures",
    ]
