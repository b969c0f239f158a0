"""The scripts name only what the package has: every ``from pytest_bpsperf... import x`` of every
script in ``scripts/`` (at the top or inside a function) resolves. A script runs rarely (on a GPU
machine, by hand), so a name a change removed would otherwise be found there, too late."""

from __future__ import annotations

import ast
import importlib

import pytest

from helpers.paths import ROOT

SCRIPTS = sorted((ROOT / "scripts").glob("*.py"))


def _imports(path):
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pytest_bpsperf"):
            for alias in node.names:
                yield node.module, alias.name, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("pytest_bpsperf"):
                    yield alias.name, None, node.lineno


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_every_name_a_script_imports_from_the_package_exists(script):
    missing = []
    for module, name, line in _imports(script):
        mod = importlib.import_module(module)
        if name is not None and not hasattr(mod, name):
            try:  # a submodule imported by name
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{script.name}:{line}: {module}.{name}")
    assert not missing, missing


def test_the_check_sees_the_imports_inside_functions():
    found = {(m, n) for m, n, _ in _imports(ROOT / "scripts" / "gpu_smoke.py")}
    assert ("pytest_bpsperf.remote.roles", "RoleProcess") in found  # imported inside _run_plan_here
