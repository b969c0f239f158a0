"""The public face: ``pytest_bpsperf`` exports, with ``__all__``, what a user or a backend author
needs; each name documented; importing the package imports none of the plugin's modules; the
example backend uses nothing else; the docs page names every one."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys

import pytest

import pytest_bpsperf
from helpers.paths import ROOT

PUBLIC = [n for n in pytest_bpsperf.__all__ if n != "__version__"]


def test_the_face_holds_what_the_brief_of_a_backend_and_a_test_needs():
    needed = {
        "RunResult",
        "TrainContext",
        "Trick",
        "Backend",
        "BackendBase",
        "WorkerProcess",
        "register",
        "PYTHON",
        "RECORDS",
        "RunSpec",
        "RunOutput",
        "WorkerRecords",
    }
    assert needed <= set(pytest_bpsperf.__all__)
    assert len(set(pytest_bpsperf.__all__)) == len(pytest_bpsperf.__all__)


@pytest.mark.parametrize("name", PUBLIC)
def test_each_public_name_resolves_to_its_definition_and_is_documented(name):
    value = getattr(pytest_bpsperf, name)
    assert name in dir(pytest_bpsperf)
    if inspect.isclass(value) or inspect.isfunction(value):
        assert value.__name__ == name and (value.__doc__ or "").strip(), name
        assert value.__module__.startswith("pytest_bpsperf.")
    else:  # the placeholders
        assert isinstance(value, str) and value.startswith("{")


def test_an_unknown_name_is_an_attribute_error_that_lists_the_public_ones():
    with pytest.raises(AttributeError, match="no attribute 'Runner'.*RunResult"):
        pytest_bpsperf.Runner  # noqa: B018
    assert not hasattr(pytest_bpsperf, "Runner")


def test_importing_the_package_imports_none_of_its_modules():
    # a role process imports pytest_bpsperf too: the face must cost nothing until a name is used
    code = (
        "import sys, pytest_bpsperf; print(sorted(m for m in sys.modules if m.startswith('pytest_bpsperf.')));"
        "pytest_bpsperf.PYTHON; print(sorted(m for m in sys.modules if m.startswith('pytest_bpsperf.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    before, after = out.splitlines()
    assert before == "[]"
    assert "pytest_bpsperf.remote.environ" in after and "pytest_bpsperf.plugin" not in after


def test_the_type_checkers_view_names_the_same_definitions():
    tree = ast.parse((ROOT / "pytest_bpsperf" / "__init__.py").read_text())
    guarded = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    seen = {}
    for node in guarded.body:
        for alias in node.names:
            seen[alias.name] = "pytest_bpsperf." + node.module
    assert seen == pytest_bpsperf._WHERE
    assert set(pytest_bpsperf.__all__) == {"__version__", *pytest_bpsperf._WHERE}  # one list, written out for linters


def test_the_example_backend_imports_only_the_public_face():
    tree = ast.parse((ROOT / "examples" / "toy_backend.py").read_text())
    imported = [(n.module, [a.name for a in n.names]) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [(a.name, []) for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    ours = [(m, names) for m, names in imported if m and m.startswith("pytest_bpsperf")]
    assert ours and all(m == "pytest_bpsperf" for m, _ in ours), ours
    assert all(set(names) <= set(pytest_bpsperf.__all__) for _, names in ours)


def test_the_writing_a_backend_page_names_every_public_name_and_the_records_events():
    page = (ROOT / "docs" / "writing-a-backend.md").read_text()
    assert all(f"`{name}`" in page for name in PUBLIC), [n for n in PUBLIC if f"`{n}`" not in page]
    for event in ("start", "step", "diagnostic", "end"):
        assert f"| `{event}` |" in page
    # every method of the protocol is in its table
    from pytest_bpsperf import Backend

    members = [m for m in vars(Backend) if not m.startswith("_")] + list(Backend.__annotations__)
    assert all(f"`{m}" in page for m in members), [m for m in members if f"`{m}" not in page]
