"""Foreign load named: a real CPU hog beside one run of a base-vs-head session, with real roles.

The user's repository has a conftest.py whose ``pytest_bpsperf_run`` wrapper starts
two busy processes (as many as the machine's cores, at most two) just before the
head run of the session's second pair and kills them after it: a neighbour that
starts in the middle of a session. That run records the CPU the hogs took on its
node while it trained, the pair is run again (its two runs saw different foreign
load), the verdict says so, and the report lines give every run's foreign load
beside its img/s. The session is A/A (base = HEAD) with a small MLP, so it is short.

That the hogged run stands out, and that its pair (and only for it) is run
again, needs the other runs quiet: where one of them saw more foreign load
than the session allows while other processes ran, the test checks what holds
on a loaded machine and skips naming the load (:mod:`helpers.machine_load`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.entries import ENTRY
from helpers.machine_load import OthersWatch, too_busy
from helpers.procs import role_processes
from helpers.repos import git, init

pytest.importorskip("mxnet")
pytest.importorskip("ray")

PERF_TEST = """import pytest

pytestmark = pytest.mark.perf


def test_bench(bpsperf_train):
    bpsperf_train().assert_within_baseline()
"""

#: The foreign load (cores) a run may see before the plugin names it, and a pair whose runs differ more is run again.
FOREIGN_LIMIT = 0.3

# scaling on: a base-vs-head session must skip the reference all the same
INI = f"""[pytest]
markers =
    perf: performance tests
bpsperf_entry = bench:build
bpsperf_steps = 60
bpsperf_batch_size = 8
bpsperf_image_size = 16
bpsperf_omp_threads = 1
bpsperf_scaling = on
bpsperf_tolerance = 25%
bpsperf_max_pairs = 3
bpsperf_foreign_load = {FOREIGN_LIMIT}
"""

HOG = """import os, signal, subprocess, sys, time

import pytest

HOG_FILE = os.environ["HOG_FILE"]


def _ticks(pid):
    with open(f"/proc/{pid}/stat", "rb") as fh:
        fields = fh.read().rsplit(b")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


@pytest.hookimpl(hookwrapper=True)
def pytest_bpsperf_run(config, spec):
    hog = spec.arm is not None and spec.arm.name == "head" and spec.pair == 1 and not os.path.exists(HOG_FILE)
    procs = []
    if hog:  # a neighbour per core (two at most), from just before this run until just after it
        code = "while True: pass"
        procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(min(2, os.cpu_count() or 1))]
        started = time.monotonic()
    outcome = yield
    if hog:
        ticks = sum(_ticks(p.pid) for p in procs)
        for p in procs:
            p.send_signal(signal.SIGKILL)
            p.wait()
        with open(HOG_FILE, "w") as fh:
            fh.write(f"{ticks / os.sysconf('SC_CLK_TCK')} {time.monotonic() - started} {len(procs)}")
"""


@pytest.fixture
def user_repo(tmp_path) -> Path:
    repo = tmp_path / "user-repo"
    repo.mkdir()
    # 60 extra products a step, 60 steps: seconds of training, so that the launcher's polls see it run
    (repo / "bench.py").write_text(ENTRY.format(extra=60))
    (repo / "test_perf.py").write_text(PERF_TEST)
    (repo / "pytest.ini").write_text(INI)
    (repo / "conftest.py").write_text(HOG)
    init(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "training step")
    return repo


def test_a_cpu_hog_beside_one_run_is_named_and_its_pair_run_again(user_repo, tmp_path):
    out, hog_file, logs = tmp_path / "r.json", tmp_path / "hog.txt", tmp_path / "logs"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BPSPERF_", "PYTEST_", "GITHUB_"))}
    env.pop("PYTHONPATH", None)  # the installed plugin, not this checkout
    env["HOG_FILE"] = str(hog_file)
    with OthersWatch() as others_cpu:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                "-v",
                "--bpsperf-base=HEAD",
                f"--bpsperf-json={out}",
                f"--bpsperf-log-dir={logs}",
            ],
            cwd=user_repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,  # a few minutes here; ten beside two CPU burners on two busy cores (its pairs run again)
        )
    text = proc.stdout + proc.stderr
    assert proc.returncode in (0, 1) and out.exists(), text  # an A/A verdict; the load is the point here
    hog_s, hog_wall, hogs = (float(x) for x in hog_file.read_text().split())
    doc = json.loads(out.read_text())
    (job,) = doc["base_vs_head"]["jobs"]
    hogged = next(t for t in doc["tests"] if t["arm"] == "head" and t["pair"] == 1)
    # on any machine: every run records its foreign load, and its report line gives it beside its img/s
    assert all(t.get("foreign_load") for t in doc["tests"]), doc["tests"]
    (node,) = hogged["foreign_load"]["nodes"]
    unhogged = [t["foreign_load"]["cores"] for t in doc["tests"] if t is not hogged]
    quiet = max(unhogged)
    print(
        f"hogs {hogs}: {hog_s:.1f} CPU-s in {hog_wall:.1f} s; run foreign {hogged['foreign_load']['cores']:.2f} "
        f"cores over {node['window_s']:.1f} s; the other runs' foreign load {unhogged}; other processes' CPU up "
        f"to {others_cpu.peak:.2f} cores"
    )
    lines = [line for line in text.splitlines() if ": " in line and " img/s (worker-0 " in line]
    assert len(lines) == len(doc["tests"]) and all("; foreign load " in line for line in lines), lines
    # the hogs' CPU while the run trained is in its foreign load. They ran the whole run, but during its timed
    # window the roles took cores from them (2 hogs, 4 roles, 2 cores): their rate there is below their average
    # over their life (0.69 of it in one run here), never near zero
    hog_rate = hog_s / hog_wall
    assert node["foreign_s"] / node["window_s"] >= 0.5 * hog_rate, (node, hog_s, hog_wall)
    # a base-vs-head session runs no scaling reference, and leaves nothing running
    assert not (logs / "reference").exists() and all(t.get("single_img_per_sec") is None for t in doc["tests"])
    assert role_processes(doc["session_info"]["run_id"]) == []
    busy = too_busy(unhogged, FOREIGN_LIMIT, others_cpu)
    if busy:
        pytest.skip(f"{busy}: the hogged run's load cannot stand out, nor its pair alone be run again")
    # and no more than they burnt with what the quiet runs saw
    assert node["foreign_s"] / node["window_s"] <= hog_rate + quiet + 0.1, (node, hog_s, hog_wall)
    assert hogged["foreign_load"]["cores"] > quiet + FOREIGN_LIMIT  # beyond the setting: what made the pair run again
    row = job["pair_table"][1]
    assert row["dropped"].startswith("foreign load differed: base ") and row["ratio"] is None, row
    assert row["head_foreign_cores"] - row["base_foreign_cores"] > FOREIGN_LIMIT
    assert len(job["pair_table"]) >= 4 and job["pairs"] == 3  # run again: 3 valid pairs all the same
    assert (
        "pair run again: its two runs saw different foreign load" in text
        or "pairs run again: their two runs saw different foreign load" in text
    ), text
