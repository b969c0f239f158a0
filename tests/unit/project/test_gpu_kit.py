"""scripts/gpu_kit.py's pure parts on tiny synthetic wheels: what is trimmed, the modes restored from
``external_attr``, the requirements checked against what the GPU machine has, the size limit, and a
whole kit made with the download replaced (tests/e2e/test_gpu_kit.py makes a real one)."""

from __future__ import annotations

import importlib.util
import json
import os
import stat
import subprocess
import sys
import tarfile
import zipfile

import pytest

from helpers.paths import ROOT

_spec = importlib.util.spec_from_file_location("gpu_kit", ROOT / "scripts" / "gpu_kit.py")
gpu_kit = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("gpu_kit", gpu_kit)  # its dataclasses look their module up there
_spec.loader.exec_module(gpu_kit)


def _member(zf, name, data=b"x", mode=None):
    info = zipfile.ZipInfo(name)
    if mode is not None:
        info.create_system = 3
        info.external_attr = (stat.S_IFREG | mode) << 16
    else:
        info.create_system = 0  # as written on a system without Unix modes
    zf.writestr(info, data)


def _wheel(path, dist, version, requires=(), members=()):
    """A wheel of ``dist`` with METADATA, RECORD and ``members`` ((name, mode or None))."""
    info = f"{dist.replace('-', '_')}-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as zf:
        for name, mode in members:
            _member(zf, name, b"#!/bin/sh\n" if mode and mode & 0o111 else b"data", mode)
        meta = f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n" + "".join(
            f"Requires-Dist: {r}\n" for r in requires
        )
        _member(zf, f"{info}/METADATA", meta.encode(), 0o644)
        record = "".join(f"{n},sha256=x,4\n" for n, _ in members) + f"{info}/METADATA,,\n{info}/RECORD,,\n"
        _member(zf, f"{info}/RECORD", record.encode(), 0o644)
    return path


RAY_MEMBERS = (
    ("ray/__init__.py", 0o644),
    ("ray/core/src/ray/gcs/gcs_server", 0o755),
    ("ray/core/src/ray/raylet/raylet", 0o755),
    ("ray/_raylet.so", 0o755),
    ("ray/jars/ray_dist.jar", 0o644),
    ("ray/rllib/__init__.py", 0o644),
    ("ray/train/__init__.py", 0o644),
    ("ray/training_notes.py", 0o644),  # not under ray/train/: kept
    ("ray/dashboard/agent.py", 0o644),
    ("ray/dashboard/client/build/index.html", 0o644),
    ("ray/no_mode.py", None),
)


@pytest.mark.parametrize(
    "name, dropped",
    [
        ("ray/jars/ray_dist.jar", True),
        ("ray/rllib/algorithms/ppo.py", True),
        ("ray/serve/api.py", True),
        ("ray/llm/__init__.py", True),
        ("ray/data/dataset.py", True),
        ("ray/tune/__init__.py", True),
        ("ray/dashboard/client/build/index.html", True),
        ("ray/jars", True),
        ("ray/training_notes.py", False),
        ("ray/dashboard/agent.py", False),
        ("ray/_private/worker.py", False),
        ("ray/core/src/ray/gcs/gcs_server", False),
        ("ray/util/placement_group.py", False),
    ],
)
def test_what_is_trimmed(name, dropped):
    assert gpu_kit.trimmed(name) is dropped


def test_the_mode_comes_from_external_attr_where_a_unix_zip_stored_it(tmp_path):
    path = tmp_path / "w.zip"
    with zipfile.ZipFile(path, "w") as zf:
        _member(zf, "exe", mode=0o755)
        _member(zf, "plain", mode=0o640)
        _member(zf, "dos")
    with zipfile.ZipFile(path) as zf:
        modes = {i.filename: gpu_kit.mode_of(i) for i in zf.infolist()}
    assert modes == {"exe": 0o755, "plain": 0o640, "dos": None}


