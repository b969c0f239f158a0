"""Can this interpreter run the roles? Checked on a node before anything is timed.

``python -m pytest_bpsperf.remote.preflight --needs mxnet,gluoncv [--entry mod:fn --entry-path DIR]``

Imports what the roles of a run need (``mxnet``; ``gluoncv`` for the shipped
model; ``byteps.mxnet`` on BytePS workers; the BytePS server library, looked
up without importing it, since importing ``byteps.server`` starts a server;
the entry point's module and function), and the harness itself (this
package's workload, so an interpreter too old for it is found here, not in a
role). Where the roles use MXNet, it also asks the installed distributions'
metadata which of them provide the ``mxnet`` package: two (the CPU ``mxnet``
and a CUDA ``mxnet-cu112``) install their files over each other, and then
nobody knows which build is measured. Prints one JSON object: the interpreter, its Python and package
versions, where the entry module was found, and the problems (empty when it
can run the roles). :func:`check_interpreter` runs it under a given
interpreter with a role's import path; the driver calls it on this machine,
a Ray task on each node of a cluster.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import PurePosixPath
from typing import Sequence

from .environ import SIMULATION, TREE, pythonpath, scrub

#: What each kind of requirement means: how to check it (import, or look up a file).
KNOWN_NEEDS = ("mxnet", "gluoncv", "byteps.mxnet", "byteps.server", "torch", "torchvision")


#: The needs whose roles import MXNet (and so must find exactly one build of it).
USES_MXNET = ("mxnet", "gluoncv", "byteps.mxnet")

#: The newest Python that MXNet 1.9.1, its last release (and what BytePS's MXNet plugin builds against), has
#: wheels for: pyproject.toml's extra ``mxnet`` installs nothing on later ones.
MXNET_NEWEST_PYTHON = (3, 11)


def _canonical(name: str) -> str:
    return "-".join(name.replace("_", "-").replace(".", "-").lower().split("-"))


def _installed_files(dist: "importlib.metadata.Distribution") -> "list[PurePosixPath]":
    """The paths a distribution installed, as its ``RECORD`` lists them (else as ``dist.files`` does).

    Not ``dist.files`` first: from Python 3.12 it lists only the paths that exist now, and what a
    distribution claims to provide is then read differently on 3.9 (GPU nodes) than on 3.12.
    """
    record = dist.read_text("RECORD")
    if record is None:
        return [PurePosixPath(f.as_posix()) for f in dist.files or ()]
    return [PurePosixPath(row[0]) for row in csv.reader(record.splitlines()) if row and row[0]]


def _top_level(dist: "importlib.metadata.Distribution") -> "set[str]":
    """The top-level import names a distribution installs: its ``top_level.txt``, else its files."""
    text = dist.read_text("top_level.txt")
    if text is not None:
        return {line.strip() for line in text.splitlines() if line.strip()}
    names = set()
    for f in _installed_files(dist):
        first = f.parts[0] if f.parts else ""
        if first in ("", "..", "__pycache__") or first.endswith((".dist-info", ".egg-info", ".data")):
            continue
        names.add(first[: -len(".py")] if first.endswith(".py") else first)
    return names


def distributions_providing(package: str, path: "Sequence[str] | None" = None) -> "list[tuple[str, str, str]]":
    """``(name, version, location)`` of each installed distribution that provides ``package``.

    Read from the distributions' metadata (``importlib.metadata``) on ``path``
    (default: ``sys.path``), without importing anything. A distribution found
    twice (the same name in two directories) counts once, where it is found
    first: that copy shadows the other whole, its files are not mixed.
    """
    import importlib.metadata

    found: "dict[str, tuple[str, str, str]]" = {}
    dists = (
        importlib.metadata.distributions(path=list(path)) if path is not None else (importlib.metadata.distributions())
    )
    for dist in dists:
        name = dist.metadata["Name"] or ""
        if not name or _canonical(name) in found or package not in _top_level(dist):
            continue
        found[_canonical(name)] = (name, dist.version, str(dist.locate_file("")))
    return sorted(found.values(), key=lambda d: _canonical(d[0]))


def mxnet_conflict(path: "Sequence[str] | None" = None) -> "str | None":
    """Why this interpreter's MXNet is not one build: the distributions that all provide ``mxnet``; or None."""
    dists = distributions_providing("mxnet", path)
    if len(dists) < 2:
        return None
    listed = ", ".join(f"{name} {version} (in {where})" for name, version, where in dists)
    return (
        f"{len(dists)} MXNet distributions are installed, each providing the mxnet package: {listed}; "
        "they install their files over each other, so which build the roles would run is unknown. Keep "
        "one: pip uninstall the others (on GPU nodes, keep the CUDA build and install pytest-bpsperf "
        "without the [mxnet] extra)"
    )


