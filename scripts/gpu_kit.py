"""Make the GPU kit: what a GPU machine without network needs, beside the repository, to run ``pytest -m perf``.

    python3 scripts/gpu_kit.py --out .kit [--python-version 3.12] [--ray-version 2.60.0] [--project REV]

The machine it is for (docs/gpu-kit.md): Python 3.12, PyTorch with CUDA,
torchvision, pytest and most of Ray's own dependencies, but no Ray, no
jsonschema and no network, and at most 64 MiB carried there (the repository
included). The kit holds, fetched from the registry here when it is made and
never committed:

- Ray's wheel for that Python, unpacked without what a run never imports
  (:data:`TRIM`: the Java jars, the libraries above Ray Core, the dashboard's
  web front end), with the modes the wheel recorded (``zipfile`` drops them:
  without the exec bits ``ray.init()`` fails with PermissionError on
  ``gcs_server``), packed as ``tar.xz``;
- the wheels of :data:`EXTRA_WHEELS`, the plugin's and Ray's requirements that
  the machine lacks (every requirement of every wheel is checked to be either
  in the kit or in :data:`TARGET_HAS`);
- with ``--project REV``, ``git archive REV`` of this repository (the run
  script then tests that commit instead of the carried working tree);
- ``MANIFEST.json`` (versions, sizes, sha256, what was trimmed) and
  ``SHA256SUMS`` (``sha256sum -c`` there).

It prints each part's size and the total, and fails when the kit is over
:data:`LIMIT` (60 MiB: the repository travels in the same 64 MiB).
``scripts/gpu_run.sh`` unpacks and runs it there. Standard library only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

ROOT = Path(__file__).resolve().parents[1]

#: The Ray the kit carries: the project's .venv's, inside pyproject's range (checked when the kit is made).
RAY_VERSION = "2.60.0"
#: What the GPU machine lacks beside Ray (gpu-2.md): jsonschema (the plugin validates its documents and
#: Ray requires it) and its own requirements that the machine has not: referencing,
#: jsonschema-specifications and rpds-py (compiled: a wheel per Python). Pinned to the versions the
#: project's .venv runs, so that the kit is the same every time it is made.
EXTRA_WHEELS = {
    "jsonschema": "4.26.0",
    "jsonschema-specifications": "2025.9.1",
    "referencing": "0.37.0",
    "rpds-py": "2026.9.1",
}
#: What the GPU machine's image has (docs/gpu-kit.md; KINDS.md's list of its packages): a requirement of
#: a kit's wheel that names one of these is met there. Ray's aiohttp requirements are among them.
TARGET_HAS = frozenset(
    {
        "aiohappyeyeballs",
        "aiosignal",
        "attrs",
        "click",
        "filelock",
        "frozenlist",
        "idna",
        "matplotlib",
        "msgpack",
        "multidict",
        "numpy",
        "packaging",
        "propcache",
        "protobuf",
        "psutil",
        "pytest",
        "pyyaml",
        "requests",
        "torch",
        "torchvision",
        "typing-extensions",
        "yarl",
    }
)
#: Paths of Ray's wheel that a run never imports: the Java jars (34.5 MB), the libraries above Ray
#: Core (RLlib, LLM, Serve, Data, Tune, Train, AIR, workflows) and the dashboard's web front end (the
#: plugin starts Ray with include_dashboard=False). scripts/gpu_kit.py's test starts ray.init() and an
#: actor from a tree trimmed so.
TRIM = (
    "ray/jars/",
    "ray/rllib/",
    "ray/llm/",
    "ray/serve/",
    "ray/data/",
    "ray/tune/",
    "ray/train/",
    "ray/air/",
    "ray/workflow/",
    "ray/dashboard/client/",
)
#: The largest kit: the repository (about 3 MiB) travels beside it in 64 MiB.
LIMIT = 60 * 1024 * 1024
#: The machine's platform tags, newest first (pip matches each exactly).
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
#: The name of Ray's packed tree in the kit (what gpu_run.sh unpacks).
RAY_TREE = "ray-{version}-cp{py}-trimmed.tar.xz"


class KitError(RuntimeError):
    """The kit cannot be made as asked; the message says why."""


def normalize(name: str) -> str:
    """A distribution name as PEP 503 compares them (``PyYAML`` -> ``pyyaml``, ``rpds_py`` -> ``rpds-py``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def trimmed(name: str, trim: Sequence[str] = TRIM) -> bool:
    """Whether the wheel member ``name`` is left out of the kit."""
    return any(name == t.rstrip("/") or name.startswith(t) for t in trim)


def mode_of(info: zipfile.ZipInfo) -> "int | None":
    """The permission bits a zip member was stored with (``external_attr``'s high 16 bits, as ``zip`` on
    Unix writes them), or None where it recorded none."""
    if info.create_system != 3:  # 3: Unix; others keep no Unix mode
        return None
    mode = info.external_attr >> 16
    return stat.S_IMODE(mode) if mode else None


def _safe_path(dest: Path, name: str) -> Path:
    """``dest / name``, refusing a member that would land outside ``dest``."""
    if name.startswith("/") or ".." in Path(name).parts:
        raise KitError(f"wheel member {name!r} points outside the folder it is unpacked into")
    return dest / name


@dataclass
class Unpacked:
    """What :func:`unpack_wheel` wrote and left out."""

    files: int = 0
    bytes: int = 0
    dropped_files: int = 0
    dropped_bytes: int = 0
    #: members written with an exec bit, as the wheel recorded them
    executables: "list[str]" = field(default_factory=list)


def unpack_wheel(wheel: Path, dest: Path, trim: Sequence[str] = TRIM) -> Unpacked:
    """Unpack ``wheel`` into ``dest`` without the members :func:`trimmed` names, each file with the
    mode the wheel recorded (``zipfile.extract`` writes every file 0644). Its ``RECORD`` keeps only
    the files written."""
    out = Unpacked()
    record_name = None
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            if info.is_dir():
                continue
            if trimmed(info.filename, trim):
                out.dropped_files += 1
                out.dropped_bytes += info.file_size
                continue
            if info.filename.endswith(".dist-info/RECORD"):
                record_name = info.filename
            target = _safe_path(dest, info.filename)
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
            mode = mode_of(info)
            if mode is not None:
                os.chmod(target, mode)
                if mode & 0o111:
                    out.executables.append(info.filename)
            out.files += 1
            out.bytes += info.file_size
    if record_name is not None:
        record = dest / record_name
        kept = [
            line
            for line in record.read_text(encoding="utf-8").splitlines()
            if line and not trimmed(line.split(",", 1)[0], trim)
        ]
        record.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return out


_MARKER = re.compile(r"""^\s*python_(full_)?version\s*(<=|>=|==|!=|<|>)\s*["']([0-9.]+)["']\s*$""")


def _version(text: str) -> "tuple[int, ...]":
    return tuple(int(p) for p in re.findall(r"\d+", text))


def _compare(left: "tuple[int, ...]", op: str, right: "tuple[int, ...]") -> bool:
    n = max(len(left), len(right))
    a, b = left + (0,) * (n - len(left)), right + (0,) * (n - len(right))
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b}[op]