def test_unpacking_restores_exec_bits_drops_the_trimmed_and_rewrites_record(tmp_path):
    wheel = _wheel(tmp_path / "ray-2.60.0-cp312-cp312-manylinux2014_x86_64.whl", "ray", "2.60.0", members=RAY_MEMBERS)
    dest = tmp_path / "site"
    out = gpu_kit.unpack_wheel(wheel, dest)
    gcs = dest / "ray/core/src/ray/gcs/gcs_server"
    assert os.access(gcs, os.X_OK) and stat.S_IMODE(gcs.stat().st_mode) == 0o755
    assert os.access(dest / "ray/core/src/ray/raylet/raylet", os.X_OK)
    assert not os.access(dest / "ray/__init__.py", os.X_OK)
    # a zipfile.extract would have left every one of them 0644, as the file below without a stored mode
    assert not os.access(dest / "ray/no_mode.py", os.X_OK)
    assert sorted(out.executables) == [
        "ray/_raylet.so",
        "ray/core/src/ray/gcs/gcs_server",
        "ray/core/src/ray/raylet/raylet",
    ]
    for gone in ("ray/jars", "ray/rllib", "ray/train", "ray/dashboard/client"):
        assert not (dest / gone).exists()
    assert (dest / "ray/training_notes.py").exists() and (dest / "ray/dashboard/agent.py").exists()
    assert out.dropped_files == 4 and out.files == len(RAY_MEMBERS) - 4 + 2  # + METADATA, RECORD
    record = (dest / "ray-2.60.0.dist-info/RECORD").read_text()
    assert "ray/jars/" not in record and "ray/rllib/" not in record and "gcs_server" in record


def test_a_member_outside_the_folder_is_refused(tmp_path):
    wheel = tmp_path / "evil.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        _member(zf, "ray/../../escape", mode=0o644)
    with pytest.raises(gpu_kit.KitError, match="outside"):
        gpu_kit.unpack_wheel(wheel, tmp_path / "site")
    assert not (tmp_path / "escape").exists()


RAY_METADATA = """Metadata-Version: 2.1
Name: ray
Requires-Dist: click>=7.0
Requires-Dist: jsonschema
Requires-Dist: PyYAML
Requires-Dist: async-timeout<6.0,>=4.0; python_version < "3.11"
Requires-Dist: typing_extensions>=4.4; python_version < "3.13"
Requires-Dist: pandas>=1.3; extra == "data"
"""


def test_requirements_leave_out_extras_and_markers_that_do_not_hold():
    assert gpu_kit.requirements(RAY_METADATA, "3.12") == ["click", "jsonschema", "pyyaml", "typing-extensions"]
    assert "async-timeout" in gpu_kit.requirements(RAY_METADATA, "3.10")
    assert "typing-extensions" not in gpu_kit.requirements(RAY_METADATA, "3.13")


@pytest.mark.parametrize(
    "marker, holds",
    [
        ('python_version < "3.13"', True),
        ("python_version >= '3.13'", False),
        ('python_version < "3.13" and sys_platform == "linux"', True),  # other markers count as holding
        ('python_version == "3.12"', True),
        ('python_full_version < "3.12.1"', False),
    ],
)
def test_markers_on_the_target_python(marker, holds):
    assert gpu_kit.marker_holds(marker, "3.12.3") is holds


def test_a_requirement_neither_in_the_kit_nor_on_the_target_is_named():
    wheels = {"ray": RAY_METADATA, "jsonschema": "Requires-Dist: attrs>=22\nRequires-Dist: rpds-py>=0.7\n"}
    assert gpu_kit.unmet(wheels, "3.12") == {"jsonschema": ["rpds-py"]}
    assert gpu_kit.unmet({**wheels, "rpds-py": ""}, "3.12") == {}


def test_the_kits_wheels_and_the_target_meet_every_requirement_of_the_pinned_versions():
    # what the kit carries is what the target lacks: nothing in both lists
    assert not {gpu_kit.normalize(n) for n in gpu_kit.EXTRA_WHEELS} & gpu_kit.TARGET_HAS
    assert "ray" not in gpu_kit.TARGET_HAS and "jsonschema" not in gpu_kit.TARGET_HAS


