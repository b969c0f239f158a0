"""The GPU kit made for real (scripts/gpu_kit.py, from the registry) for this machine's Python, and used
as a GPU machine uses it: installed with no index into a fresh venv that has only what that machine has,
Ray started from its trimmed tree; then scripts/gpu_run.sh in CPU mode (gloo, small sizes), the torch
backend's perf sessions on the kit's Ray.

Where the registry cannot be reached, the kit cannot be made and the tests skip, saying so.
"""

from __future__ import annotations

import importlib.util
import json
import os
import stat
import subprocess
import sys
import tarfile
import tempfile
import time

import pytest

from helpers.paths import ROOT

_spec = importlib.util.spec_from_file_location("gpu_kit", ROOT / "scripts" / "gpu_kit.py")
gpu_kit = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("gpu_kit", gpu_kit)
_spec.loader.exec_module(gpu_kit)

PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
#: What the GPU machine has that Ray needs (gpu_kit.TARGET_HAS without torch, matplotlib, pytest and
#: numpy, which starting Ray does not need): the fresh venv gets these from the registry, the rest
#: from the kit alone.
BASE = sorted(gpu_kit.TARGET_HAS - {"torch", "torchvision", "matplotlib", "numpy", "pytest"})

RAY_CHECK = """
import os, sys, time
t0 = time.perf_counter()
import ray
assert ray.__file__.startswith(sys.argv[1]), ray.__file__
ray.init(address="local", _node_ip_address="127.0.0.1", include_dashboard=False, log_to_driver=False, num_cpus=1)
try:
    @ray.remote
    class Probe:
        def where(self):
            import jsonschema
            return jsonschema.__file__
    print("actor imports jsonschema from", ray.get(Probe.remote().where.remote(), timeout=60))
finally:
    ray.shutdown()
print(f"ray.init and an actor in {time.perf_counter() - t0:.1f} s")
"""


@pytest.fixture(scope="module")
def kit(tmp_path_factory):
    """The kit for this machine's Python, made from the registry (skips where it cannot be reached)."""
    out = tmp_path_factory.mktemp("kit") / "kit"
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gpu_kit.py"), "--out", str(out), "--python-version", PYTHON]
        + ["--xz-preset", "1"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if proc.returncode != 0 and "pip download" in proc.stderr:
        pytest.skip(f"the kit cannot be made here (no registry?): {proc.stderr.strip()[-400:]}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    print(proc.stdout, f"made in {time.perf_counter() - t0:.0f} s")
    return out


@pytest.fixture(scope="module")
def target_venv(tmp_path_factory):
    """A fresh venv with what the GPU machine has for Ray (from the registry), and neither Ray nor jsonschema."""
    venv = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    proc = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *BASE],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        pytest.skip(f"the registry cannot be reached for the venv's packages: {proc.stderr.strip()[-400:]}")
    for absent in ("ray", "jsonschema"):
        assert subprocess.run([str(python), "-c", f"import {absent}"], capture_output=True).returncode != 0
    return python


def _install(kit, python, site):
    """What gpu_run.sh does with the kit: Ray's tree unpacked, the wheels installed with no index."""
    site.mkdir()
    (tree,) = kit.glob("ray-*-trimmed.tar.xz")
    subprocess.run(["tar", "-xJf", str(tree), "-C", str(site)], check=True, timeout=120)
    proc = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile", "--target", str(site)]
        + [str(w) for w in sorted((kit / "wheels").glob("*.whl"))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr


def _ray_check(python, site, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "PYTHON"))}
    # a short folder of its own: Ray's socket paths under it must fit 107 bytes
    with tempfile.TemporaryDirectory(prefix="rk", dir="/tmp") as ray_tmp:
        env.update(PYTHONPATH=str(site), RAY_USAGE_STATS_ENABLED="0", RAY_TMPDIR=ray_tmp)
        return subprocess.run(
            [str(python), "-c", RAY_CHECK, str(site)], capture_output=True, text=True, timeout=180, cwd=cwd, env=env
        )


