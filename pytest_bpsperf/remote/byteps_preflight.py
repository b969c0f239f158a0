"""The BytePS preflight's worker: the node's ``/dev/shm`` checked, then one push_pull of a small tensor.

``python -m pytest_bpsperf.remote.byteps_preflight RECORDS``

One worker process on one GPU, started by the launcher beside a real scheduler
and server before anything is timed (``backends.byteps.PushPullProbe``). First
it checks what BytePS needs of the node's shared memory (:func:`shm_problems`),
then it declares a tensor and push_pulls it through the job's server, as every
training step does, and writes the records of one "step" (the launcher counts
it as a finished worker). Every BytePS call is made as BytePS 0.2.5.post15's
source says, cited beside it. Exit status 2 with a one-line reason when the
node cannot run BytePS.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Sequence

#: Where BytePS opens its shared buffers (``shm_open``, so under /dev/shm on Linux).
SHM_DIR = "/dev/shm"
#: The shared memory a BytePS worker node needs at least. BytePS opens one buffer per declared
#: tensor, the tensor's size, under a fixed prefix (byteps/common/operations.cc:351,
#: byteps/common/shared_memory.cc:31-36): every gradient and every parameter, twice the model's
#: bytes (ResNet-50 in fp32: about 205 MB), where Docker gives a container 64 MB unless told
#: otherwise (``--shm-size``). 512 MiB holds ResNet-50 with room; bigger models need more.
SHM_NEED_BYTES = 512 * 2**20
#: The names of BytePS's shared buffers (byteps/common/operations.cc:351, shared_memory.cc:56).
SHM_PREFIXES = ("BytePS_ShM_", "BytePS_Pcie")


def mapped_by(directory: str, prefixes: Sequence[str] = SHM_PREFIXES, proc: str = "/proc") -> "dict[int, list[str]]":
    """Pid -> the files under ``directory`` named with ``prefixes`` that the process has mapped.

    Read from ``/proc/<pid>/maps`` of the processes this user may read; this process left out.
    """
    marks = [os.path.join(directory, p) for p in prefixes]
    found: "dict[int, list[str]]" = {}
    for entry in os.listdir(proc):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(os.path.join(proc, entry, "maps"), encoding="utf-8", errors="replace") as fh:
                paths = {line.split(maxsplit=5)[-1].strip() for line in fh if "/" in line}
        except OSError:
            continue
        hits = sorted(p for p in paths if any(p.startswith(m) for m in marks))
        if hits:
            found[int(entry)] = hits
    return found


def shm_problems(directory: str = SHM_DIR, need: int = SHM_NEED_BYTES) -> "tuple[list[str], list[str]]":
    """(why BytePS cannot run on this node, notes) for its shared memory at ``directory``.

    A problem: no ``directory``, less than ``need`` bytes free there, or the buffers of
    another BytePS job mapped by a live process (BytePS's fixed names would have two jobs
    write into each other's buffers). A note: buffers that a killed job left, mapped by nobody
    (BytePS reuses them by name; they only take space).
    """
    if not os.path.isdir(directory):
        return [f"{directory} does not exist: BytePS keeps its buffers in shared memory there"], []
    stat = os.statvfs(directory)
    free = stat.f_bavail * stat.f_frsize
    problems, notes = [], []
    if free < need:
        problems.append(
            f"{directory} has {free / 2**20:.0f} MiB free (of {stat.f_blocks * stat.f_frsize / 2**20:.0f} MiB); "
            f"BytePS needs at least {need / 2**20:.0f} MiB there for its buffers (one per gradient and parameter, "
            "byteps/common/operations.cc:351): give the container --shm-size=32768m, as BytePS's own tutorial "
            "does (docs/step-by-step-tutorial.md:56)"
        )
    ours = sorted(n for n in os.listdir(directory) if n.startswith(SHM_PREFIXES))
    if ours:
        users = mapped_by(directory)
        if users:
            pids = ", ".join(f"pid {pid} ({len(files)} buffer(s))" for pid, files in sorted(users.items()))
            problems.append(
                f"another BytePS job runs on this node: its buffers in {directory} ({ours[0]}, ...) are mapped by "
                f"{pids}. BytePS 0.2.5 names them with a fixed prefix (byteps/common/operations.cc:351), so two "
                "jobs on one node write into each other's buffers: wait until it ends, or run each job in a "
                "container of its own IPC namespace (no --ipc=host)"
            )
        else:
            notes.append(
                f"{len(ours)} BytePS buffer(s) a killed job left in {directory} ({ours[0]}, ...), mapped by "
                "no process: BytePS reuses them by name"
            )
    return problems, notes


PREFLIGHT_TENSOR = "bpsperf.preflight"


def push_pull_once() -> "tuple[float, float]":
    """(seconds, value) of one push_pull of a tensor of ones from this process, through the job's server."""
    import byteps.mxnet as bps
    import mxnet as mx

    bps.init()  # byteps/mxnet/__init__.py:28 (ops.py:34): before anything else of BytePS
    x = mx.nd.ones((1024,), ctx=mx.gpu(bps.local_rank()))  # BytePS set this GPU (global.cc:188)
    # Declared before its push_pull: BytePS looks the name up and aborts the process when it is
    # not there (byteps/mxnet/ops.cc:109, byteps/common/global.cc:405-409), as its own tests
    # declare first (tests/test_mxnet.py:76-77).
    bps.byteps_declare_tensor(PREFLIGHT_TENSOR)  # byteps/mxnet/ops.py:82
    t0 = time.perf_counter()
    bps.byteps_push_pull(x, name=PREFLIGHT_TENSOR, is_average=False)  # byteps/mxnet/ops.py:48
    x.wait_to_read()
    return time.perf_counter() - t0, float(x.asnumpy()[0])


def main(argv: "Sequence[str] | None" = None) -> int:
    """Check the node, push_pull once, write the records; the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        sys.stderr.write("usage: python -m pytest_bpsperf.remote.byteps_preflight RECORDS\n")
        return 2
    problems, notes = shm_problems()
    for note in notes:
        print(f"bpsperf preflight: {note}", flush=True)
    if problems:
        sys.stderr.write("".join(f"bpsperf preflight: {p}\n" for p in problems))
        return 2
    seconds, value = push_pull_once()
    with open(args[0], "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"event": "start", "batch_size": 1}) + "\n")
        fh.write(json.dumps({"event": "step", "step": 0, "total_s": seconds, "images": 1, "value": value}) + "\n")
        fh.write(json.dumps({"event": "end"}) + "\n")
    if abs(value - 1.0) > 1e-6:
        sys.stderr.write(f"bpsperf preflight: push_pull returned {value}, expected 1.0 from one worker\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
