"""The package's layout: no import circle, no import from a folder later in the import order, a true map;
and the tests' layout: tests/unit mirrors the package, tests/pytester holds only pytest sessions.

Imports are read from the source (every ``import``, also inside functions and
``if TYPE_CHECKING:``), so a type-only circle counts as a circle.
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

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


def upward_imports(graph: dict) -> "list[str]":
    """``module -> import`` for each import of ``graph`` from another folder (or root module) that is not
    earlier in the import order (scripts/module_table.py LEVELS); within a folder, and the package root, are free."""
    return sorted(
        f"{m} -> {d}"
        for m, deps in graph.items()
        for d in deps
        if unit_of(d) and unit_of(m) and unit_of(d) != unit_of(m) and LEVEL[unit_of(d)] >= LEVEL[unit_of(m)]
    )


def test_no_module_imports_from_a_folder_later_in_the_import_order():
    assert upward_imports(GRAPH) == []


def test_the_layer_check_sees_an_upward_import():
    # stats is the bottom: its imports of the launcher and of remote (the same level) are reported; the
    # launcher's import of stats, an import within stats and one of the package root are not
    fake = {
        "pytest_bpsperf.stats.x": {
            "pytest_bpsperf.launch.launcher",
            "pytest_bpsperf.remote.roles",
            "pytest_bpsperf.stats.y",
            "pytest_bpsperf",
        },
        "pytest_bpsperf.launch.launcher": {"pytest_bpsperf.stats.x"},
    }
    assert upward_imports(fake) == [
        "pytest_bpsperf.stats.x -> pytest_bpsperf.launch.launcher",
        "pytest_bpsperf.stats.x -> pytest_bpsperf.remote.roles",
    ]


def test_remote_processes_import_nothing_of_the_driver_side():
    remote = {m: deps for m, deps in GRAPH.items() if unit_of(m) == "remote"}
    assert remote and all(unit_of(d) in ("", "remote") for deps in remote.values() for d in deps)


def test_the_package_root_imports_nothing():
    # every `python -m pytest_bpsperf.remote...` process imports it first: the public face's names are
    # imported on first use (module __getattr__), and only type checkers read the TYPE_CHECKING block
    tree = ast.parse((ROOT / "pytest_bpsperf" / "__init__.py").read_text())
    guarded = {
        id(n)
        for top in tree.body
        if isinstance(top, ast.If) and getattr(top.test, "id", "") == "TYPE_CHECKING"
        for n in ast.walk(top)
    }
    at_run_time = [
        n
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom))
        and id(n) not in guarded
        and (isinstance(n, ast.Import) or n.level or (n.module or "").startswith("pytest_bpsperf"))
    ]
    assert [ast.unparse(n) for n in at_run_time if not isinstance(n, ast.Import)] == []
    assert all(a.name in ("importlib",) for n in at_run_time if isinstance(n, ast.Import) for a in n.names)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_says_what_it_is(name):
    path, _ = MODULES[name]
    assert ast.get_docstring(ast.parse(path.read_text())), f"{path.relative_to(ROOT)} has no docstring"


def test_the_module_tables_are_written_from_the_docstrings():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "module_table.py"), "--check"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr


def test_a_stale_table_is_reported(tmp_path):
    text = f"# x\n{module_table.START}\n| old |\n{module_table.END}\nrest\n"
    new = module_table.spliced(text, module_table.folder_table(), "x.md")
    assert new != text and new.endswith(f"{module_table.END}\nrest\n") and "| `config/` |" in new


#: Functions allowed past LONGEST lines of code, each with its reason in its docstring.
LONG_WITH_A_REASON: "dict[str, str]" = {}
#: in ruff format's layout, which puts each argument of a call that does not fit on a line of its own:
#: the 60 lines of the compact layout before it are about 70 (the longest were split, not let through)
LONGEST = 70


def code_lines(node: ast.AST) -> int:
    """Lines of a function without its docstring."""
    lines = node.end_lineno - node.lineno + 1
    doc = (
        node.body[0]
        if node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(getattr(node.body[0], "value", None), ast.Constant)
        and isinstance(node.body[0].value.value, str)
        else None
    )
    return lines - (doc.end_lineno - doc.lineno + 1 if doc is not None else 0)


def test_no_function_is_longer_than_about_70_lines_of_code():
    long = sorted(
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({code_lines(node)} lines)"
        for path, _ in MODULES.values()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and code_lines(node) > LONGEST
        and node.name not in LONG_WITH_A_REASON
    )
    assert long == []


def test_the_length_check_counts_code_not_the_docstring():
    (fn,) = ast.parse('def f():\n    """Doc\n\n    more.\n    """\n    return 1\n').body
    assert code_lines(fn) == 2


# --- the tests mirror the code ---------------------------------------------------------------------

TESTS = ROOT / "tests"
#: The folder of tests/unit for tests of the repository as a whole (layout, docs, packaging, the CI
#: recipe...): named by what they check, as no module is theirs.
PROJECT = "project"


def misplaced_unit_tests(unit: Path, package: Path) -> "list[str]":
    """Test files under ``unit`` named after no module of the package folder they mirror.

    ``unit/<folder>/test_<module>.py`` tests ``<package>/<folder>/<module>.py`` and ``test_init.py`` its
    ``__init__.py``; ``unit/test_init.py`` tests the package's root; ``unit/project/`` is named freely.
    """
    found = []
    for path in sorted(unit.rglob("test_*.py")):
        folder = path.relative_to(unit).parts[:-1]
        if folder == (PROJECT,):
            continue
        module = path.stem[len("test_") :]
        target = package.joinpath(*folder, ("__init__" if module == "init" else module) + ".py")
        if len(folder) > 1 or not target.is_file():
            found.append(f"{path.relative_to(unit.parent.parent)}: no {target.relative_to(package.parent)}")
    return found


def test_every_unit_test_file_is_named_after_a_module_of_its_folder():
    assert misplaced_unit_tests(TESTS / "unit", ROOT / PACKAGE) == []


def test_the_mirror_check_sees_a_test_file_named_after_no_module(tmp_path):
    unit = tmp_path / "tests" / "unit"
    for name in (
        "stats/test_nothing.py",
        "stats/test_steady.py",
        "stats/test_init.py",
        "stats/more/test_steady.py",
        "plugin/test_options.py",
        "project/test_anything.py",
        "test_init.py",
        "test_stats.py",
    ):
        (unit / name).parent.mkdir(parents=True, exist_ok=True)
        (unit / name).write_text("")
    assert misplaced_unit_tests(unit, ROOT / PACKAGE) == [
        "tests/unit/stats/more/test_steady.py: no pytest_bpsperf/stats/more/steady.py",
        "tests/unit/stats/test_nothing.py: no pytest_bpsperf/stats/nothing.py",
        "tests/unit/test_stats.py: no pytest_bpsperf/stats.py",
    ]


def test_every_folder_of_unit_tests_is_a_package():
    # so that tests/unit/judge/test_bisect.py and tests/unit/cli/test_bisect.py are two modules
    folders = [TESTS / "unit"] + [p for p in (TESTS / "unit").rglob("*") if p.is_dir() and p.name != "__pycache__"]
    assert [str(f.relative_to(ROOT)) for f in folders if not (f / "__init__.py").is_file()] == []


#: What starts a pytest session: pytester's fixture (and the legacy testdir), and any fixture over it.
SESSION_FIXTURES = frozenset({"pytester", "testdir"})
SUBPROCESS = frozenset({"run", "Popen", "call", "check_call", "check_output"})


def _fixtures(tree: ast.Module) -> "dict[str, tuple[set[str], bool]]":
    """A module's fixtures: name -> (the fixtures it asks for, whether it is autouse)."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            marks = [ast.unparse(d) for d in node.decorator_list]
            if any("fixture" in m for m in marks):
                out[node.name] = ({a.arg for a in node.args.args}, any("autouse=True" in m for m in marks))
    return out


