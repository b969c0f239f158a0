"""The GPU smoke check's parts that need no GPU, run here as they run on an accelerator machine."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from helpers.byteps_source import byteps_file
from helpers.gpu_sim import standin_env
from helpers.paths import ROOT

SCRIPT = ROOT / "scripts" / "gpu_smoke.py"
#: What the smoke check under another Python must not inherit from this one: role configuration, this
#: interpreter's path and venv.
INHERITED_NOT = ("DMLC_", "BYTEPS_", "BPSPERF_", "CUDA_", "NVIDIA_", "PYTHONPATH", "VIRTUAL_ENV")


@pytest.fixture(scope="module")
def python_without_byteps(tmp_path_factory) -> Path:
    """A Python without BytePS, as on the GPU machine the smoke check was written for: a venv of this
    interpreter's base Python whose site-packages links every entry of this one's but BytePS's package and
    metadata, and whose ``bin`` has no ``bpslaunch``. About 0.1 s."""
    venv = tmp_path_factory.mktemp("without-byteps") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    own = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    for site in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
        for entry in Path(site).iterdir():
            link = Path(own) / entry.name
            if entry.name != "byteps" and not entry.name.startswith("byteps-") and not link.exists():
                link.symlink_to(entry)
    imports = subprocess.run([python, "-c", "import byteps"], capture_output=True, text=True)
    assert "No module named 'byteps'" in imports.stderr, imports.stderr
    subprocess.run([python, "-c", "import pytest_bpsperf.remote.roles"], check=True)  # the plugin's deps are there
    return python


def _smoke(python: Path, tmp_path: Path, *args: str) -> dict:
    """``scripts/gpu_smoke.py --cpu-only ARGS`` under ``python``, with no role configuration inherited and no
    ``bpslaunch`` on ``PATH`` (the folders that hold one, such as this venv's ``bin``, left out); its facts."""
    path = os.pathsep.join(
        p for p in os.environ.get("PATH", "").split(os.pathsep) if p and not shutil.which("bpslaunch", path=p)
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(INHERITED_NOT)}
    out = tmp_path / "facts.json"
    proc = subprocess.run(
        [str(python), str(SCRIPT), "--cpu-only", *args, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "PATH": path},
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(out.read_text())


def test_bytepss_own_launch_py_runs_every_rank_under_a_python_without_byteps(tmp_path, python_without_byteps):
    """BytePS's launcher/launch.py as its sdist ships it (one file, not executable), given with --bpslaunch."""
    launch = byteps_file("launcher/launch.py", tmp_path)
    entry = _smoke(python_without_byteps, tmp_path, "--parts", "bpslaunch", "--bpslaunch", str(launch))["bpslaunch"]
    # a rank per GPU of NVIDIA_VISIBLE_DEVICES=0,1, each with every step
    assert entry["exit"] == 0 and [r["steps"] for r in entry["ranks"]] == [6, 6], entry
    assert entry["ok"] and entry["launcher"] == str(launch) and "log" not in entry
    assert [r["byteps_importable"] for r in entry["ranks"]] == [False, False]
    assert entry["max_steps_seen"] >= 2 and all(r["pinning"] for r in entry["ranks"])


def test_a_failing_bpslaunch_part_carries_the_end_of_the_roles_log(tmp_path, python_without_byteps):
    broken = tmp_path / "launch.py"
    broken.write_text('import sys\nsys.exit("launch.py: refusing to start (broken on purpose by the test)")\n')
    entry = _smoke(python_without_byteps, tmp_path, "--parts", "bpslaunch", "--bpslaunch", str(broken))["bpslaunch"]
    assert "launch.py: refusing to start (broken on purpose by the test)" in entry.get("log", ""), entry
    assert not entry["ok"] and entry["exit"] == 1
    # the entry of a launcher given but absent says so too
    entry = _smoke(python_without_byteps, tmp_path, "--parts", "bpslaunch", "--bpslaunch", "nothing.py")["bpslaunch"]
    assert not entry["ok"] and entry["error"] == "--bpslaunch nothing.py: no such file"


@pytest.mark.skipif(
    not (Path(sys.executable).parent / "bpslaunch").exists(),
    reason="needs bpslaunch: scripts/install-byteps-server.sh installs it",
)
def test_cpu_parts_of_the_gpu_smoke_check(tmp_path):
    out = tmp_path / "facts.json"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--cpu-only", "--out", str(out)], capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    facts = json.loads(out.read_text())
    assert facts["machine"]["python"] and "cores" in facts["machine"]
    plan = facts["plugin"]["byteps_plan"]
    # a single GPU machine's defaults plan one worker node with all its GPUs
    assert plan["ok"] and plan["workers"] == 1
    assert plan["worker_env"][0]["CUDA_VISIBLE_DEVICES"] == "0" and plan["worker_env"][0]["BYTEPS_LOCAL_SIZE"]
    launch = facts["bpslaunch"]
    assert launch["exit"] == 0 and [r["steps"] for r in launch["ranks"]] == [6, 6]
    assert launch["max_steps_seen"] >= 2  # progress read from the ranks' own records while they ran
    assert all(r["pinning"] for r in launch["ranks"])
    assert "role_gpu" not in facts and facts["seconds"] < 200
    # no BytePS here: the smoke check says what it skipped and why, and what the stack would run on
    byteps = facts["byteps"]
    assert byteps["skipped"].startswith("byteps.mxnet does not import here") and "preflight" not in byteps
    assert byteps["documented_stack"]


def test_the_smoke_checks_byteps_preflight_and_training_steps_where_byteps_imports(tmp_path):
    """Under the BytePS stand-in (CPU MXNet), the part that runs BytePS on a GPU machine runs here."""
    out = tmp_path / "facts.json"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--cpu-only", "--parts", "byteps", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env=standin_env(tmp_path),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    byteps = json.loads(out.read_text())["byteps"]
    assert "error" not in byteps, byteps.get("traceback")  # the part's own failure, not only its absence
    assert "skipped" not in byteps and "BytePS stand-in" in byteps["simulation"]
    assert byteps["preflight"]["value"] == 1.0 and set(byteps["preflight"]["exit"].values()) == {0}
    training = byteps["training"]
    assert set(training["exit"].values()) == {0} and training["worker-0.0"]["img_per_sec"] > 0
    assert training["worker-0.0"]["windows"] == 3  # 6 steps, a sync every 2: the GPU default's window
