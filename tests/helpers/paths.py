"""Where things are in the checkout, whatever the folder of the test that asks."""

from __future__ import annotations

from pathlib import Path

#: The checkout's root (pyproject.toml, the package, scripts/, examples/).
ROOT = Path(__file__).resolve().parents[2]
#: Data files of the tests (recorded sessions).
DATA = ROOT / "tests" / "data"
#: Scripts and helper files run by path (floor_check.py, actionlint.cjs).
HELPERS = Path(__file__).resolve().parent
