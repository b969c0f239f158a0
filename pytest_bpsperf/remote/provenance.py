"""What produced a measurement: when, at which commit, with which software (no package is imported)."""

from __future__ import annotations

import os
import platform
import re
import subprocess
from datetime import datetime, timezone
from importlib import metadata
from typing import Dict, Mapping, Optional, Tuple, Union

__all__ = ["current_commit", "software_versions", "utc_now_iso"]


def utc_now_iso() -> str:
    """Current time as ISO 8601 UTC with seconds, e.g. ``2024-05-01T12:00:00Z``."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _distribution_version(names: Tuple[str, ...]) -> str:
    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return "not installed"


# MXNet ships under build-specific distribution names (mxnet-cu112,
# mxnet-mkl, ...); listed here so that no package gets imported to find out.
_PACKAGES: Dict[str, Tuple[str, ...]] = {
    "mxnet": (
        "mxnet",
        "mxnet-mkl",
        "mxnet-native",
        "mxnet-cu123",
        "mxnet-cu122",
        "mxnet-cu121",
        "mxnet-cu120",
        "mxnet-cu118",
        "mxnet-cu117",
        "mxnet-cu116",
        "mxnet-cu113",
        "mxnet-cu112",
        "mxnet-cu111",
        "mxnet-cu110",
        "mxnet-cu102",
        "mxnet-cu101",
        "mxnet-cu100",
    ),
    "byteps": ("byteps",),
    "ray": ("ray",),
    "gluoncv": ("gluoncv",),
    "torch": ("torch",),
    "torchvision": ("torchvision",),
}


def software_versions() -> Dict[str, str]:
    """Versions of Python and of mxnet, byteps, ray, gluoncv, torch and torchvision ("not installed" when absent).

    Read from installed package metadata; the packages are not imported,
    which would take seconds and could fail for reasons unrelated to a version.
    """
    versions = {"python": platform.python_version()}
    for key, names in _PACKAGES.items():
        versions[key] = _distribution_version(names)
    return versions


#: Packages named only where installed when versions are shown (an MXNet session has no torch, and says nothing of it).
_OPTIONAL_SHOWN = ("torch", "torchvision")


def describe_versions(versions: Mapping[str, str]) -> str:
    """``python 3.11.7, mxnet 1.9.1, ...``: the versions an arm or a report shows, in a fixed order."""
    keys = ("python", "mxnet", "byteps", "gluoncv", "torch", "torchvision", "ray")
    return ", ".join(
        f"{k} {versions[k]}"
        for k in keys
        if k in versions and not (k in _OPTIONAL_SHOWN and versions[k] == "not installed")
    )


def working_tree_dirty(cwd: Union[str, os.PathLike, None] = None) -> Optional[bool]:
    """Whether tracked files differ from ``HEAD`` in ``cwd`` (``git status --porcelain``, untracked files
    left out); None outside a repository, without git, or on timeout."""
    try:
        proc = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=None if cwd is None else str(cwd),
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return bool(proc.stdout.strip()) if proc.returncode == 0 else None


def current_commit(cwd: Union[str, os.PathLike, None] = None) -> Optional[str]:
    """``git rev-parse HEAD`` in ``cwd``; None outside a repository, without git, or on timeout."""
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=None if cwd is None else str(cwd),
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    sha = proc.stdout.strip()
    if proc.returncode != 0 or not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", sha):
        return None
    return sha
