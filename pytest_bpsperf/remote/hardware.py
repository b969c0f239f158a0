"""What a node is: its CPU (vendor, family, model, stepping, vector sets), cores, memory class and GPUs.

Read from ``/proc`` and ``nvidia-smi`` on the node itself: in pytest's process
for this machine, and in a Ray task on each node that hosted roles (an
existing cluster). Only facts that do not change between runs on one machine;
:mod:`pytest_bpsperf.store.profile` names a profile from them.
"""

from __future__ import annotations

import math
import os
import platform
import shutil
import subprocess
from functools import lru_cache
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

__all__ = [
    "CPU_KEYS",
    "HOST_KEYS",
    "PROFILE_SCHEME",
    "VECTOR_FLAGS",
    "as_count",
    "collect_facts",
    "core_count",
    "host_facts",
    "list_gpus",
    "local_gpus",
    "memory_class_gib",
]


GpuLister = Callable[[], Sequence[str]]


def _read_text(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


def _cpu_model(cpuinfo_path: str) -> str:
    text = _read_text(cpuinfo_path)
    if text is not None:
        # x86 says "model name"; some ARM kernels only say "Hardware" or
        # "Processor", which are still stable descriptions of the chip.
        for key in ("model name", "hardware", "processor"):
            for line in text.splitlines():
                name, sep, value = line.partition(":")
                if sep and name.strip().lower() == key:
                    value = " ".join(value.split())
                    # On x86 "processor" is the CPU index, not a model.
                    if value and not value.isdigit():
                        return value
    fallback = " ".join(platform.processor().split())
    return fallback or "unknown"


#: The scheme of the facts: 2 names the CPU by vendor, family, model, stepping and vector
#: instruction sets (profiles without it come from before, see :func:`legacy_id`).
PROFILE_SCHEME = 2


#: The CPU flags the math libraries pick kernels by (oneDNN/MKL-DNN and OpenBLAS dispatch on these),
#: as /proc/cpuinfo spells them: x86 ``flags``, ARM ``Features``.
VECTOR_FLAGS = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx_vnni",
    "avx512f",
    "avx512dq",
    "avx512cd",
    "avx512bw",
    "avx512vl",
    "avx512ifma",
    "avx512vbmi",
    "avx512_vbmi2",
    "avx512_vnni",
    "avx512_bitalg",
    "avx512_vpopcntdq",
    "avx512_bf16",
    "avx512_fp16",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
    "amx_fp16",
    "asimd",
    "asimdhp",
    "asimddp",
    "sve",
    "sve2",
    "bf16",
    "i8mm",
    "sme",
)


#: The facts this scheme added; without them a profile is one of the older scheme.
CPU_KEYS = ("cpu_vendor", "cpu_family", "cpu_model_number", "cpu_stepping", "cpu_isa")


#: /proc/cpuinfo keys of each CPU fact: x86 first, then what ARM kernels write.
_CPUINFO_KEYS = {
    "cpu_vendor": ("vendor_id", "cpu implementer"),
    "cpu_family": ("cpu family", "cpu architecture"),
    "cpu_model_number": ("model", "cpu part"),
    "cpu_stepping": ("stepping", "cpu variant"),
}


def _number(value: str) -> "int | str":
    """``6`` -> 6; ARM's ``0xd0c`` and anything else stays text."""
    return int(value) if value.isdigit() else value


def _cpu_identity(cpuinfo_path: str) -> Dict[str, Any]:
    """Vendor, family, model number, stepping and vector instruction sets of the first CPU in /proc/cpuinfo
    (None where the file does not say; an empty list of sets)."""
    text = _read_text(cpuinfo_path) or ""
    first: Dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if first:
                break  # the first processor's block is enough: every core of a machine is alike
            continue
        name, sep, value = line.partition(":")
        if sep:
            first.setdefault(name.strip().lower(), " ".join(value.split()))
    out: Dict[str, Any] = {}
    for fact, keys in _CPUINFO_KEYS.items():
        found = next((first[k] for k in keys if first.get(k)), None)
        out[fact] = _number(found) if found is not None else None
    flags = set((first.get("flags") or first.get("features") or "").split())
    out["cpu_isa"] = [f for f in VECTOR_FLAGS if f in flags]
    return out


def core_count() -> int:
    """The cores this process may run on (its affinity), which is what the roles get.

    A container limited by affinity must not borrow the host's profile (or its defaults).
    """
    if hasattr(os, "sched_getaffinity"):
        try:
            return len(os.sched_getaffinity(0))
        except OSError:
            pass
    return os.cpu_count() or 1


def memory_class_gib(total_kib: int) -> int:
    """Round total memory (KiB, as /proc/meminfo reports it) to a stable class in GiB.

    The kernel reserves a little memory (1-3%), and how much changes with
    the kernel and firmware, so MemTotal itself is not stable. Rounding to a
    grid whose step is a quarter of the power of two below the value (1 GiB
    minimum) maps the usual sizes to their nominal value: 24684092 KiB
    (23.5 GiB) -> 24, 15.6 -> 16, 62.8 -> 64, 125.8 -> 128, 503 -> 512.
    """
    if total_kib <= 0:
        raise ValueError(f"total memory is {total_kib!r} KiB, expected a number > 0")
    gib = total_kib / (1024 * 1024)
    step = max(1, 2 ** (int(math.floor(math.log2(gib))) - 2)) if gib >= 1 else 1
    return max(1, int(round(gib / step)) * step)


def _memory_total_kib(meminfo_path: str) -> Optional[int]:
    text = _read_text(meminfo_path)
    if text is None:
        return None
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            parts = line.split()
            try:
                value = int(parts[1])
            except (IndexError, ValueError):
                return None
            unit = parts[2].lower() if len(parts) > 2 else "kb"
            return value // 1024 if unit == "b" else value
    return None


