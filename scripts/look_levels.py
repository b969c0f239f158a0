"""Compute the per-look levels of the usual base-vs-head designs ahead: pytest_bpsperf/stats/look_levels.json.

A base-vs-head session needs the per-look level of its design (estimator, first
and last look, alpha); simulating it takes seconds (3.3 s for the defaults on a
fast runner). The file holds those of the usual designs, each the output of
:func:`pytest_bpsperf.stats.sequential.simulated_look_level` itself, so a session
reads the very number it would have simulated. ``tests/unit/stats/test_sequential.py``
checks the file against the simulation.

    .venv/bin/python scripts/look_levels.py --write   # minutes
    .venv/bin/python scripts/look_levels.py --check   # exit 1 where the file differs from the simulation (slow)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

from pytest_bpsperf.stats import rule
from pytest_bpsperf.stats.sequential import (
    DEFAULT_ESTIMATOR,
    LEVELS_FILE,
    MIN_PAIRS,
    level_key,
    simulated_look_level,
    simulation_design,
)

#: The designs shipped: the default estimator, first looks a repeats setting of 1 to 5 gives,
#: every max_pairs from the first look to 40; the noise check at the usual confidences, the tolerance checks.
FIRST_LOOKS = (MIN_PAIRS, 4, 5)
LAST_LOOK = 40
CONFIDENCES = (0.9, 0.95, 0.99, 0.999)


def alphas() -> "list[float]":
    """The one-sided levels the checks use, computed as :func:`paired_compare` computes them."""
    return [(1.0 - c) / 2.0 for c in CONFIDENCES] + [rule.TOLERANCE_LEVEL]


def designs() -> "list[tuple[str, int, int, float]]":
    return [
        (DEFAULT_ESTIMATOR, first, last, a)
        for first in FIRST_LOOKS
        for last in range(first + 1, LAST_LOOK + 1)
        for a in alphas()
    ]


def compute() -> "dict[str, float]":
    return {level_key(*d): simulated_look_level(d[1], d[2], d[3], d[0]) for d in designs()}


def main(argv: "list[str] | None" = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", action="store_true", help=f"write {LEVELS_FILE.name} (atomically)")
    g.add_argument("--check", action="store_true", help="exit 1 where the file differs from the simulation")
    args = p.parse_args(argv)
    levels = compute()
    if args.check:
        doc = json.loads(LEVELS_FILE.read_text(encoding="utf-8"))
        bad = sorted(k for k in levels if doc.get("levels", {}).get(k) != levels[k])
        if doc.get("design") != simulation_design() or bad or set(doc.get("levels", {})) != set(levels):
            print(f"{LEVELS_FILE} differs from the simulation ({len(bad)} levels): run --write", file=sys.stderr)
            return 1
        return 0
    doc = {
        "about": "per-look levels of the usual base-vs-head designs, scripts/look_levels.py --write",
        "design": simulation_design(),
        "levels": levels,
    }
    fd, tmp = tempfile.mkstemp(dir=LEVELS_FILE.parent, prefix=".look_levels.")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1, sort_keys=True)
        fh.write("\n")
    os.chmod(tmp, 0o644)  # package data: readable by all, as the other files of the package
    os.replace(tmp, LEVELS_FILE)
    print(f"wrote {len(levels)} levels to {LEVELS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