def mxnet_missing_reason(version: "Sequence[int] | None" = None) -> "str | None":
    """Why this interpreter has no MXNet, where its Python is the reason: a Python newer than
    :data:`MXNET_NEWEST_PYTHON` (``version``, default ``sys.version_info``) on which ``mxnet`` is not
    installed (looked up without importing it); None otherwise (an MXNet built from source is the roles' to
    import). What a ``mxnet``, ``gluoncv`` or ``byteps.mxnet`` that does not import is explained with."""
    major, minor = tuple(sys.version_info if version is None else version)[:2]
    if (major, minor) <= MXNET_NEWEST_PYTHON:
        return None
    try:
        if importlib.util.find_spec("mxnet") is not None:
            return None
    except (ImportError, ValueError):  # an mxnet in sys.modules without a spec: there is one
        return None
    newest = ".".join(map(str, MXNET_NEWEST_PYTHON))
    return (
        f"MXNet 1.9.1 has no wheels for Python {major}.{minor} (the newest it has are for Python {newest}), so "
        f"there the extra [mxnet] installs nothing: use Python <= {newest} for backends mxnet and byteps, or "
        "--bpsperf-backend=torch"
    )


def _check_need(need: str) -> "str | None":
    if need == "byteps.server":
        if server_library():
            return None
        if os.environ.get(SIMULATION) and importlib.util.find_spec("byteps.server") is not None:
            return None  # a stand-in's server (tests/helpers/standin), which has no compiled library
        return "the BytePS server library (byteps/server/c_lib*.so) is not installed"
    try:
        if need == "gluoncv":
            from .entry import import_gluoncv

            import_gluoncv()  # as the workload imports it (beside torch too)
        else:
            importlib.import_module(need)
    except Exception as exc:  # noqa: BLE001 - any failure means the roles cannot run here
        problem = f"{need} does not import: {type(exc).__name__}: {exc}"
        reason = mxnet_missing_reason() if need in USES_MXNET else None
        return f"{problem} ({reason})" if reason else problem
    return None


def facts(needs: Sequence[str], entry: "str | None", entry_path: "str | None", data: "str | None" = None) -> dict:
    """What this interpreter has, and why it cannot run the roles (``problems``).

    ``data``: the ``.rec`` the workers read (checked here, on their node, with its ``.idx``).
    """
    from .provenance import software_versions

    problems = []
    try:
        importlib.import_module("pytest_bpsperf.remote.workload")
    except Exception as exc:  # noqa: BLE001
        problems.append(f"the harness (pytest_bpsperf.remote.workload) does not import: {type(exc).__name__}: {exc}")
    conflict = mxnet_conflict() if any(need in USES_MXNET for need in needs) else None
    if conflict:
        problems.append(conflict)
    for need in needs:
        problem = _check_need(need)
        if problem:
            problems.append(problem)
    entry_file = None
    if entry:
        module_name, _, function = entry.partition(":")
        if entry_path and entry_path not in sys.path:
            sys.path.insert(0, entry_path)
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # noqa: BLE001
            problems.append(
                f"entry point {entry}: module {module_name!r} does not import from "
                f"{entry_path or 'sys.path'}: {type(exc).__name__}: {exc}"
            )
        else:
            entry_file = getattr(module, "__file__", None)
            if not callable(getattr(module, function, None)):
                problems.append(
                    f"entry point {entry}: module {module_name!r} ({entry_file}) has no function {function!r}"
                )
    if data:
        idx = data[: -len(".rec")] + ".idx" if data.endswith(".rec") else data + ".idx"
        missing = [p for p in (data, idx) if not os.path.isfile(p)]
        if missing:
            problems.append(f"the data the workers read is not on this node: {', '.join(missing)} (setting 'data')")
    return {
        "executable": sys.executable,
        "python": platform.python_version(),
        "versions": software_versions(),
        "entry_file": entry_file,
        "problems": problems,
    }