def starts_pytest(node: ast.AST) -> bool:
    """Whether code starts pytest itself: ``pytest.main``, or a subprocess whose arguments name pytest."""
    for call in ast.walk(node):
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Name)
        ):
            if (call.func.value.id, call.func.attr) == ("pytest", "main"):
                return True
            if call.func.value.id == "subprocess" and call.func.attr in SUBPROCESS:
                words = [c.value for c in ast.walk(call) if isinstance(c, ast.Constant) and isinstance(c.value, str)]
                if any(w == "pytest" or "pytest.main(" in w for w in words):
                    return True
    return False


def sessionless_tests(path: Path, shared: "dict[str, tuple[set[str], bool]]") -> "list[str]":
    """The tests of ``path`` that start no pytest session.

    A test starts one when a fixture it gets (its parameters, ``usefixtures``, autouse ones; each with the
    fixtures it asks for in turn, from ``shared`` or the module) is a session fixture, or when it, or a
    function of its module it calls, starts pytest itself.
    """
    tree = ast.parse(path.read_text())
    fixtures = {**shared, **_fixtures(tree)}
    sessions = set(SESSION_FIXTURES)
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    starting = {name for name, n in functions.items() if starts_pytest(n)}
    grew = True
    while grew:
        before = (len(sessions), len(starting))
        sessions |= {name for name, (asks, _) in fixtures.items() if asks & sessions or name in starting}
        starting |= {
            name
            for name, n in functions.items()
            if {c.func.id for c in ast.walk(n) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)} & starting
        }
        grew = (len(sessions), len(starting)) != before
    autouse = {name for name, (_, auto) in fixtures.items() if auto}
    found = []
    for name, node in functions.items():
        if not name.startswith("test"):
            continue
        used = (
            {a.arg for a in node.args.args}
            | autouse
            | {
                c.value
                for d in node.decorator_list
                if "usefixtures" in ast.unparse(d)
                for c in ast.walk(d)
                if isinstance(c, ast.Constant) and isinstance(c.value, str)
            }
        )
        if not used & sessions and name not in starting:
            found.append(f"{path.name}::{name}")
    return found


