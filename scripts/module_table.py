"""The package's map, written from its own docstrings: README's folder table and docs/modules.md.

    python scripts/module_table.py           # print both tables
    python scripts/module_table.py --write   # rewrite them in README.md and docs/modules.md
    python scripts/module_table.py --check   # exit 1 when either file differs (a test runs this)

The folders are listed in import order, from the bottom of the
import graph up (:data:`LEVELS`): a module imports only from folders listed
before its own (``tests/unit/project/test_layout.py`` checks that too).
"""

from __future__ import annotations

import argparse
import ast
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pytest_bpsperf"

#: The package's units from the bottom of the import graph up. A unit is a folder
#: (``stats``) or a module at the root (``plugin``); units of one level import
#: nothing of each other, and any unit imports only from the levels before it.
LEVELS: "tuple[tuple[str, ...], ...]" = (
    ("stats", "remote"),
    ("store", "vcs"),
    ("config",),
    ("runs",),
    ("backends", "judge"),
    ("planning", "report"),
    ("launch", "cli"),
    ("plugin",),
)

START = "<!-- module-table:start (scripts/module_table.py writes this table from the docstrings) -->"
END = "<!-- module-table:end -->"


def summary(path: pathlib.Path) -> str:
    """The first sentence of a module's docstring, on one line."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    first = " ".join(doc.split("\n\n")[0].split())
    first = re.sub(r":(?:class|func|mod|meth|data):`~?\.?([^`]+)`", r"`\1`", first).replace("``", "`")
    if not first:
        raise SystemExit(f"{path.relative_to(ROOT)} has no docstring: the module table is written from them")
    return first.replace("|", "\\|")


def units() -> "list[tuple[str, pathlib.Path, list[pathlib.Path]]]":
    """(unit, its docstring file, its modules) in the order of :data:`LEVELS`."""
    out = []
    for level in LEVELS:
        for name in level:
            folder = PACKAGE / name
            if folder.is_dir():
                modules = sorted(p for p in folder.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
                out.append((name + "/", folder / "__init__.py", modules))
            else:
                out.append((name + ".py", PACKAGE / f"{name}.py", []))
    return out


def folder_table() -> str:
    """README's table: one row per folder or root module, bottom of the import graph first."""
    rows = ["| folder | what it holds |", "|---|---|"]
    rows += [f"| `{unit}` | {summary(doc)} |" for unit, doc, _ in units()]
    return "\n".join(rows)


def module_table() -> str:
    """docs/modules.md's table: every module under its folder."""
    rows = ["| module | what it is |", "|---|---|"]
    for unit, doc, modules in units():
        rows.append(f"| **`{unit}`** | {summary(doc)} |")
        rows += [f"| `{unit}{m.name}` | {summary(m)} |" for m in modules]
    return "\n".join(rows)


def spliced(text: str, table: str, where: str) -> str:
    """``text`` with the table between the markers replaced by ``table``."""
    if START not in text or END not in text:
        raise SystemExit(f"{where} lacks the markers {START!r} ... {END!r}")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{table}\n{END}{tail}"


TARGETS = (("README.md", folder_table), ("docs/modules.md", module_table))


def main(argv: "list[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the tables in README.md and docs/modules.md")
    parser.add_argument("--check", action="store_true", help="exit 1 when a file's table is not the generated one")
    args = parser.parse_args(argv)
    stale = []
    for name, make in TARGETS:
        path = ROOT / name
        text = path.read_text()
        new = spliced(text, make(), name)
        if args.write and new != text:
            path.write_text(new)
        elif args.check and new != text:
            stale.append(name)
        elif not (args.write or args.check):
            print(make(), end="\n\n")
    if stale:
        print(f"stale module table in {', '.join(stale)}: run python scripts/module_table.py --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
