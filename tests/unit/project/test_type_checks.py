"""The type checker's settings cover what they claim: ``--strict``'s checks on every module of the public face."""

from __future__ import annotations

import ast
import fnmatch
import sys

import pytest

from helpers.paths import ROOT

tomllib = pytest.importorskip("tomllib") if sys.version_info >= (3, 11) else pytest.importorskip("tomli")

#: What ``mypy --strict`` turns on, as per-module options (mypy's own list, less the global-only ones).
STRICT_FLAGS = (
    "disallow_any_generics",
    "disallow_subclassing_any",
    "disallow_untyped_calls",
    "disallow_untyped_defs",
    "disallow_incomplete_defs",
    "check_untyped_defs",
    "disallow_untyped_decorators",
    "warn_return_any",
    "no_implicit_reexport",
    "extra_checks",
)


def mypy_config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]


def face_modules() -> "set[str]":
    """The package root and every module that defines a public name (the root's ``_WHERE`` table)."""
    tree = ast.parse((ROOT / "pytest_bpsperf" / "__init__.py").read_text())
    where = next(
        n.value
        for n in tree.body
        if isinstance(n, (ast.Assign, ast.AnnAssign))
        and getattr(n.targets[0] if isinstance(n, ast.Assign) else n.target, "id", "") == "_WHERE"
    )
    return {"pytest_bpsperf"} | set(ast.literal_eval(where).values())


def strict_patterns(config: dict) -> "list[str]":
    """The module patterns of the overrides that turn on every one of :data:`STRICT_FLAGS`."""
    out = []
    for override in config.get("overrides", []):
        if all(override.get(flag) is True for flag in STRICT_FLAGS):
            modules = override["module"]
            out += [modules] if isinstance(modules, str) else list(modules)
    return out


def uncovered(modules: "set[str]", patterns: "list[str]") -> "list[str]":
    """The modules no pattern names (mypy's ``a.*`` also names ``a`` itself)."""
    return sorted(
        m for m in modules if not any(fnmatch.fnmatchcase(m, p) or (p.endswith(".*") and m == p[:-2]) for p in patterns)
    )


def test_every_module_of_the_public_face_is_checked_strictly():
    assert uncovered(face_modules(), strict_patterns(mypy_config())) == []


def test_the_check_sees_a_module_left_out_or_a_flag_off():
    config = {
        "overrides": [
            {"module": ["pytest_bpsperf", "pytest_bpsperf.runs.*"], **dict.fromkeys(STRICT_FLAGS, True)},
            {"module": "pytest_bpsperf.config.tricks", **dict.fromkeys(STRICT_FLAGS[1:], True)},
        ]
    }
    found = uncovered(
        {"pytest_bpsperf", "pytest_bpsperf.runs", "pytest_bpsperf.runs.spec", "pytest_bpsperf.config.tricks"},
        strict_patterns(config),
    )
    assert found == ["pytest_bpsperf.config.tricks"]  # its override lacks disallow_any_generics


def test_the_whole_package_is_checked():
    assert mypy_config()["files"] == ["pytest_bpsperf"]