def test_the_kit_is_small_and_says_what_it_holds(kit):
    manifest = json.loads((kit / "MANIFEST.json").read_text())
    assert manifest["total_bytes"] < gpu_kit.LIMIT and manifest["ray_version"] == gpu_kit.RAY_VERSION
    assert {"ray/core/src/ray/gcs/gcs_server", "ray/core/src/ray/raylet/raylet"} <= set(
        manifest["ray_tree"]["executables"]
    )
    assert manifest["ray_tree"]["trimmed_bytes"] > 30 * 2**20  # the jars alone are 34.5 MB
    check = subprocess.run(["sha256sum", "--quiet", "-c", "SHA256SUMS"], cwd=kit, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_trimmed_ray_starts_from_the_kit_in_a_fresh_venv_installed_with_no_index(kit, target_venv, tmp_path):
    site = tmp_path / "site"
    _install(kit, target_venv, site)
    gcs = site / "ray" / "core" / "src" / "ray" / "gcs" / "gcs_server"
    assert os.access(gcs, os.X_OK) and os.access(site / "ray/core/src/ray/raylet/raylet", os.X_OK)
    assert not (site / "ray" / "jars").exists() and not (site / "ray" / "rllib").exists()
    proc = _ray_check(target_venv, site, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"from {site}" in proc.stdout, proc.stdout
    print(proc.stdout)
    # without the exec bits the wheel recorded (what zipfile.extract leaves), Ray cannot start
    gcs.chmod(gcs.stat().st_mode & ~(stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))
    proc = _ray_check(target_venv, site, tmp_path)
    assert proc.returncode != 0 and "PermissionError" in proc.stderr and "gcs_server" in proc.stderr, proc.stderr


def _torch_backend_missing() -> "str | None":
    from pytest_bpsperf import backends

    if "torch" not in backends.names():
        return "torch backend not registered"
    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("torchvision") is None:
        return "torch and torchvision are not installed (the [torch] extra)"
    return None


def test_the_run_script_runs_the_torch_backend_on_the_kits_ray_on_cpu(request, tmp_path):
    """The run script's first session (record, one run) on the kit's Ray, to keep the test short: the gate
    and base-vs-head sessions of the torch backend are tests/e2e/test_e2e_torch.py's, and all three ran
    through this script on the H200 and on CPUs (docs/gpu-kit.md)."""
    why = _torch_backend_missing()
    if why:
        pytest.skip(why)
    kit = request.getfixturevalue("kit")  # made only where the run can use it
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BPSPERF_", "RAY_"))}
    env.update(
        OUT=str(out),
        BPSPERF_KIT=str(kit),
        BPSPERF_KIT_PYTHON=sys.executable,
        BPSPERF_KIT_CPU="1",
        BPSPERF_KIT_DEADLINE="600",
        BPSPERF_KIT_SESSIONS="record",
        BPSPERF_KIT_REPEATS="1",
    )
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "gpu_run.sh")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=700
    )
    summary = (out / "summary.txt").read_text() if (out / "summary.txt").exists() else proc.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "baselines.tar.gz",
        "logs.tar.gz",
        "record-float32.json",
        "summary.txt",
    ], summary
    assert "ray 2.60.0 from /tmp/bpk." in summary and "'torch'" in summary, summary  # the kit's Ray
    runs = json.loads((out / "record-float32.json").read_text())["tests"]
    assert runs and all(r["backend"] == "torch" and r["img_per_sec"] > 0 for r in runs), summary
    assert "record-float32     exit 0" in summary and proc.returncode == 0, summary
    with tarfile.open(out / "baselines.tar.gz") as tar:
        assert any(n.endswith(".json") and "cpu-" in n for n in tar.getnames())
    assert not _left_running(), _left_running()


def _left_running() -> "list[str]":
    """Processes of a gpu_run.sh run (they carry its GPU_KIT_RUN): none may be left when it returns."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                if b"GPU_KIT_RUN=/tmp/bpk." in fh.read():
                    out.append(pid)
        except OSError:
            continue
    return out
