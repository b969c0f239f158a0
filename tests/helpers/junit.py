"""Reading the perf tests' JUnit properties back from a file pytest wrote (``--junitxml``)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

#: What the xunit2 schema allows inside a ``<testcase>`` (no ``<properties>``).
XUNIT2_TESTCASE_CHILDREN = {"skipped", "error", "failure", "system-out", "system-err"}


def suite_properties(path: "str | Path") -> "dict[str, dict[str, str]]":
    """Node id -> {name: value} of the suite-level properties named ``NODEID::NAME`` (xunit2)."""
    out: "dict[str, dict[str, str]]" = {}
    for suite in ET.parse(path).getroot().iter("testsuite"):
        for props in suite.findall("properties"):
            for prop in props.findall("property"):
                nodeid, sep, name = prop.get("name", "").rpartition("::")
                if sep:
                    out.setdefault(nodeid, {})[name] = prop.get("value", "")
    return out


def case_properties(path: "str | Path") -> "dict[str, dict[str, str]]":
    """Test case name -> {name: value} of the properties inside each ``<testcase>`` (xunit1, legacy)."""
    return {
        c.get("name", ""): {p.get("name", ""): p.get("value", "") for p in c.iter("property")}
        for c in ET.parse(path).getroot().iter("testcase")
    }