def _shared_fixtures() -> "dict[str, tuple[set[str], bool]]":
    out = {}
    for conftest in (TESTS / "conftest.py", TESTS / "pytester" / "conftest.py"):
        out.update(_fixtures(ast.parse(conftest.read_text())))
    return out


def test_every_test_in_pytester_starts_a_pytest_session():
    # what starts none is a unit test: it belongs to its module's file under tests/unit
    shared = _shared_fixtures()
    assert [t for path in sorted((TESTS / "pytester").glob("test_*.py")) for t in sessionless_tests(path, shared)] == []


def test_the_session_check_sees_a_test_that_starts_none(tmp_path):
    module = tmp_path / "test_fake.py"
    module.write_text(
        "import subprocess, sys\nimport pytest\n\n"
        "@pytest.fixture\ndef project(ourtester):\n    return ourtester\n\n"
        "def _run(where):\n    return subprocess.run([sys.executable, '-m', 'pytest'], cwd=where)\n\n"
        "def test_fed(results): pass\n"
        "def test_project(project): pass\n"
        "def test_plain_pytester(pytester): pass\n"
        "@pytest.mark.usefixtures('ourtester')\ndef test_marked(): pass\n"
        "def test_subprocess(tmp_path): _run(tmp_path)\n"
        "def test_main(tmp_path): subprocess.run([sys.executable, '-c', 'import pytest; pytest.main([])'])\n"
        "def test_adds(): assert 1 + 1 == 2\n"
        "def test_git(tmp_path): subprocess.run(['git', 'init', str(tmp_path)])\n"
        "def test_helper_fixture(tmp_path, monkeypatch): pass\n"
    )
    assert sessionless_tests(module, _shared_fixtures()) == [
        "test_fake.py::test_adds",
        "test_fake.py::test_git",
        "test_fake.py::test_helper_fixture",
    ]
