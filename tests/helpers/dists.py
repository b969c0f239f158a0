"""Installed distributions: tiny ones (only the metadata of a ``.dist-info``, as pip leaves it on a path),
and gluoncv as the roles import it."""

from __future__ import annotations

from pathlib import Path


def dist(
    where: Path, name: str, version: str, *, top_level: "str | None" = None, files: "tuple[str, ...]" = ()
) -> Path:
    """A tiny installed distribution: its .dist-info (METADATA, and top_level.txt or a RECORD)."""
    info = where / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    if top_level is not None:
        (info / "top_level.txt").write_text(top_level + "\n")
    (info / "RECORD").write_text("".join(f"{f},,\n" for f in files) + f"{info.name}/METADATA,,\n")
    return info


def gluoncv_or_skip():
    """gluoncv, imported as the roles import it (beside torch 2 too); the test skips where it does not import."""
    import pytest

    from pytest_bpsperf.remote.entry import import_gluoncv

    try:
        return import_gluoncv()
    except ImportError as exc:
        pytest.skip(f"gluoncv does not import: {exc}")


def zoo_or_skip() -> "frozenset[str]":
    """gluoncv's model names as the settings check reads them (without importing gluoncv); the test skips
    where gluoncv is not installed (no extra ``mxnet``: on Python 3.12 and later it installs nothing)."""
    import pytest

    from pytest_bpsperf.config.workload_spec import zoo_model_names

    names = zoo_model_names()
    if not names:
        pytest.skip("gluoncv is not installed: the settings check of a gluoncv model needs its zoo's names")
    return names
