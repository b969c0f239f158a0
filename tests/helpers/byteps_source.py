"""BytePS's own source, read from the mirror of its repository at the release the package follows.

The tests that cite a line of BytePS to say why a rule of the package holds read it here; where the
mirror is absent (as in CI) they skip and say so.
"""

from __future__ import annotations

import os
import subprocess

import pytest

MIRROR = "/work/.mirror/bytedance+byteps/repo"
TAG = "v0.2.5.post15"


def byteps_source(path: str) -> str:
    """A file of BytePS 0.2.5.post15 from the mirror of its repository (the test skips without it, as in CI)."""
    if not os.path.isdir(MIRROR):
        pytest.skip(f"BytePS's source is not mirrored here ({MIRROR}): the citation cannot be read")
    proc = subprocess.run(["git", "-C", MIRROR, "show", f"{TAG}:{path}"], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"the mirror has no {TAG}:{path}: {proc.stderr.strip()}")
    return proc.stdout
