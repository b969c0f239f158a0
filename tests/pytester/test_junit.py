"""JUnit properties of the verdicts: valid under pytest's default xunit2, per test case under xunit1.

The runs are fed (``pytest_bpsperf_run`` in the project's conftest, no Ray); the
tests have no baseline, so each verdict is ``no-baseline`` (a skip), which still
records its properties.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from helpers.fakes import GATED_TEST, PINNED_SESSION
from helpers.junit import XUNIT2_TESTCASE_CHILDREN, case_properties, suite_properties

NODEIDS = {"test_x.py::test_x[default]", "test_x.py::test_x[omp-passive]"}
PINNED = (*PINNED_SESSION, "--junitxml=junit.xml")


@pytest.fixture
def project(ourtester: pytest.Pytester) -> pytest.Pytester:
    ourtester.makepyfile(test_x=GATED_TEST)
    return ourtester


@pytest.mark.parametrize("ini", ["", "[pytest]\njunit_family = xunit2\n"], ids=["default", "xunit2"])
def test_xunit2_keeps_test_cases_valid_and_names_each_property_by_node_id(project, ini):
    if ini:
        project.makeini(ini)
    result = project.runpytest(*PINNED, f"--bpsperf-baselines-dir={project.path / 'bl'}")
    result.assert_outcomes(skipped=2)
    root = ET.parse(project.path / "junit.xml").getroot()
    for case in root.iter("testcase"):
        # the xunit2 schema has no <properties> in a test case
        assert {child.tag for child in case} <= XUNIT2_TESTCASE_CHILDREN, case.get("name")
    props = suite_properties(project.path / "junit.xml")
    assert set(props) == NODEIDS
    for nodeid, p in props.items():
        assert p["bpsperf_status"] == "no-baseline", nodeid
        assert float(p["bpsperf_measured_img_per_sec"]) > 0
        assert p["bpsperf_profile"] == "testprof"
    assert "incompatible with junit_family" not in result.stdout.str()


@pytest.mark.parametrize("family", ["xunit1", "legacy"])
def test_xunit1_keeps_the_properties_in_each_test_case(project, family):
    project.makeini(f"[pytest]\njunit_family = {family}\n")
    result = project.runpytest(*PINNED, f"--bpsperf-baselines-dir={project.path / 'bl'}")
    result.assert_outcomes(skipped=2)
    props = case_properties(project.path / "junit.xml")
    assert set(props) == {"test_x[default]", "test_x[omp-passive]"}
    for name, p in props.items():
        assert p["bpsperf_status"] == "no-baseline", name
        assert p["bpsperf_profile"] == "testprof"
    assert suite_properties(project.path / "junit.xml") == {}
