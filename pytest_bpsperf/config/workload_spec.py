"""What the workers train: the workload settings' values and the checks run before anything starts.

The settings ``timing``, ``data``, ``data_threads``, ``dtype``, ``entry`` and
``launch`` parse here (:mod:`.settings` declares them), and
:func:`check_workload` rejects, before Ray and the roles start, what would
only fail minutes later on a node: a model name gluoncv does not have, a
missing ``.rec``/``.idx``, an entry point that does not import, timed windows
that do not fit the steps. What a backend cannot run (float16 on CPU workers,
``bpslaunch`` without BytePS) is the backend's own check
(:func:`pytest_bpsperf.backends.check_settings`).

Plain Python: no pytest; MXNet and gluoncv are never imported here (gluoncv's
import costs seconds, because it imports MXNet).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import subprocess
import sys
from functools import lru_cache
from typing import Sequence

from .parsers import SYNTHETIC, EntryPoint
from .settings import Settings


class WorkloadSpecError(ValueError):
    """A workload setting names something that cannot run; the message says which, where from, and why."""


# --- value parsers (the Option pattern of settings.py) ------------------------------


def data_record_paths(rec: str) -> "tuple[str, str]":
    """The ``.rec`` and the ``.idx`` beside it (what ImageRecordIter reads)."""
    return rec, rec[: -len(".rec")] + ".idx"


# --- gluoncv's model names, without importing gluoncv ------------------------------


@lru_cache(maxsize=None)
def zoo_model_names() -> "frozenset[str]":
    """The names of gluoncv's model zoo.

    Read from the installed ``gluoncv/model_zoo/model_zoo.py`` (the keys of its
    ``_models`` dict literal, which ``get_model_list()`` returns) without running
    it: importing gluoncv imports MXNet and costs seconds at every pytest start.
    If the source does not have that shape (another gluoncv version), ask
    ``get_model_list()`` in a subprocess, once. Empty when gluoncv is absent.
    """
    spec = importlib.util.find_spec("gluoncv")
    if spec is None or not spec.submodule_search_locations:
        return frozenset()
    for location in spec.submodule_search_locations:
        path = os.path.join(location, "model_zoo", "model_zoo.py")
        try:
            with open(path, encoding="utf-8") as fh:
                tree = ast.parse(fh.read(), path)
        except (OSError, SyntaxError):
            continue
        for node in tree.body:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Dict)
                and any(isinstance(t, ast.Name) and t.id == "_models" for t in node.targets)
            ):
                names = {k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
                if names:
                    return frozenset(names)
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from pytest_bpsperf.remote.entry import import_gluoncv; import_gluoncv(); "
            "from gluoncv.model_zoo import get_model_list; print('\\n'.join(get_model_list()))",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        universal_newlines=True,
        timeout=300,
    )
    return frozenset(proc.stdout.split()) if proc.returncode == 0 else frozenset()


def check_model(name: str, origin: str) -> None:
    """Raise :class:`WorkloadSpecError` unless gluoncv's zoo has ``name`` (it lowercases names too)."""
    names = zoo_model_names()
    if not names:
        from ..remote.preflight import mxnet_missing_reason

        reason = mxnet_missing_reason()  # on Python 3.12 and later the extra installs neither
        raise WorkloadSpecError(
            f"setting 'model' ({name!r}, from {origin}) needs gluoncv, which is not installed"
            + (f", and neither is MXNet: {reason}" if reason else "")
        )
    if name.lower() not in names:
        close = sorted(n for n in names if n.startswith(name.lower()[:6]))[:8]
        hint = f"; similar: {', '.join(close)}" if close else ""
        raise WorkloadSpecError(
            f"invalid value {name!r} for setting 'model' from {origin}: not in gluoncv's model zoo "
            f"({len(names)} names, e.g. resnet50_v2, mobilenet1.0){hint}"
        )


