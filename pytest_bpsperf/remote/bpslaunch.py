"""Run a BytePS worker node's command through ``bpslaunch``, as BytePS users do.

``python -m pytest_bpsperf.remote.bpslaunch [--launcher PATH] COMMAND...``
(the role command of a worker node with setting ``launch=bpslaunch``).
``bpslaunch`` then spawns one process per GPU listed in
``NVIDIA_VISIBLE_DEVICES``, gives each its
``BYTEPS_LOCAL_RANK``/``BYTEPS_LOCAL_SIZE``, pins it to NUMA cores unless
``BYTEPS_NUMA_ON=0`` (with ``numactl``, or ``BYTEPS_VISIBLE_CPU_CORES``), and
creates the trace directories. It joins its arguments into one shell command,
so each argument is quoted here.

``bpslaunch`` is the script installed beside this interpreter (the venv's
``bin``: the one of the BytePS this interpreter imports), else the one on
``PATH``; ``--launcher PATH`` names another file instead, such as BytePS's
``launcher/launch.py`` carried alone to a machine without BytePS
(``scripts/gpu_smoke.py --bpslaunch``). Either runs with this interpreter, so
it need not be executable. Where bpslaunch cannot pin (no numactl, no NUMA
information) the node runs unpinned and says so (:func:`pinning`,
``BPSPERF_PINNING`` in each rank's start record). Where this process may use
only some of the node's CPUs (a container's cpuset, Kubernetes' CPU manager),
bpslaunch's own split would hand numactl CPUs outside it, and numactl fails on
every rank: the ranks are then pinned within the CPUs allowed, through
``BYTEPS_VISIBLE_CPU_CORES`` (:func:`split_within`).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from typing import Sequence

#: Where bpslaunch reads the NUMA nodes' CPUs from (its ``NUMA_PATH``).
NUMA_DIR = "/sys/devices/system/node"
#: What happened to pinning, for the ranks' start records and the reports.
PINNING_ENV = "BPSPERF_PINNING"
#: The first argument that names the launcher to run instead of the installed ``bpslaunch``.
LAUNCHER_OPTION = "--launcher"


def has_numactl() -> bool:
    """Whether bpslaunch will pin through numactl: it asks ``dpkg -s numactl`` (no dpkg: no)."""
    try:
        return subprocess.call(["dpkg", "-s", "numactl"], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT) == 0
    except OSError:
        return False


def node_cpus(numa_dir: str = NUMA_DIR) -> "dict[int, list[int]]":
    """NUMA node -> its CPUs, as bpslaunch reads them (the ``cpuN`` entries of ``nodeN``; else its cpulist)."""
    out: "dict[int, list[int]]" = {}
    if not os.path.isdir(numa_dir):
        return out
    for name in sorted(os.listdir(numa_dir)):
        if not (name.startswith("node") and name[4:].isdigit()):
            continue
        path = os.path.join(numa_dir, name)
        cpus = sorted(int(e[3:]) for e in os.listdir(path) if e.startswith("cpu") and e[3:].isdigit())
        if not cpus and os.path.isfile(os.path.join(path, "cpulist")):
            with open(os.path.join(path, "cpulist"), encoding="ascii") as fh:
                cpus = sorted(_cpu_list(fh.read()))
        out[int(name[4:])] = cpus
    return out


def _cpu_list(text: str) -> "set[int]":
    out: "set[int]" = set()
    for part in text.strip().split(","):
        low, _, high = part.partition("-")
        if low.strip():
            out.update(range(int(low), int(high or low) + 1))
    return out


def _ranges(cpus: "list[int]") -> str:
    """``[0, 1, 2, 5]`` -> ``0-2,5`` (what bpslaunch's BYTEPS_VISIBLE_CPU_CORES parses per rank)."""
    parts, start = [], None
    for i, cpu in enumerate(cpus):
        if start is None:
            start = cpu
        if i + 1 == len(cpus) or cpus[i + 1] != cpu + 1:
            parts.append(str(start) if start == cpu else f"{start}-{cpu}")
            start = None
    return ",".join(parts)


def split_within(allowed: "set[int]", numa: "dict[int, list[int]]", ranks: int) -> "str | None":
    """``BYTEPS_VISIBLE_CPU_CORES`` for ``ranks`` local ranks inside the ``allowed`` CPUs, or None when
    there are fewer allowed CPUs than ranks. The CPUs go NUMA node by node, an equal run each; the last
    rank (BytePS's root, which does the most) also gets what is left."""
    order = [c for node in sorted(numa) for c in numa[node] if c in allowed]
    order += sorted(allowed - set(order))
    each = len(order) // ranks if ranks > 0 else 0
    if each < 1:
        return None
    chunks = [order[i * each : (i + 1) * each] for i in range(ranks - 1)] + [order[(ranks - 1) * each :]]
    return ":".join(_ranges(sorted(c)) for c in chunks)


def pinning(
    environ: "dict[str, str]",
    *,
    numa_dir: str = NUMA_DIR,
    numactl: "bool | None" = None,
    allowed: "set[int] | None" = None,
) -> "tuple[dict[str, str], str]":
    """(variables to set, what happens) for bpslaunch's CPU pinning on this node.

    bpslaunch pins each rank with numactl unless ``BYTEPS_NUMA_ON=0``; without
    numactl it only warns, and without NUMA information (or with more ranks
    than its split can place) its automatic allocation raises. So where it
    cannot pin, pinning is turned off here (``BYTEPS_NUMA_ON=0``) and the
    message says why: the run goes on unpinned, never crashes.
    """
    if environ.get("BYTEPS_NUMA_ON", "1") != "1":
        return {}, "unpinned (BYTEPS_NUMA_ON=0)"
    if not (has_numactl() if numactl is None else numactl):
        return {"BYTEPS_NUMA_ON": "0"}, (
            "unpinned: numactl is not installed on this node (bpslaunch pins through it: apt-get install numactl)"
        )
    override = environ.get("BYTEPS_VISIBLE_CPU_CORES", "").strip()
    if override:
        return {}, f"pinned by numactl to BYTEPS_VISIBLE_CPU_CORES={override}"
    nodes = [n for n in os.listdir(numa_dir) if n.startswith("node")] if os.path.isdir(numa_dir) else []
    if not nodes:
        return {"BYTEPS_NUMA_ON": "0"}, (
            f"unpinned: no NUMA information on this node ({numa_dir} has no node*), "
            "where bpslaunch's own split would raise"
        )
    numa = node_cpus(numa_dir)
    every = {c for cpus in numa.values() for c in cpus}
    if allowed is None:
        allowed = set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else every
    outside = every - allowed
    if not outside:
        return {}, f"pinned by numactl to bpslaunch's split of {len(nodes)} NUMA node(s)"
    # bpslaunch splits every CPU of the NUMA nodes, whatever this container may use: numactl would
    # refuse the CPUs outside its cpuset on every rank
    ranks = len([g for g in environ.get("NVIDIA_VISIBLE_DEVICES", "").split(",") if g.strip()]) or 1
    cores = split_within(allowed, numa, ranks)
    where = f"this process may use {len(allowed)} of the node's {len(every)} CPUs ({_ranges(sorted(allowed))})"
    if cores is None:
        return {"BYTEPS_NUMA_ON": "0"}, f"unpinned: {where}, fewer than its {ranks} local ranks"
    return {"BYTEPS_VISIBLE_CPU_CORES": cores}, (
        f"pinned by numactl to BYTEPS_VISIBLE_CPU_CORES={cores}: {where}, "
        "and bpslaunch's own split would take CPUs outside them"
    )


def find_bpslaunch() -> "str | None":
    """Path of ``bpslaunch`` for this interpreter, or None."""
    beside = os.path.join(os.path.dirname(sys.executable), "bpslaunch")
    return beside if os.path.isfile(beside) else shutil.which("bpslaunch")


def main(argv: "Sequence[str] | None" = None) -> int:
    """Replace this process with ``bpslaunch`` (or ``--launcher PATH``) running ``argv`` (returns only on error)."""
    args = list(sys.argv[1:] if argv is None else argv)
    launcher: "str | None" = None
    if args[:1] == [LAUNCHER_OPTION]:
        launcher, args = (args[1] if len(args) > 1 else ""), args[2:]
        if not os.path.isfile(launcher):
            sys.stderr.write(f"bpsperf: {LAUNCHER_OPTION} {launcher!r}: no such file\n")
            return 2
    if not args:
        sys.stderr.write(
            f"usage: python -m pytest_bpsperf.remote.bpslaunch [{LAUNCHER_OPTION} PATH] COMMAND [ARG...]\n"
        )
        return 2
    launcher = launcher or find_bpslaunch()
    if launcher is None:
        sys.stderr.write(
            "bpsperf: setting launch=bpslaunch, but bpslaunch is not installed on this node (it comes with BytePS): "
            f"none beside {sys.executable}, none on PATH\n"
        )
        return 2
    updates, message = pinning(dict(os.environ))
    os.environ.update(updates)
    os.environ[PINNING_ENV] = message
    print(f"bpsperf: launcher {launcher}", flush=True)
    print(f"bpsperf: bpslaunch: {message}", flush=True)
    sys.stdout.flush()
    # bpslaunch's shebang may name another interpreter: run it with this one.
    os.execv(sys.executable, [sys.executable, launcher, " ".join(shlex.quote(a) for a in args)])
    return 1  # pragma: no cover - execv does not return


if __name__ == "__main__":
    sys.exit(main())
