"""The package's layout: no import circle, no import that runs back up the data flow, a true map.

Imports are read from the source (every ``import``, also inside functions and
``if TYPE_CHECKING:``), so a type-only circle counts as a circle.
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys

import pytest

from helpers.paths import ROOT

PACKAGE = "pytest_bpsperf"

_spec = importlib.util.spec_from_file_location("module_table", ROOT / "scripts" / "module_table.py")
module_table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(module_table)


def _modules() -> dict:
    """Dotted module name -> (path, is a package)."""
    out = {}
    for path in (ROOT / PACKAGE).rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


MODULES = _modules()


def imports_of(name: str) -> "set[str]":
    """The package modules ``name`` imports (a name imported from a package counts as that package)."""
    path, is_pkg = MODULES[name]
    here = name.split(".") if is_pkg else name.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            source = ".".join(base + ([node.module] if node.module else [])) if node.level else (node.module or "")
            if source == PACKAGE or source.startswith(PACKAGE + "."):
                out.update(f"{source}.{a.name}" if f"{source}.{a.name}" in MODULES else source for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in MODULES)
    out.discard(name)
    return out


GRAPH = {name: imports_of(name) for name in MODULES}


def circles(graph: dict) -> "list[list[str]]":
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict = {}
    low: dict = {}
    stack: list = []
    on_stack: set = set()
    found = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def unit_of(name: str) -> str:
    """The folder (``stats``) or root module (``plugin``) a module belongs to; '' for the package itself."""
    return name.split(".")[1] if "." in name else ""


LEVEL = {unit: k for k, level in enumerate(module_table.LEVELS) for unit in level}


def test_circle_finder_sees_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_package_has_no_import_circle():
    assert circles(GRAPH) == []


def test_every_folder_and_root_module_has_a_level():
    units = {unit_of(m) for m in MODULES} - {""}
    assert units == set(LEVEL), "scripts/module_table.py LEVELS must list every folder and root module"


def test_no_import_runs_back_up_the_data_flow():
    upward = sorted(f"{m} -> {d}" for m, deps in GRAPH.items() for d in deps
                    if unit_of(d) and unit_of(m) and unit_of(d) != unit_of(m) and LEVEL[unit_of(d)] >= LEVEL[unit_of(m)])
    assert upward == []


def test_the_layer_check_sees_an_upward_import():
    # stats is the bottom: an import of the launcher from there would be reported
    fake = {"pytest_bpsperf.stats.x": {"pytest_bpsperf.launch.launcher"}}
    upward = [f"{m} -> {d}" for m, deps in fake.items() for d in deps if LEVEL[unit_of(d)] >= LEVEL[unit_of(m)]]
    assert upward == ["pytest_bpsperf.stats.x -> pytest_bpsperf.launch.launcher"]


def test_remote_processes_import_nothing_of_the_driver_side():
    remote = {m: deps for m, deps in GRAPH.items() if unit_of(m) == "remote"}
    assert remote and all(unit_of(d) in ("", "remote") for deps in remote.values() for d in deps)


def test_the_package_root_imports_nothing():
    # every `python -m pytest_bpsperf.remote...` process imports it first: the public face's names are
    # imported on first use (module __getattr__), and only type checkers read the TYPE_CHECKING block
    tree = ast.parse((ROOT / "pytest_bpsperf" / "__init__.py").read_text())
    guarded = {id(n) for top in tree.body if isinstance(top, ast.If) and getattr(top.test, "id", "") == "TYPE_CHECKING"
               for n in ast.walk(top)}
    at_run_time = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in guarded
                   and (isinstance(n, ast.Import) or n.level or (n.module or "").startswith("pytest_bpsperf"))]
    assert [ast.unparse(n) for n in at_run_time if not isinstance(n, ast.Import)] == []
    assert all(a.name in ("importlib",) for n in at_run_time if isinstance(n, ast.Import) for a in n.names)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_says_what_it_is(name):
    path, _ = MODULES[name]
    assert ast.get_docstring(ast.parse(path.read_text())), f"{path.relative_to(ROOT)} has no docstring"


def test_the_module_tables_are_written_from_the_docstrings():
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "module_table.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_a_stale_table_is_reported(tmp_path):
    text = f"# x\n{module_table.START}\n| old |\n{module_table.END}\nrest\n"
    new = module_table.spliced(text, module_table.folder_table(), "x.md")
    assert new != text and new.endswith(f"{module_table.END}\nrest\n") and "| `config/` |" in new


#: Functions allowed past LONGEST lines of code, each with its reason in its docstring.
LONG_WITH_A_REASON: "dict[str, str]" = {}
LONGEST = 60


def code_lines(node: ast.AST) -> int:
    """Lines of a function without its docstring."""
    lines = node.end_lineno - node.lineno + 1
    doc = node.body[0] if node.body and isinstance(node.body[0], ast.Expr) and isinstance(
        getattr(node.body[0], "value", None), ast.Constant) and isinstance(node.body[0].value.value, str) else None
    return lines - (doc.end_lineno - doc.lineno + 1 if doc is not None else 0)


def test_no_function_is_longer_than_about_60_lines_of_code():
    long = sorted(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({code_lines(node)} lines)"
                  for path, _ in MODULES.values() for node in ast.walk(ast.parse(path.read_text()))
                  if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and code_lines(node) > LONGEST
                  and node.name not in LONG_WITH_A_REASON)
    assert long == []


def test_the_length_check_counts_code_not_the_docstring():
    (fn,) = ast.parse('def f():\n    """Doc\n\n    more.\n    """\n    return 1\n').body
    assert code_lines(fn) == 2
