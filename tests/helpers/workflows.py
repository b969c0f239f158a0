"""The GitHub Actions recipe under examples/github-actions, read as data (needs PyYAML), and a step's script run."""

from __future__ import annotations

import os
import subprocess
import sys

from .paths import ROOT

EXAMPLES = ROOT / "examples" / "github-actions"
PR = EXAMPLES / "bpsperf-pr.yml"
MAIN = EXAMPLES / "bpsperf-main.yml"
RECORD = EXAMPLES / "bpsperf-record-baselines.yml"
IMAGE = EXAMPLES / "bpsperf-gpu-image.yml"
BISECT = EXAMPLES / "bpsperf-bisect.yml"
GATES = (PR, MAIN, RECORD, BISECT)  # the workflows whose jobs measure, on self-hosted runners
WORKFLOWS = GATES + (IMAGE,)
DOCKERFILE = ROOT / "examples" / "docker" / "Dockerfile.gpu"


def load(path):
    import yaml

    data = yaml.safe_load(path.read_text())
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as true
    return data


def steps(workflow, job):
    return workflow["jobs"][job]["steps"]


def all_runs(workflow):
    return "\n".join(s.get("run", "") for job in workflow["jobs"].values() for s in job["steps"])


def pr_step(name: str) -> str:
    """The ``run`` script of the pull-request job's step ``name``."""
    (step,) = [s for s in steps(load(PR), "base-vs-head") if s.get("name") == name]
    return step["run"]


def bash(script: str, cwd, **env: str) -> "subprocess.CompletedProcess[str]":
    """``script`` run as GitHub runs a step (``bash -e``), in ``cwd``, with this interpreter's bin first on the PATH."""
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    # GitHub runs a step's script as `bash -e {0}`; .venv/bin is where the workflow installed the plugin
    return subprocess.run(
        ["bash", "-e", "-c", script.replace(".venv/bin/", "")],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PATH": path, **env},
    )