def list_gpus() -> List[str]:
    """GPU model names from ``nvidia-smi``, one per GPU; empty when there is none.

    Absence of ``nvidia-smi``, a failing driver or a slow one all mean "no
    GPU facts" rather than an error: a CPU-only box is a normal profile.
    """
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        proc = subprocess.run(
            [exe, "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=15,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    if proc.returncode != 0:
        return []
    return [" ".join(line.split()) for line in proc.stdout.splitlines() if line.strip()]


@lru_cache(maxsize=None)
def local_gpus() -> "tuple[str, ...]":
    """This machine's GPUs (a model name each), detected once per process by :func:`list_gpus`.

    The one detection of this machine's GPUs: the profile's facts and the settings' defaults
    (:class:`pytest_bpsperf.config.settings.Hardware`) count the same ones.
    """
    return tuple(list_gpus())


def as_count(value: Any) -> int:
    """A count from a fact (``4``, ``4.0``, ``"4"``); 0 for anything else."""
    try:
        return int(float(value))
    except (TypeError, ValueError):
        return 0


def _cluster_facts(cluster: Mapping[str, Any]) -> Dict[str, Any]:
    """Summarize a cluster description into stable facts.

    ``cluster["nodes"]`` is a sequence of nodes, each either flat
    (``{"gpus": 4, "cpus": 32}``) or as ``ray.nodes()`` returns them
    (``{"Alive": True, "Resources": {"GPU": 4.0, "CPU": 32.0}}``); dead Ray
    nodes are left out because they hold no work.
    """
    nodes = cluster.get("nodes") if isinstance(cluster, Mapping) else None
    if isinstance(nodes, (str, bytes)) or not isinstance(nodes, Sequence):
        raise ValueError(
            f"cluster is {cluster!r}: expected a mapping with 'nodes', a list of "
            "{'gpus': N, 'cpus': N} or ray.nodes() entries"
        )
    shapes: List[tuple] = []
    for i, node in enumerate(nodes):
        if not isinstance(node, Mapping):
            raise ValueError(f"cluster['nodes'][{i}] is {node!r}, expected a mapping")
        if node.get("Alive") is False:
            continue
        res = node.get("Resources")
        if isinstance(res, Mapping):
            gpus, cpus = as_count(res.get("GPU", 0)), as_count(res.get("CPU", 0))
        else:
            gpus, cpus = as_count(node.get("gpus", 0)), as_count(node.get("cpus", 0))
        shapes.append((gpus, cpus))
    counts: Dict[tuple, int] = {}
    for shape in shapes:
        counts[shape] = counts.get(shape, 0) + 1
    # GPU nodes first, bigger first: the order a reader scans a topology in.
    parts = []
    for (gpus, cpus), count in sorted(counts.items(), key=lambda kv: (-kv[0][0], -kv[0][1])):
        kind = f"{gpus}gpu-{cpus}cpu" if gpus else f"cpu-{cpus}cpu"
        parts.append(f"{count}x{kind}")
    return {
        "nodes": len(shapes),
        "gpu_nodes": sum(1 for g, _ in shapes if g),
        "cpu_nodes": sum(1 for g, _ in shapes if not g),
        "gpus_per_node": sorted({g for g, _ in shapes if g}),
        "topology": "+".join(parts) or "empty",
    }


def collect_facts(
    *,
    cpuinfo_path: str = "/proc/cpuinfo",
    meminfo_path: str = "/proc/meminfo",
    gpu_lister: Optional[GpuLister] = None,
    cluster: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """Collect the stable hardware facts that identify this machine (and cluster).

    Keys: ``cpu_model``, ``cpu_vendor``, ``cpu_family``, ``cpu_model_number``,
    ``cpu_stepping``, ``cpu_isa`` (the :data:`VECTOR_FLAGS` it has), ``arch``,
    ``cores`` (cores this process may use), ``memory_gib_class`` (see
    :func:`memory_class_gib`; None when unknown), ``gpu_model`` (None without
    GPUs; models joined by ``" + "`` when mixed), ``gpu_count``,
    ``profile_scheme``, and ``cluster`` (see ``_cluster_facts``) when a cluster
    description is given. ``gpu_lister`` defaults to :func:`local_gpus`.
    """
    names = list((gpu_lister or local_gpus)())
    models = sorted(set(names))
    total_kib = _memory_total_kib(meminfo_path)
    facts: Dict[str, Any] = {
        "cpu_model": _cpu_model(cpuinfo_path),
        **_cpu_identity(cpuinfo_path),
        "profile_scheme": PROFILE_SCHEME,
        "arch": platform.machine() or "unknown",
        "cores": core_count(),
        "memory_gib_class": memory_class_gib(total_kib) if total_kib else None,
        "gpu_model": " + ".join(models) if models else None,
        "gpu_count": len(names),
    }
    if cluster is not None:
        facts["cluster"] = _cluster_facts(cluster)
    return facts


HOST_KEYS = ("cpu_model", *CPU_KEYS, "arch", "cores", "memory_gib_class", "gpu_model", "gpu_count")


def host_facts(local: Mapping[str, Any], accelerator: Optional[str], gpus: int) -> Dict[str, Any]:
    """The stable facts of one node that hosted roles: its own :func:`collect_facts`, with the
    GPU model Ray knows (``accelerator_type:*``) and the GPU count Ray schedules, which win
    over what ``nvidia-smi`` said there."""
    out = {k: local.get(k) for k in HOST_KEYS}
    if accelerator:
        out["gpu_model"] = accelerator
    out["gpu_count"] = int(gpus)
    if not out["gpu_count"]:
        out["gpu_model"] = None
    return out
