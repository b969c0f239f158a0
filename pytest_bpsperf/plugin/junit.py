"""JUnit properties of perf tests: in the test case where the family allows it, at the suite level under xunit2.

The verdict of each perf test travels as name/value properties (``bpsperf_status``,
``bpsperf_measured_img_per_sec``, ...). pytest writes a test's ``user_properties``
inside its ``<testcase>``, which the xunit2 schema does not allow (pytest's own
``record_property`` warns for that reason), and xunit2 is pytest's default
``junit_family``. So when ``--junitxml`` writes xunit2, each property goes to the
``<testsuite>``'s ``<properties>`` instead, named ``NODEID::NAME`` (as
``record_testsuite_property`` writes them, which xunit2 allows); with xunit1 or
legacy, and without ``--junitxml``, it stays in the test's ``user_properties``.
"""

from __future__ import annotations

import pytest

#: Between the test's node id and the property's name in a suite-level property.
SEPARATOR = "::"


def _suite_writer(config: pytest.Config):
    """pytest's JUnit writer when it writes xunit2 (where a test case may not hold properties), else None."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover - another pytest layout: per test, as before
        return None
    xml = config.stash.get(xml_key, None)
    if xml is None or getattr(xml, "family", None) != "xunit2":
        return None
    return xml


def record(item: "pytest.Item | None", name: str, value: object) -> None:
    """Record property ``name`` of ``item``'s verdict where its JUnit family allows it (see the module)."""
    if item is None:
        return
    xml = _suite_writer(item.config)
    if xml is not None:
        xml.add_global_property(f"{item.nodeid}{SEPARATOR}{name}", value)
    else:
        item.user_properties.append((name, value))


def record_breakdown(item: "pytest.Item | None", verdict: object) -> None:
    """``bpsperf_breakdown``: where the step time went, in words (both sides), when the verdict carries it."""
    from ..judge.breakdown import change_phrase

    sides = getattr(verdict, "breakdown", None) or {}
    comparison = getattr(verdict, "comparison", None)
    phrase = change_phrase(sides, getattr(comparison, "change_pct", None))
    if phrase:
        record(item, "bpsperf_breakdown", phrase)
