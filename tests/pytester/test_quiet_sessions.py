"""A user's own session without perf tests to run: the plugin says nothing, warns nothing, imports little.

The project here is a user's repository: a unit test, and (in one variant) a perf
test that ``addopts = -m 'not perf'`` leaves out, as the docs advise; no conftest
of ours. Each session is a fresh interpreter (``runpytest_subprocess``), which
loads the plugin through its ``pytest11`` entry point as a user's pytest does.
What the dependencies could print goes through a pytest plugin of theirs
(``tests/unit/project/test_packaging.py`` checks that none of them has one) or
through being imported (checked here: none of the heavy ones is).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from helpers.output import without_paths

UNIT_TEST = "def test_addition():\n    assert 1 + 1 == 2\n"
PERF_TEST = """
import pytest

pytestmark = pytest.mark.perf


def test_training_throughput(bpsperf_train):
    bpsperf_train().assert_within_baseline()
"""
#: The user's ini: perf tests only when asked for, the marker declared (so ``-p no:bpsperf`` knows it too).
INI = "[pytest]\naddopts = -m 'not perf'\nmarkers =\n    perf: performance tests\n"

#: Imported by the plugin's work, never by a session that runs no perf test.
HEAVY = ("ray", "matplotlib", "jsonschema", "numpy", "yaml", "mxnet", "gluoncv", "byteps", "pytest_benchmark")


@pytest.fixture
def user_repo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, request) -> pytest.Pytester:
    """A user's repository (see the module's docstring), without the outer session's own PYTEST_* variables
    (the rest of the developer's environment is left outside for every test: ``tests/conftest.py``)."""
    for key in list(os.environ):
        if key.startswith("PYTEST_"):
            monkeypatch.delenv(key)
    pytester.makeini(INI)
    pytester.makepyfile(test_unit=UNIT_TEST)
    if request.param == "perf tests deselected":
        pytester.makepyfile(test_perf=PERF_TEST)
    return pytester


def _lines(result: pytest.RunResult, project: pytest.Pytester) -> "list[str]":
    """The session's output, its run time, the list of plugins (which names ours) and the paths of this
    machine (the interpreter's, the project's: :func:`helpers.output.without_paths`) left out."""
    out = []
    for line in without_paths(result.stdout.lines + result.stderr.lines, project.path):
        if line.startswith("plugins:"):
            continue
        out.append(re.sub(r" in [0-9.]+s ", " in Ns ", line))
    return out


BOTH = pytest.mark.parametrize("user_repo", ["no perf tests", "perf tests deselected"], indirect=True)


@BOTH
@pytest.mark.parametrize("args", [(), ("-v",), ("-rA",)], ids=["plain", "verbose", "all-summaries"])
def test_the_session_prints_what_pytest_alone_prints(user_repo, args):
    with_plugin = user_repo.runpytest_subprocess("-p", "no:cacheprovider", *args)
    without = user_repo.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:bpsperf", *args)
    assert with_plugin.ret == 0 and without.ret == 0, with_plugin.stdout.str()
    with_plugin.assert_outcomes(passed=1, deselected=1 if (user_repo.path / "test_perf.py").exists() else 0)
    assert "bpsperf" in next(line for line in with_plugin.stdout.lines if line.startswith("plugins:"))
    assert _lines(with_plugin, user_repo) == _lines(without, user_repo)
    # nor does anything the plugin brings (pytest-benchmark's header, Ray's logs) print in both
    words = [line for line in _lines(with_plugin, user_repo) if re.search(r"bpsperf|benchmark|\bray\b", line, re.I)]
    assert words == []


@BOTH
def test_the_session_warns_nothing_and_imports_none_of_the_heavy_dependencies(user_repo):
    # pytest.main in a fresh interpreter, every warning an error: what the session imported, and its status
    code = (
        "import json, sys, pytest\n"
        "status = pytest.main(['-p', 'no:cacheprovider', '-q', '-W', 'error'])\n"
        f"print(json.dumps([int(status), sorted(m for m in {HEAVY!r} if m in sys.modules)]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], cwd=user_repo.path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    status, imported = json.loads(proc.stdout.strip().splitlines()[-1])
    assert status == 0 and imported == [], proc.stdout
    assert "warning" not in proc.stdout.lower() and proc.stderr == ""
