"""``launch/machine_lock.py``: one measurement at a time per machine; a second session waits and says so."""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers.paths import ROOT
from pytest_bpsperf.launch.machine_lock import LockError, MachineLock


def test_second_session_waits_for_the_lock_and_says_so(tmp_path):
    path = str(tmp_path / "measure.lock")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys, time; sys.path.insert(0, %r)\n"
                "from pytest_bpsperf.launch.machine_lock import MachineLock\n"
                "MachineLock(%r).acquire(5); print('held', flush=True); time.sleep(3)\n"
            )
            % (str(ROOT), path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        said = []
        lock = MachineLock(path)
        waited = lock.acquire(60, said.append, poll=0.1)
        assert lock.held and waited > 0.5
        assert len(said) == 1 and "waiting for the measurement lock" in said[0] and f"pid {holder.pid}" in said[0]
        lock.release()
        assert not lock.held
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("target_exists", [True, False], ids=["to-a-file", "dangling"])
def test_a_symlink_at_the_lock_path_is_refused_and_its_target_left_alone(tmp_path, target_exists):
    # /run/lock and /tmp are shared: a link planted there must not make the plugin create,
    # truncate or lock the file it points to.
    import fcntl

    target = tmp_path / "precious"
    if target_exists:
        target.write_text("keep me\n")
    link = tmp_path / "measure.lock"
    link.symlink_to(target)
    lock = MachineLock(str(link))
    with pytest.raises(LockError, match="symbolic link") as info:
        lock.acquire(1, poll=0.1)
    assert str(link) in str(info.value) and not lock.held
    if target_exists:
        assert target.read_text() == "keep me\n"
        with open(target) as fh:  # not locked either
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    else:
        assert not target.exists()