def main(argv: "Sequence[str] | None" = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pytest_bpsperf.remote.preflight")
    p.add_argument("--needs", default="", help="comma-separated: " + ", ".join(KNOWN_NEEDS))
    p.add_argument("--entry", default=None)
    p.add_argument("--entry-path", default=None)
    p.add_argument("--data", default=None, help="a .rec the workers read (checked with its .idx)")
    args = p.parse_args(argv)
    needs = [n for n in args.needs.split(",") if n]
    print(json.dumps(facts(needs, args.entry, args.entry_path, args.data), sort_keys=True))
    return 0


def role_needs(backend: str, role: str, settings: object) -> "tuple[str, ...]":
    """What a role of ``backend`` imports (see :data:`KNOWN_NEEDS`); other backends' roles: the workload's."""
    entry = getattr(settings, "entry", None)
    if backend == "torch":  # workers only
        return ("torch",) if entry is not None else ("torch", "torchvision")
    if role == "worker":
        model = () if entry is not None else ("gluoncv",)
        return ("mxnet", "byteps.mxnet") + model if backend == "byteps" else ("mxnet",) + model
    if backend == "byteps":
        return ("byteps.server",)
    return ("mxnet",) if backend == "mxnet" else ()


class PreflightError(RuntimeError):
    """The interpreter cannot run the roles; the message names it, the node and what failed."""


def check_interpreter(
    python: "str | None",
    import_paths: Sequence[str],
    tree: "str | None",
    needs: Sequence[str],
    *,
    entry: "str | None" = None,
    entry_path: "str | None" = None,
    harness_dir: "str | None" = None,
    data: "str | None" = None,
    timeout: float = 300.0,
) -> dict:
    """Run the preflight under ``python`` (None: this one) with a role's import path; its facts.

    ``import_paths`` and ``entry_path`` may use ``TREE`` for ``tree`` (None: where
    Ray unpacked the shipped tree, the current directory). Raises
    :class:`PreflightError` when the interpreter cannot be run or cannot run the roles.
    """
    from .roles import harness_root

    root = tree if tree is not None else os.getcwd()
    # a directory of its own for the harness link, removed afterwards (on a node: under its temp dir)
    work = tempfile.mkdtemp(
        prefix="bpsperf-preflight-", dir=harness_dir if harness_dir and os.path.isdir(harness_dir) else None
    )
    try:
        return _check(
            python,
            [harness_root(work)] + [p.replace(TREE, root) for p in import_paths],
            root,
            needs,
            entry,
            entry_path,
            data,
            work,
            timeout,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _check(
    python: "str | None",
    paths: "list[str]",
    root: str,
    needs: Sequence[str],
    entry: "str | None",
    entry_path: "str | None",
    data: "str | None",
    work: str,
    timeout: float,
) -> dict:
    env = scrub(os.environ)
    env["PYTHONPATH"] = pythonpath(paths, env)
    argv = [python or sys.executable, "-m", "pytest_bpsperf.remote.preflight", "--needs", ",".join(needs)]
    if entry:
        argv += ["--entry", entry]
        if entry_path:
            argv += ["--entry-path", entry_path.replace(TREE, root)]
    if data:
        argv += ["--data", data]
    try:
        proc = _run_in_own_group(argv, env, work, timeout)
    except (OSError, subprocess.SubprocessError) as exc:
        raise PreflightError(f"interpreter {argv[0]} cannot be run: {exc}") from None
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-6:])
        raise PreflightError(f"interpreter {argv[0]} cannot run the harness (exit {proc.returncode}): {tail}")
    found = json.loads(lines[-1])
    if found.get("problems"):
        raise PreflightError(
            f"interpreter {found.get('executable') or argv[0]} cannot run the roles: " + "; ".join(found["problems"])
        )
    return found


def _run_in_own_group(argv: "list[str]", env: dict, cwd: str, timeout: float) -> "subprocess.CompletedProcess[str]":
    """Run ``argv`` as the leader of a process group of its own, and kill the whole group when it runs past
    ``timeout`` or this process is interrupted (Ctrl-C, SIGTERM): what the preflight started (an import
    that spawns helpers, a ps-lite node) dies with it. In its own group it gets no Ctrl-C from the
    terminal itself, so this is what ends it."""
    from .roles import kill_group

    proc = subprocess.Popen(
        argv,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        kill_group(proc.pid, grace=1.0)
        proc.communicate()
        raise
    kill_group(proc.pid, grace=1.0)  # what it left behind after it exited
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def server_library() -> "str | None":
    """Path of the installed BytePS server library (``byteps/server/c_lib*.so``), or None.

    Never imports ``byteps.server``: importing it starts a ps-lite node that
    blocks until the job ends. Looks the package up without running it.
    """
    import glob
    import importlib.util

    try:
        spec = importlib.util.find_spec("byteps")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        found = sorted(glob.glob(os.path.join(location, "server", "c_lib*.so")))
        if found:
            return found[0]
    return None


if __name__ == "__main__":
    sys.exit(main())