def test_the_pinned_ray_is_inside_pyprojects_range():
    spec = gpu_kit.ray_range((ROOT / "pyproject.toml").read_text())
    assert spec.startswith(">=") and gpu_kit.in_range(gpu_kit.RAY_VERSION, spec)
    assert not gpu_kit.in_range("3.0.0", spec) and not gpu_kit.in_range("2.48.0", spec)


def test_size_check():
    assert gpu_kit.check_size({"a": 10, "b": 20}, limit=30) == 30
    with pytest.raises(gpu_kit.KitError, match=r"over .* MiB \(largest: b 0\.0 MiB, a 0\.0 MiB\)"):
        gpu_kit.check_size({"a": 10, "b": 21}, limit=30)


def test_a_packed_tree_keeps_its_modes_and_packs_to_the_same_bytes(tmp_path):
    src = tmp_path / "src"
    (src / "bin").mkdir(parents=True)
    (src / "bin" / "tool").write_text("#!/bin/sh\n")
    (src / "bin" / "tool").chmod(0o755)
    (src / "data.txt").write_text("data")
    gpu_kit.pack_tree(src, tmp_path / "one.tar.xz", preset=0)
    os.utime(src / "data.txt", (1, 1))
    gpu_kit.pack_tree(src, tmp_path / "two.tar.xz", preset=0)
    assert (tmp_path / "one.tar.xz").read_bytes() == (tmp_path / "two.tar.xz").read_bytes()
    with tarfile.open(tmp_path / "one.tar.xz") as tar:
        assert tar.getmember("bin/tool").mode == 0o755 and tar.getmember("data.txt").mode & 0o111 == 0


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """pip_download replaced: synthetic wheels of the pinned distributions, as pip would save them."""

    def download(specs, dest, python_version):
        py = python_version.replace(".", "")
        for spec in specs:
            dist, _, version = spec.partition("==")
            if dist == "ray":
                _wheel(
                    dest / f"ray-{version}-cp{py}-cp{py}-manylinux2014_x86_64.whl", "ray", version, members=RAY_MEMBERS
                )
            else:
                requires = ["attrs>=22"] + (["rpds-py"] if dist == "referencing" else [])
                _wheel(dest / f"{dist.replace('-', '_')}-{version}-py3-none-any.whl", dist, version, requires)

    monkeypatch.setattr(gpu_kit, "pip_download", download)
    return tmp_path


def test_a_kit_made_offline_has_its_manifest_and_checksums(offline):
    out = offline / "kit"
    manifest = gpu_kit.make_kit(out, python_version="3.12", preset=0)
    names = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert "ray-2.60.0-cp312-trimmed.tar.xz" in names and "MANIFEST.json" in names and "SHA256SUMS" in names
    assert len([n for n in names if n.startswith("wheels/")]) == len(gpu_kit.EXTRA_WHEELS)
    assert json.loads((out / "MANIFEST.json").read_text()) == manifest
    assert manifest["ray_tree"]["executables"] == sorted(
        ["ray/_raylet.so", "ray/core/src/ray/gcs/gcs_server", "ray/core/src/ray/raylet/raylet"]
    )
    check = subprocess.run(["sha256sum", "--quiet", "-c", "SHA256SUMS"], cwd=out, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    with tarfile.open(out / "ray-2.60.0-cp312-trimmed.tar.xz") as tar:
        assert tar.getmember("ray/core/src/ray/gcs/gcs_server").mode == 0o755
        assert not [n for n in tar.getnames() if n.startswith("ray/jars")]
    # made again over itself: the same kit
    assert gpu_kit.make_kit(out, python_version="3.12", preset=0)["files"] == manifest["files"]


def test_a_kit_over_the_limit_fails(offline):
    with pytest.raises(gpu_kit.KitError, match="over"):
        gpu_kit.make_kit(offline / "kit", preset=0, limit=100)


def test_a_folder_that_is_not_a_kit_is_never_emptied(offline):
    out = offline / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep")
    with pytest.raises(gpu_kit.KitError, match="holds no kit"):
        gpu_kit.make_kit(out, preset=0)
    assert (out / "notes.txt").read_text() == "keep"


def test_the_run_script_parses():
    proc = subprocess.run(["bash", "-n", str(ROOT / "scripts" / "gpu_run.sh")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
