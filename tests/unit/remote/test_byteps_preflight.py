"""``remote/byteps_preflight.py``: a node's ``/dev/shm`` is checked before BytePS runs there, and why."""

from __future__ import annotations

import subprocess
import sys

from helpers.byteps_source import byteps_source


def test_the_preflight_refuses_a_node_without_room_in_shared_memory(tmp_path):
    from pytest_bpsperf.remote.byteps_preflight import shm_problems

    problems, notes = shm_problems(str(tmp_path), need=2**62)
    assert len(problems) == 1 and notes == []
    assert "MiB free" in problems[0] and "--shm-size=32768m" in problems[0]
    assert shm_problems(str(tmp_path), need=1) == ([], [])
    problems, _ = shm_problems(str(tmp_path / "absent"))
    assert "does not exist" in problems[0]


def test_the_preflight_refuses_a_node_where_another_byteps_job_holds_its_buffers(tmp_path):
    from pytest_bpsperf.remote.byteps_preflight import shm_problems

    buffer = tmp_path / "BytePS_ShM_0"
    buffer.write_bytes(b"\0" * 4096)
    # left by a killed job: a note, not a refusal (BytePS reuses it by name)
    problems, notes = shm_problems(str(tmp_path), need=1)
    assert problems == [] and "mapped by no process" in notes[0]
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import mmap, sys, time; f = open(sys.argv[1], 'r+b'); "
            "m = mmap.mmap(f.fileno(), 0); print('mapped', flush=True); time.sleep(60)",
            str(buffer),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "mapped"
        problems, _ = shm_problems(str(tmp_path), need=1)
    finally:
        holder.kill()
        holder.wait()
    assert len(problems) == 1 and f"pid {holder.pid}" in problems[0]
    assert "another BytePS job runs on this node" in problems[0] and "operations.cc:351" in problems[0]


def test_byteps_names_its_shared_memory_with_a_fixed_prefix():
    # why the preflight refuses instead of giving each run a prefix: BytePS 0.2.5 has no variable for it
    lines = byteps_source("byteps/common/operations.cc").splitlines()
    assert 'openSharedMemory(std::string("BytePS_ShM_"),' in lines[350]  # operations.cc:351
    assert "getenv" not in byteps_source("byteps/common/shared_memory.cc")
