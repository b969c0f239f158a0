"""The GitHub Actions recipe under examples/github-actions, read as data (needs PyYAML)."""

from __future__ import annotations

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
