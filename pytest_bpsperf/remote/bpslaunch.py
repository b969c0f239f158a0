"""Run a BytePS worker node's command through ``bpslaunch``, as BytePS users do.

``python -m pytest_bpsperf.remote.bpslaunch COMMAND...`` (the role command of a
worker node with setting ``launch=bpslaunch``). ``bpslaunch`` then spawns one
process per GPU listed in ``NVIDIA_VISIBLE_DEVICES``, gives each its
``BYTEPS_LOCAL_RANK``/``BYTEPS_LOCAL_SIZE``, pins it to NUMA cores unless
``BYTEPS_NUMA_ON=0`` (with ``numactl``, or ``BYTEPS_VISIBLE_CPU_CORES``), and
creates the trace directories. It joins its arguments into one shell command,
so each argument is quoted here.

``bpslaunch`` is the script installed beside this interpreter (the venv's
``bin``), else the one on ``PATH``. Where bpslaunch cannot pin (no numactl,
no NUMA information) the node runs unpinned and says so (:func:`pinning`,
``BPSPERF_PINNING`` in each rank's start record).
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


def has_numactl() -> bool:
    """Whether bpslaunch will pin through numactl: it asks ``dpkg -s numactl`` (no dpkg: no)."""
    try:
        return subprocess.call(["dpkg", "-s", "numactl"], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT) == 0
    except OSError:
        return False


def pinning(environ: "dict[str, str]", *, numa_dir: str = NUMA_DIR, numactl: "bool | None" = None) \
        -> "tuple[dict[str, str], str]":
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
        return {"BYTEPS_NUMA_ON": "0"}, ("unpinned: numactl is not installed on this node (bpslaunch pins "
                                         "through it: apt-get install numactl)")
    override = environ.get("BYTEPS_VISIBLE_CPU_CORES", "").strip()
    if override:
        return {}, f"pinned by numactl to BYTEPS_VISIBLE_CPU_CORES={override}"
    nodes = [n for n in os.listdir(numa_dir) if n.startswith("node")] if os.path.isdir(numa_dir) else []
    if not nodes:
        return {"BYTEPS_NUMA_ON": "0"}, (f"unpinned: no NUMA information on this node ({numa_dir} has no node*), "
                                         "where bpslaunch's own split would raise")
    return {}, f"pinned by numactl to bpslaunch's split of {len(nodes)} NUMA node(s)"


def find_bpslaunch() -> "str | None":
    """Path of ``bpslaunch`` for this interpreter, or None."""
    beside = os.path.join(os.path.dirname(sys.executable), "bpslaunch")
    return beside if os.path.isfile(beside) else shutil.which("bpslaunch")


def main(argv: "Sequence[str] | None" = None) -> int:
    """Replace this process with ``bpslaunch`` running ``argv`` (returns only on error)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        sys.stderr.write("usage: python -m pytest_bpsperf.remote.bpslaunch COMMAND [ARG...]\n")
        return 2
    launcher = find_bpslaunch()
    if launcher is None:
        sys.stderr.write("bpsperf: setting launch=bpslaunch, but bpslaunch is not installed on this node "
                         "(it comes with BytePS)\n")
        return 2
    updates, message = pinning(dict(os.environ))
    os.environ.update(updates)
    os.environ[PINNING_ENV] = message
    print(f"bpsperf: bpslaunch: {message}", flush=True)
    sys.stdout.flush()
    # bpslaunch's shebang may name another interpreter: run it with this one.
    os.execv(sys.executable, [sys.executable, launcher, " ".join(shlex.quote(a) for a in args)])
    return 1  # pragma: no cover - execv does not return


if __name__ == "__main__":
    sys.exit(main())
