"""The dependency floors pyproject.toml names."""

from __future__ import annotations

import re

from .paths import ROOT


def ray_floor() -> str:
    text = (ROOT / "pyproject.toml").read_text()
    (floor,) = re.findall(r'"ray>=([0-9.]+)', text)
    return floor
