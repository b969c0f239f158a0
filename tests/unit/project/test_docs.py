"""The docs site: generated pages are current, every page is in the nav, links resolve, it builds.

docs/configuration.md and docs/cli.md are written by scripts/reference_pages.py
from the option table and the parsers; a committed page that differs from what
the script writes now fails here (as tests/unit/project/test_layout.py does for
docs/modules.md). The MkDocs build itself (``--strict``) runs where MkDocs is
installed (``.ci/run`` makes ``.ci/tools``); elsewhere that test skips and says so.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers.paths import ROOT
from pytest_bpsperf.config.settings import OPTIONS, env_var, flag, ini_key, no_flag

DOCS = ROOT / "docs"
README = ROOT / "README.md"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference_pages = _load("reference_pages")
module_table = _load("module_table")


@pytest.mark.parametrize("page, make", reference_pages.PAGES, ids=[p for p, _ in reference_pages.PAGES])
def test_generated_reference_page_is_current(page: str, make):
    assert (ROOT / page).read_text() == make(), f"{page} is stale: run python scripts/reference_pages.py --write"


def test_a_usage_line_wraps_alike_on_every_python():
    # argparse before 3.13 ends the first line here with "--out" and starts the next with its "DIR"
    import argparse

    parser = argparse.ArgumentParser(prog="bpsperf report")
    parser.add_argument("--results", metavar="RESULTS_OF_THE_SESSION_TO_REPORT.json")
    parser.add_argument("--history", metavar="DIR")
    parser.add_argument("--out", metavar="DIR", required=True)
    parser.add_argument("--format", choices=("html", "md"))
    parser.add_argument("what")
    assert reference_pages._usage(parser).splitlines() == [
        "usage: bpsperf report [-h] [--results RESULTS_OF_THE_SESSION_TO_REPORT.json] [--history DIR]",
        "                      --out DIR [--format {html,md}]",
        "                      what",
    ]
    assert reference_pages._usage(argparse.ArgumentParser(prog="p")) == "usage: p [-h]"


def test_configuration_page_has_every_setting_with_all_its_spellings():
    text = (DOCS / "configuration.md").read_text()
    for opt in OPTIONS:
        section = text.split(f"\n## `{opt.name}`\n", 1)[1].split("\n## ", 1)[0]
        command_line = (
            f"`{flag(opt.name)}`, `{no_flag(opt.name)}`"
            if opt.switch  # flags without a value
            else f"`{flag(opt.name)}=VALUE`"
        )
        for spelling in (command_line, f"`{env_var(opt.name)}`", f"`{ini_key(opt.name)}`"):
            assert spelling in section, (opt.name, spelling)
        assert f"| accepted | {reference_pages._cell(opt.accepted)} |" in section
        assert ("session: not per test" in section) == (not opt.per_test)


def test_configuration_page_is_written_from_the_option_table_only():
    source = inspect.getsource(reference_pages.configuration_page)
    imported = [n for n in ast.walk(ast.parse(source)) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert [getattr(n, "module", None) for n in imported] == ["pytest_bpsperf.config.settings"]
    assert "open(" not in source and "read_text" not in source


@pytest.mark.parametrize("opt", OPTIONS, ids=[o.name for o in OPTIONS])
def test_every_default_reads_as_a_value(opt):
    from pytest_bpsperf.config.settings import default_text

    text = default_text(opt)
    assert text and text not in ("None", "0.0", "True", "False"), text
    assert not (text == "0" and "'auto'" in opt.accepted), "0 stands for auto here"


def test_cli_page_does_not_depend_on_the_terminal_width(monkeypatch: pytest.MonkeyPatch):
    wide = reference_pages.cli_page()
    monkeypatch.setenv("COLUMNS", "40")
    assert reference_pages.cli_page() == wide


def test_cli_page_has_every_command_and_pytest_flag():
    text = (DOCS / "cli.md").read_text()
    for command in (
        "compare",
        "check",
        "baselines list",
        "baselines show",
        "baselines record",
        "baselines prune",
        "history add",
        "history show",
        "report",
        "export",
    ):
        assert f" bpsperf {command}\n" in text, command
    for name in ("--bpsperf-json=PATH", "--bpsperf-update-baselines", "--bpsperf-list-tricks", "bpsperf_define_tricks"):
        assert f"`{name}`" in text
    assert "--bpsperf-steps" not in text.split("## The bpsperf command")[0].split("|---|---|", 1)[1]


def _nav_files(nav) -> "list[str]":
    out = []
    for entry in nav:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            out += _nav_files(value) if isinstance(value, list) else [value]
    return out


def _mkdocs_config() -> dict:
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text())


def test_every_page_is_in_the_nav_and_every_nav_entry_exists():
    config = _mkdocs_config()
    nav = _nav_files(config["nav"])
    excluded = set(config["exclude_docs"].split())
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")} - excluded
    assert sorted(nav) == sorted(pages)
    assert "modules.md" in nav and "configuration.md" in nav and "cli.md" in nav
    for required in ("tutorial.md", "method.md", "clusters.md", "backends.md", "faults.md", "ci.md"):
        assert required in nav


def _links(text: str) -> "list[str]":
    """Every link target of a Markdown text: inline ``[t](URL)`` and reference definitions ``[k]: URL``."""
    return re.findall(r"\]\(([^)\s]+)\)", text) + re.findall(r"^\[[^\]]+\]:\s*(\S+)", text, re.M)


def _project_urls() -> "dict[str, str]":
    tomllib = pytest.importorskip("tomllib")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]


def test_readme_links_are_absolute_and_go_to_files_of_the_repository():
    # README is the long description on a package index page, where a relative link resolves nowhere
    text = README.read_text()
    urls = _project_urls()
    base = urls["Source"].rstrip("/") + "/blob/main/"
    assert urls["Documentation"] == urls["Source"] + "/tree/main/docs"
    assert urls["Changelog"] == base + "CHANGELOG.md" and (ROOT / "CHANGELOG.md").exists()
    links = _links(text)
    assert len(links) >= 15
    for link in links:
        assert link.startswith(base), f"README link {link!r} is not absolute under {base}"
        path = link[len(base) :].split("#")[0]
        assert (ROOT / path).is_file(), f"README link {link!r}: no file {path} in the repository"
        assert path.startswith("docs/") or path == "LICENSE", link
    # every reference used is defined, and every definition used (a typo would print '[x][y]' as text)
    defined = {k.lower() for k in re.findall(r"^\[([^\]]+)\]:", text, re.M)}
    prose = re.sub(r"^\[[^\]]+\]:.*$", "", re.sub(r"```.*?```|`[^`]*`|<!--.*?-->", "", text, flags=re.S), flags=re.M)
    used = {(ref or label).lower() for label, ref in re.findall(r"\[([^\]]+)\](?:\[([^\]]*)\])?(?!\()", prose)}
    assert defined == used, (sorted(defined - used), sorted(used - defined))


def test_install_lines_name_forms_that_work_and_no_placeholder_host():
    for page in (README, DOCS / "install.md", DOCS / "tutorial.md", DOCS / "clusters.md"):
        text = page.read_text()
        assert "HOST/PATH" not in text and "git+https://" not in text, page.name
    install = (DOCS / "install.md").read_text()
    for form in (
        "pip install 'pytest_bpsperf-0.1.0-py3-none-any.whl[mxnet]'",
        "pip install './pytest-bpsperf[mxnet]'",
        "pip install 'pytest-bpsperf[mxnet] @ git+file:///",
    ):
        assert form in install and form in README.read_text(), form
    assert "not published yet" in install and "not published yet" in README.read_text()
    from pytest_bpsperf import __version__

    assert f"pytest_bpsperf-{__version__}-py3-none-any.whl" in install  # the wheel's name, as built


def test_readme_is_short_keeps_the_quick_start_and_its_links_resolve():
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    assert "```\nmake perf\nmake test\n```" in text
    for section in ("## Install", "## Quick start", "## A perf test", "## Gating a pull request"):
        assert section in text
    assert "[mxnet]" in text and "**Compatibility:**" in text and "-p no:bpsperf" in text
    # scripts/module_table.py keeps README's folder table: README has it, current
    assert module_table.spliced(text, module_table.folder_table(), "README.md") == text, (
        "README.md's folder table is stale: run python scripts/module_table.py --write"
    )


def test_docs_mention_how_to_turn_the_plugin_off():
    assert "-p no:bpsperf" in (DOCS / "install.md").read_text()


#: A test the docs cite: ``tests/<folder>/<file>.py``, with ``::name`` (``*`` ends a pattern); a lone
#: ```::name``` names a test of the file cited before it on the same line.
CITED = re.compile(r"(tests/(?:unit|pytester|e2e)/[\w/]+\.py)(?:::([\w*]+))?|`::([\w*]+)`")


def missing_citations(text: str) -> "list[str]":
    """The tests ``text`` cites that are not there: ``line N: path`` or ``line N: path::name``."""
    missing = []
    for number, line in enumerate(text.splitlines(), 1):
        path = None
        for match in CITED.finditer(line):
            path = match.group(1) or path
            name = match.group(2) or match.group(3)
            if path is None:
                continue
            file = ROOT / path
            tests = (
                {n.name for n in ast.parse(file.read_text()).body if isinstance(n, ast.FunctionDef)}
                if file.is_file()
                else set()
            )
            if not file.is_file():
                missing.append(f"line {number}: {path}")
            elif name and not any(t == name or (name.endswith("*") and t.startswith(name[:-1])) for t in tests):
                missing.append(f"line {number}: {path}::{name}")
    return missing


def _unreleased() -> str:
    """CHANGELOG.md's section of what is not released yet (a release's entries keep the paths of their day)."""
    text = (ROOT / "CHANGELOG.md").read_text()
    return text[text.index("## [Unreleased]") : text.index("\n## [", text.index("## [Unreleased]") + 1)]


def test_every_test_the_docs_cite_is_where_they_say():
    pages = {
        "README.md": README.read_text(),
        "CHANGELOG.md [Unreleased]": _unreleased(),
        **{f"docs/{p.name}": p.read_text() for p in sorted(DOCS.glob("*.md"))},
    }
    assert {page: found for page, text in pages.items() if (found := missing_citations(text))} == {}


def test_the_citation_check_sees_a_test_that_moved():
    text = (
        "`tests/unit/test_gone.py`; `tests/unit/project/test_docs.py::test_nope`, `::test_readme_*`\n"
        "`tests/unit/project/test_docs.py::test_the_citation_check_*`, `::test_every_default_reads_as_a_value`"
    )
    assert missing_citations(text) == [
        "line 1: tests/unit/test_gone.py",
        "line 1: tests/unit/project/test_docs.py::test_nope",
    ]


def _mkdocs() -> "str | None":
    local = ROOT / ".ci" / "tools" / "bin" / "mkdocs"
    return os.environ.get("BPSPERF_MKDOCS") or (str(local) if local.exists() else shutil.which("mkdocs"))


def test_the_site_builds_with_warnings_as_errors(tmp_path: Path):
    mkdocs = _mkdocs()
    if mkdocs is None:
        pytest.skip(
            "no mkdocs: .ci/run makes .ci/tools (python3 -m venv .ci/tools && .ci/tools/bin/pip install -r "
            "docs/requirements.txt)"
        )
    proc = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (tmp_path / "site" / "configuration" / "index.html").exists()
