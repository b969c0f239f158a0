"""What installs with the package: core dependencies, extras, the license.

The core dependencies are what the pytest process and the ``bpsperf`` command
import; MXNet, gluoncv and BytePS are imported only where roles run, and come
from the ``mxnet`` extra (CPU) or from the GPU node itself. Two distributions that
both provide the ``mxnet`` package are in ``tests/unit/remote/test_preflight.py``.
"""

from __future__ import annotations

import ast
import re
import sys

import pytest

from helpers.paths import ROOT

PACKAGE = ROOT / "pytest_bpsperf"

#: import name -> the distribution that provides it, for what the package imports
PROVIDER = {
    "pytest": "pytest",
    "_pytest": "pytest",
    "ray": "ray",
    "jsonschema": "jsonschema",
    "matplotlib": "matplotlib",
    "mxnet": "mxnet",
    "gluoncv": "gluoncv",
    "byteps": "byteps",
    "yaml": "pyyaml",
    "torch": "torch",
    "torchvision": "torchvision",
}
#: imported only by code that runs as (or probes for) a role, on the node that hosts it
ROLE_ONLY = {"mxnet", "gluoncv", "byteps", "torch", "torchvision"}


def _project() -> dict:
    tomllib = pytest.importorskip("tomllib")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _names(requirements: "list[str]") -> "set[str]":
    return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in requirements}


def _third_party_imports() -> "dict[str, set[str]]":
    """Top-level name -> the package modules (relative paths) that import it, in or out of functions."""
    stdlib = getattr(sys, "stdlib_module_names", None)
    if stdlib is None:
        pytest.skip("sys.stdlib_module_names needs Python 3.10")
    found: "dict[str, set[str]]" = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in stdlib and top not in ("__future__", "pytest_bpsperf"):
                    found.setdefault(top, set()).add(str(path.relative_to(PACKAGE)))
    return found


def test_core_dependencies_are_what_the_pytest_process_and_the_cli_import():
    imports = _third_party_imports()
    unknown = sorted(set(imports) - set(PROVIDER))
    assert not unknown, f"imported but not in PROVIDER (declare it, then add it here): {unknown}"
    core = _names(_project()["dependencies"])
    needed = {PROVIDER[name] for name in imports if name not in ROLE_ONLY}
    assert needed <= core, f"imported outside roles but not a core dependency: {sorted(needed - core)}"
    for name in ROLE_ONLY & set(imports):
        outside = sorted(m for m in imports[name] if not m.startswith(("remote/", "backends/")))
        assert not outside, f"{name} is imported outside role code (remote/, backends/): {outside}"


def _requirement_closure(requirements: "list[str]") -> "dict[str, object]":
    """The installed distributions that ``requirements`` bring, and theirs in turn (extras' own left out)."""
    from importlib import metadata

    from packaging.requirements import Requirement

    found: "dict[str, object]" = {}
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        name = req.name.lower().replace("_", "-")
        if name in found or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            pytest.fail(f"{name}, a dependency, is not installed here: make setup")
        found[name] = dist
        todo += [Requirement(r) for r in (dist.requires or [])]
    return found


def test_no_dependency_brings_a_pytest_plugin_into_the_users_sessions():
    # A pytest11 entry point is loaded into every session of the user, perf tests or none, and may print
    # (pytest-benchmark's header line did, when it was a dependency): only the plugin itself may have one.
    closure = _requirement_closure(_project()["dependencies"])
    assert {"pytest", "ray", "matplotlib", "jsonschema"} <= set(closure)
    plugins = {
        name: [ep.name for ep in dist.entry_points if ep.group == "pytest11"]  # type: ignore[attr-defined]
        for name, dist in closure.items()
    }
    assert {name: eps for name, eps in plugins.items() if eps} == {}


def test_the_mxnet_stack_is_an_extra_and_not_a_core_dependency():
    project = _project()
    core = _names(project["dependencies"])
    assert not core & {"mxnet", "numpy", "gluoncv", "byteps"}
    assert _names(project["optional-dependencies"]["mxnet"]) == {"mxnet", "numpy", "gluoncv"}
    extra = {r.split(";")[0].strip() for r in project["optional-dependencies"]["mxnet"]}
    assert {"mxnet==1.9.1", "numpy<1.24"} <= extra
    assert re.search(r'"ray>=[0-9.]+,<3"', (ROOT / "pyproject.toml").read_text()), (
        ".ci/run and tests/test_dependency_floors.py read the Ray floor in this spelling"
    )


def test_the_torch_stack_is_an_extra_and_python_312_and_313_are_declared():
    project = _project()
    assert not _names(project["dependencies"]) & {"torch", "torchvision"}
    assert _names(project["optional-dependencies"]["torch"]) == {"torch", "torchvision"}
    assert project["requires-python"] == ">=3.9,<3.14"
    for minor in range(9, 14):
        assert f"Programming Language :: Python :: 3.{minor}" in project["classifiers"]


def test_the_mxnet_extra_installs_nothing_where_mxnet_has_no_wheels():
    from packaging.requirements import Requirement

    for line in _project()["optional-dependencies"]["mxnet"]:
        marker = Requirement(line).marker
        assert marker is not None, f"{line}: MXNet 1.9.1 has wheels up to Python 3.11 only"
        assert marker.evaluate({"python_version": "3.11", "extra": "mxnet"}), line
        assert not marker.evaluate({"python_version": "3.12", "extra": "mxnet"}), line


def test_the_declared_pythons_are_3_9_to_3_13():
    from packaging.specifiers import SpecifierSet

    project = _project()
    supported = SpecifierSet(project["requires-python"])
    prefix = "Programming Language :: Python :: "
    declared = [c[len(prefix) :] for c in project["classifiers"] if c.startswith(prefix + "3.")]
    assert declared == [f"3.{minor}" for minor in range(9, 14)]
    assert all(v in supported for v in declared) and "3.8" not in supported and "3.14" not in supported


def test_the_jobs_extra_brings_rays_jobs_cli_at_the_plugins_ray_range():
    from importlib import metadata

    project = _project()
    (ray,) = [r for r in project["dependencies"] if _names([r]) == {"ray"}]
    assert project["optional-dependencies"]["jobs"] == [ray.replace("ray", "ray[default]", 1)]
    # 'default' is the extra of Ray's that brings the Jobs CLI and SDK (aiohttp among them)
    assert "default" in (metadata.metadata("ray").get_all("Provides-Extra") or [])
    assert any("aiohttp" in r and 'extra == "default"' in r for r in metadata.requires("ray") or [])
    jobs = (ROOT / "docs" / "clusters.md").read_text().split("## Ray Jobs", 1)[1].split("\n## ", 1)[0]
    assert "[jobs]" in jobs and "ray[default]" in jobs and "The machine that submits" in jobs
    assert "`pytest-bpsperf[jobs]`" in (ROOT / "docs" / "install.md").read_text()


def test_license_file_is_the_apache_license_the_metadata_names():
    project = _project()
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "END OF TERMS AND CONDITIONS" in text
