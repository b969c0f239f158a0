"""Run a BytePS worker node's command through ``bpslaunch``, as BytePS users do.

``python -m pytest_bpsperf.remote.bpslaunch COMMAND...`` (the role command of a
worker node with setting ``launch=bpslaunch``). ``bpslaunch`` then spawns one
process per GPU listed in ``NVIDIA_VISIBLE_DEVICES``, gives each its
``BYTEPS_LOCAL_RANK``/``BYTEPS_LOCAL_SIZE``, pins it to NUMA cores unless
``BYTEPS_NUMA_ON=0`` (with ``numactl``, or ``BYTEPS_VISIBLE_CPU_CORES``), and
creates the trace directories. It joins its arguments into one shell command,
so each argument is quoted here.

``bpslaunch`` is the script installed beside this interpreter (the venv's
``bin``), else the one on ``PATH``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from typing import Sequence


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
    sys.stdout.flush()
    # bpslaunch's shebang may name another interpreter: run it with this one.
    os.execv(sys.executable, [sys.executable, launcher, " ".join(shlex.quote(a) for a in args)])
    return 1  # pragma: no cover - execv does not return


if __name__ == "__main__":
    sys.exit(main())