def check_data(path: str, origin: str) -> None:
    """Raise :class:`WorkloadSpecError` unless the ``.rec`` and its ``.idx`` exist."""
    rec, idx = data_record_paths(path)
    for what, p in (("record file", rec), ("index file (.idx beside the .rec)", idx)):
        if not os.path.isfile(p):
            raise WorkloadSpecError(
                f"invalid value {path!r} for setting 'data' from {origin}: the {what} {p} does not exist; "
                "accepted: 'synthetic' or an ImageNet-style .rec with its .idx (im2rec.py makes both)"
            )


def resolve_entry(entry: EntryPoint, origin: str, search: Sequence[str] = ()) -> EntryPoint:
    """Import ``entry`` here (``search`` dirs first on ``sys.path``); the entry with its import directory.

    Raises :class:`WorkloadSpecError` when the module does not import or has no
    such callable: the same import then happens in every worker.
    """
    added = [d for d in search if d and d not in sys.path]
    sys.path[:0] = added
    try:
        module = importlib.import_module(entry.module)
    except Exception as exc:  # noqa: BLE001 - any import failure is the user's to fix
        raise WorkloadSpecError(
            f"invalid value {entry.spec!r} for setting 'entry' from {origin}: module {entry.module!r} does not "
            f"import ({type(exc).__name__}: {exc}); searched the rootdir and sys.path"
        ) from None
    finally:
        for d in added:
            if d in sys.path:
                sys.path.remove(d)
    function = getattr(module, entry.function, None)
    if not callable(function):
        raise WorkloadSpecError(
            f"invalid value {entry.spec!r} for setting 'entry' from {origin}: module {entry.module!r} "
            f"({getattr(module, '__file__', '?')}) has no function {entry.function!r}"
        )
    origin_file = getattr(module, "__file__", None)
    if not origin_file:
        return EntryPoint(entry.module, entry.function, None)
    root = os.path.dirname(os.path.abspath(origin_file))
    depth = entry.module.count(".") + (1 if os.path.basename(origin_file).startswith("__init__.") else 0)
    for _ in range(depth):
        root = os.path.dirname(root)
    return EntryPoint(entry.module, entry.function, root)


def check_workload(settings: "Settings", *, search: Sequence[str] = (), framework: str = "mxnet") -> "Settings":
    """Check what the workers will train before anything starts; the settings with the entry resolved.

    ``search`` are the directories an entry point may import from (the rootdir).
    What the backend cannot run on this machine's GPUs (float16 on CPU workers) is
    :func:`pytest_bpsperf.backends.check_settings`. ``framework``: what the backend trains with;
    gluoncv's zoo names are checked for ``mxnet`` only. Raises :class:`WorkloadSpecError`.
    """
    origins = settings.origins
    if settings.entry is not None:
        if settings.entry.path is None:
            settings = settings.with_values(entry=resolve_entry(settings.entry, origins.get("entry", "?"), search))
    elif framework == "mxnet":  # torchvision's names are checked by the torch workload (importing it costs seconds)
        check_model(settings.model, origins.get("model", "default"))
    if settings.data != SYNTHETIC:
        check_data(settings.data, origins.get("data", "default"))
    if settings.sync_every > 1 and settings.timing == "breakdown":
        raise WorkloadSpecError(
            f"invalid value {settings.sync_every} for setting 'sync_every' from {origins.get('sync_every')}: "
            f"timing=breakdown (from {origins.get('timing')}) syncs inside every step to split it; accepted "
            "with breakdown: 1 (or timing=overlapped)"
        )
    if settings.steps < 3 * settings.sync_every:
        raise WorkloadSpecError(
            f"invalid value {settings.sync_every} for setting 'sync_every' from {origins.get('sync_every')}: "
            f"{settings.steps} steps (from {origins.get('steps')}) make fewer than 3 timed windows of "
            f"{settings.sync_every}; accepted: at most {max(1, settings.steps // 3)}, or more steps"
        )
    return settings
