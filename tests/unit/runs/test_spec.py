"""``runs/spec.py``: a run's job directory is named safely for the file system."""

from __future__ import annotations

import pytest

from pytest_bpsperf.runs.spec import job_dir_name


@pytest.mark.parametrize(
    "nodeid, expected",
    [
        ("perf_tests/test_a.py::test_x[omp-passive+extra-servers]", "test_x-omp-passive+extra-servers-"),
        ("t.py::test_y", "test_y"),
        ("t.py::Class::test_z[a b/c]", "test_z-a-b-c-"),
    ],
)
def test_job_dir_name_is_file_system_safe(nodeid, expected):
    assert job_dir_name(nodeid) == expected.rstrip("-")
