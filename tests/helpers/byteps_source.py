"""BytePS's own source at the release the package follows, read out of its source distribution.

The tests that cite a line of BytePS to say why a rule of the package holds read it here. The sdist is
the one ``scripts/install-byteps-server.sh`` builds the server from: it keeps it in ``.deps/`` of the
checkout (gitignored), its sha256 checked against the one PyPI publishes, which the script pins. ``make
setup`` runs the script, and ``make test`` runs ``make setup``: without the file a test that reads it fails
and says how to get it. It does not skip, because a skip is how these citations went unchecked in CI.
"""

from __future__ import annotations

import functools
import hashlib
import io
import re
import tarfile
from pathlib import Path

import pytest

from helpers.paths import ROOT

#: The script that downloads, checks and keeps the sdist; the version and digest are its own.
INSTALL_SCRIPT = ROOT / "scripts" / "install-byteps-server.sh"


def _pinned(name: str) -> str:
    found = re.search(rf'^{name}="([^"]+)"$', INSTALL_SCRIPT.read_text(), re.M)
    assert found, f"{INSTALL_SCRIPT.name} no longer pins {name}"
    return found.group(1)


#: BytePS's release, as the install script pins it.
VERSION = _pinned("BYTEPS_VERSION")
#: The sdist's sha256 (PyPI's), as the install script pins it.
SHA256 = _pinned("BYTEPS_SHA256")
#: Where the install script keeps the sdist.
SDIST = ROOT / ".deps" / f"byteps-{VERSION}.tar.gz"


@functools.lru_cache(maxsize=None)
def _files() -> "dict[str, bytes]":
    """Every file of the sdist, by its path in BytePS's repository (``byteps/common/global.cc``)."""
    where = SDIST.relative_to(ROOT)
    if not SDIST.is_file():
        pytest.fail(
            f"BytePS {VERSION}'s sdist is not at {where}: `make setup` keeps it there "
            f"({INSTALL_SCRIPT.relative_to(ROOT)}; BYTEPS_SDIST=PATH names one already downloaded)",
            pytrace=False,
        )
    data = SDIST.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != SHA256:
        pytest.fail(f"{where} has sha256 {digest}, not PyPI's {SHA256}: remove it and run `make setup`", pytrace=False)
    prefix = f"byteps-{VERSION}/"
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return {
            member.name[len(prefix) :]: tar.extractfile(member).read()
            for member in tar
            if member.isfile() and member.name.startswith(prefix)
        }


def _bytes(path: str) -> bytes:
    files = _files()
    if path not in files:
        pytest.fail(f"BytePS {VERSION}'s sdist has no {path}", pytrace=False)
    return files[path]


def byteps_source(path: str) -> str:
    """The text of ``path`` (``byteps/common/global.cc``, ``launcher/launch.py``) in BytePS 0.2.5.post15's sdist."""
    return _bytes(path).decode()


def byteps_file(path: str, into: Path) -> Path:
    """``path`` of BytePS 0.2.5.post15's sdist written into the folder ``into``, under its own name."""
    out = into / Path(path).name
    out.write_bytes(_bytes(path))
    return out
