"""What an inner session printed, without the paths of the machine it ran on.

With ``-v`` pytest prints the interpreter's path, and every header names the
rootdir: a checkout in a directory named after the project (``.../pytest-bpsperf/.venv``),
a user named ``ray`` (``/tmp/pytest-of-ray/...``) or a ``TMPDIR`` inside the
checkout put the plugin's words into lines the plugin never wrote. A check of
what the plugin says reads the lines with those paths taken out.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Iterable

from helpers.paths import ROOT


def without_paths(lines: Iterable[str], *paths: "str | Path") -> "list[str]":
    """``lines`` with each of ``paths``, the interpreter's and the checkout's (as given and resolved) replaced
    by ``<path>``; the longest first, so that a path inside another goes with it."""
    found = {str(p) for p in (*paths, sys.executable, ROOT)}
    found |= {os.path.realpath(p) for p in found}
    ordered = sorted((p for p in found if p), key=len, reverse=True)
    out = []
    for line in lines:
        for path in ordered:
            line = line.replace(path, "<path>")
        out.append(line)
    return out
