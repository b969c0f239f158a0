"""JSON Schemas of the files this package reads and writes, and validation against them.

The schemas ship as package data (``pytest_bpsperf/schemas/*.schema.json``):
``baselines``, ``results`` (the ``--bpsperf-json`` document), ``history``
(one session's record) and ``cli`` (what ``bpsperf ... --json`` prints). Other
tools can validate the files with them too.
``jsonschema`` (installed with Ray) is imported only when validating.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any, Mapping

__all__ = ["KINDS", "SchemaError", "load_schema", "validate"]

#: The documents that have a schema.
KINDS = ("baselines", "results", "history", "cli")


class SchemaError(ValueError):
    """A document does not match its schema; the message names the file, the place and what is accepted."""


@lru_cache(maxsize=None)
def load_schema(kind: str) -> "dict[str, Any]":
    """The JSON Schema of ``kind`` (one of :data:`KINDS`)."""
    if kind not in KINDS:
        raise ValueError(f"no schema named {kind!r}; known: {', '.join(KINDS)}")
    text = resources.files("pytest_bpsperf").joinpath("schemas").joinpath(f"{kind}.schema.json").read_text("utf-8")
    return json.loads(text)


def _where(path: "Any") -> str:
    parts = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
    return "$" + parts


def validate(document: Mapping[str, Any], kind: str, source: str) -> None:
    """Check ``document`` against the ``kind`` schema; raise :class:`SchemaError` naming ``source``.

    Every problem is listed (up to five), each with its place in the document
    (e.g. ``$.tests[0].img_per_sec``), the value found and what the schema
    accepts.
    """
    import jsonschema

    validator_cls = jsonschema.validators.validator_for(load_schema(kind))
    validator = validator_cls(load_schema(kind))
    errors = sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))
    if not errors:
        return
    lines = []
    for err in errors[:5]:
        found = json.dumps(err.instance, default=str)
        if len(found) > 80:
            found = found[:77] + "..."
        lines.append(
            f"  {_where(err.absolute_path)} = {found}: "
            f"{err.message if len(err.message) < 160 else err.message[:157] + '...'}"
        )
    more = f"\n  ... and {len(errors) - 5} more" if len(errors) > 5 else ""
    raise SchemaError(
        f"{source} is not a valid bpsperf {kind} file (schema pytest_bpsperf/schemas/{kind}.schema.json):\n"
        + "\n".join(lines)
        + more
    )