def marker_holds(marker: str, python_version: str) -> bool:
    """Whether an environment marker holds on the target: ``python_version`` comparisons joined by
    ``and`` are evaluated; any other marker counts as holding (a requirement too many is checked, never
    one too few)."""
    for part in re.split(r"\s+and\s+", marker.strip()):
        m = _MARKER.match(part.strip().strip("()"))
        if m is None:
            continue
        # python_version is MAJOR.MINOR; python_full_version all of it
        version = _version(python_version) if m.group(1) else _version(python_version)[:2]
        if not _compare(version, m.group(2), _version(m.group(3))):
            return False
    return True


def requirements(metadata: str, python_version: str) -> "list[str]":
    """The normalized names a wheel's ``METADATA`` requires on ``python_version``, extras left out."""
    names = []
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        spec, _, marker = line.split(":", 1)[1].partition(";")
        if "extra" in marker:
            continue
        if marker and not marker_holds(marker, python_version):
            continue
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec)
        if m:
            names.append(normalize(m.group(1)))
    return sorted(set(names))


def unmet(wheels: "dict[str, str]", python_version: str, have: Iterable[str] = TARGET_HAS) -> "dict[str, list[str]]":
    """``{wheel's distribution: [requirements neither in the kit nor on the target]}`` for ``wheels``
    (``{distribution: its METADATA}``); empty when the kit is complete."""
    present = {normalize(n) for n in wheels} | {normalize(n) for n in have}
    out = {}
    for name, metadata in sorted(wheels.items()):
        missing = [r for r in requirements(metadata, python_version) if r not in present]
        if missing:
            out[name] = missing
    return out


def in_range(version: str, spec: str) -> bool:
    """Whether ``version`` satisfies ``spec``, comma-separated comparisons such as ``>=2.49,<3``."""
    for clause in spec.split(","):
        m = re.match(r"\s*(<=|>=|==|!=|<|>)\s*([0-9.]+)\s*$", clause)
        if not m:
            raise KitError(f"cannot read the version clause {clause!r} of {spec!r}")
        if not _compare(_version(version), m.group(1), _version(m.group(2))):
            return False
    return True


def ray_range(pyproject: str) -> str:
    """The version range of ``ray`` among pyproject.toml's dependencies (``>=2.49,<3``)."""
    m = re.search(r"""^\s*["']ray([<>=!][^"';\[]*)["']""", pyproject, re.MULTILINE)
    if not m:
        raise KitError("pyproject.toml names no ray dependency")
    return m.group(1).strip()


def check_size(parts: "dict[str, int]", limit: int = LIMIT) -> int:
    """The kit's total size; raises :class:`KitError` naming the largest parts when it is over ``limit``."""
    total = sum(parts.values())
    if total > limit:
        largest = ", ".join(f"{n} {s / 2**20:.1f} MiB" for n, s in sorted(parts.items(), key=lambda p: -p[1])[:3])
        raise KitError(f"the kit is {total / 2**20:.1f} MiB, over {limit / 2**20:.0f} MiB (largest: {largest})")
    return total


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def pack_tree(src: Path, dest: Path, preset: int = 6) -> None:
    """``src``'s contents as a ``tar.xz`` at ``dest``: sorted, owner root, modes kept, mtimes zeroed (the
    same tree packs to the same bytes)."""

    def reset(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        info.mtime = 0
        return info

    with tarfile.open(dest, "w:xz", preset=preset, format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(src.rglob("*")):
            tar.add(path, arcname=str(path.relative_to(src)), recursive=False, filter=reset)


def pip_download(specs: Sequence[str], dest: Path, python_version: str) -> None:
    """Fetch the wheels of ``specs`` for the target (``python_version``, CPython, x86-64 manylinux)."""
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:"]
    cmd += ["--python-version", python_version, "--implementation", "cp", "-d", str(dest)]
    for platform in PLATFORMS:
        cmd += ["--platform", platform]
    proc = subprocess.run(cmd + list(specs), capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-6:])
        raise KitError(f"pip download {' '.join(specs)} failed (exit {proc.returncode}); no registry?\n{tail}")


def _wheel_of(folder: Path, dist: str) -> Path:
    found = [p for p in folder.glob("*.whl") if normalize(p.name.split("-")[0]) == normalize(dist)]
    if len(found) != 1:
        raise KitError(f"expected one wheel of {dist} in {folder}, found {[p.name for p in found]}")
    return found[0]


def _metadata(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1)
        return zf.read(name).decode("utf-8")


def _clear(out: Path) -> None:
    """Empty ``out`` if it holds a kit made earlier; refuse a folder that holds anything else."""
    if not out.exists():
        return
    if any(out.iterdir()) and not (out / "MANIFEST.json").exists():
        raise KitError(f"{out} is not empty and holds no kit (no MANIFEST.json): choose another --out")
    shutil.rmtree(out)


def make_kit(
    out: Path,
    *,
    python_version: str = "3.12",
    ray_version: str = RAY_VERSION,
    project: "str | None" = None,
    download_dir: "Path | None" = None,
    preset: int = 6,
    limit: int = LIMIT,
) -> dict:
    """Make the kit in ``out`` (see the module docstring); its manifest."""
    t0 = time.perf_counter()
    spec = ray_range((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    if not in_range(ray_version, spec):
        raise KitError(f"Ray {ray_version} is outside pyproject.toml's range ray{spec}")
    py = python_version.replace(".", "")
    _clear(out)
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="bpsperf-kit-") as tmp:
        downloads = download_dir or Path(tmp) / "downloads"
        downloads.mkdir(parents=True, exist_ok=True)
        pins = {"ray": ray_version, **EXTRA_WHEELS}
        pip_download([f"{name}=={version}" for name, version in pins.items()], downloads, python_version)
        wheels = {name: _wheel_of(downloads, name) for name in pins}
        missing = unmet({name: _metadata(w) for name, w in wheels.items()}, python_version)
        if missing:
            raise KitError(
                "requirements neither in the kit nor on the GPU machine (EXTRA_WHEELS, TARGET_HAS): "
                + "; ".join(f"{w} needs {', '.join(r)}" for w, r in missing.items())
            )
        site = Path(tmp) / "site"
        unpacked = unpack_wheel(wheels["ray"], site)
        tree = out / RAY_TREE.format(version=ray_version, py=py)
        pack_tree(site, tree, preset)
        (out / "wheels").mkdir()
        for name in EXTRA_WHEELS:
            shutil.copy2(wheels[name], out / "wheels" / wheels[name].name)
        ray_wheel_bytes = wheels["ray"].stat().st_size
    if project is not None:
        proc = subprocess.run(
            ["git", "archive", "--format=tar.gz", "-o", str(out / "project.tar.gz"), project],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise KitError(f"git archive {project} failed: {proc.stderr.strip()}")
        rev = subprocess.run(["git", "rev-parse", project], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        (out / "project.rev").write_text(f"{project} {rev}\n", encoding="utf-8")
    files = sorted(p for p in out.rglob("*") if p.is_file())
    parts = {str(p.relative_to(out)): p.stat().st_size for p in files}
    total = check_size(parts, limit)
    manifest = {
        "schema_version": 1,
        "python_version": python_version,
        "ray_version": ray_version,
        "ray_wheel_bytes": ray_wheel_bytes,
        "ray_tree": {
            "file": tree.name,
            "files": unpacked.files,
            "unpacked_bytes": unpacked.bytes,
            "trimmed": list(TRIM),
            "trimmed_files": unpacked.dropped_files,
            "trimmed_bytes": unpacked.dropped_bytes,
            "executables": sorted(unpacked.executables),
        },
        "wheels": sorted(p for p in parts if p.startswith("wheels/")),
        "project": project,
        "files": {name: {"bytes": size, "sha256": sha256(out / name)} for name, size in sorted(parts.items())},
        "total_bytes": total,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    (out / "SHA256SUMS").write_text(
        "".join(f"{v['sha256']}  {n}\n" for n, v in manifest["files"].items()), encoding="utf-8"
    )
    (out / "MANIFEST.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return manifest


def main(argv: "Sequence[str] | None" = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, required=True, help="the kit's folder (a .gitignored one: .kit)")
    p.add_argument("--python-version", default="3.12", help="the GPU machine's Python (default 3.12)")
    p.add_argument("--ray-version", default=RAY_VERSION, help=f"default {RAY_VERSION}")
    p.add_argument("--project", metavar="REV", help="also carry git archive REV of this repository")
    p.add_argument("--download-dir", type=Path, help="keep the downloaded wheels here (default: a temporary folder)")
    p.add_argument("--xz-preset", type=int, default=6, choices=range(10), help="xz compression level (default 6)")
    args = p.parse_args(argv)
    try:
        manifest = make_kit(
            args.out,
            python_version=args.python_version,
            ray_version=args.ray_version,
            project=args.project,
            download_dir=args.download_dir,
            preset=args.xz_preset,
        )
    except KitError as exc:
        print(f"gpu_kit: {exc}", file=sys.stderr)
        return 1
    tree = manifest["ray_tree"]
    print(
        f"Ray {manifest['ray_version']} cp{manifest['python_version'].replace('.', '')}: wheel "
        f"{manifest['ray_wheel_bytes'] / 2**20:.1f} MiB; trimmed tree {tree['unpacked_bytes'] / 2**20:.1f} MiB "
        f"unpacked ({tree['trimmed_bytes'] / 2**20:.1f} MiB left out), {len(tree['executables'])} files with exec bits"
    )
    for name, entry in manifest["files"].items():
        print(f"{entry['bytes'] / 2**20:8.2f} MiB  {name}")
    print(
        f"{manifest['total_bytes'] / 2**20:8.2f} MiB  in all, under {LIMIT / 2**20:.0f} MiB ({manifest['seconds']} s)"
    )
    print(f"kit: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
