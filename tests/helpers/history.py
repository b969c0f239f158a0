"""A throwaway git repository whose commits each train at their own speed: fed runs over a real history.

:func:`make_history` writes a project (this fed conftest.py, a perf test, a
pytest.ini) and one real commit per entry of ``commits``; each commit's
``speed.json`` says what a step of *its* code costs (``compute_s``,
``sync_s``, ``input_s``), or that it does not run (``"broken": true``). The
fed run (``pytest_bpsperf_run``, :func:`helpers.fakes.fake_run_conftest`)
reads it from the tree of the arm it measures (``spec.arm.tree``: a
worktree of that commit), so a base-vs-head session, and a bisect of such
sessions, measures the commits as the plugin checks them out. A commit may
also write files (``"files": {"bench.py": "..."}``): an entry module that does
not import makes that commit's preflight fail, as real code would.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from helpers.fakes import GATED_TEST, fake_run_conftest
from helpers.repos import git, init

#: The speed and the parts of a step from the arm's tree; 1% noise per run, seeded by the call and FAKE_SEED.
TREE_RUNS = """
import json
import os
import random

CALLS = []


def _facts(config, spec):
    tree = spec.arm.tree if spec.arm is not None else str(config.rootpath)
    with open(os.path.join(tree, "speed.json"), encoding="utf-8") as fh:
        return json.load(fh)


def scenario(config, spec):
    CALLS.append(1)
    facts = _facts(config, spec)
    if os.environ.get("FAKE_SLEEP"):  # a long run, to be interrupted: say it started, then wait
        open(os.environ["FAKE_SLEEP"], "w").close()
        import time
        time.sleep(60)
    if facts.get("broken"):
        from pytest_bpsperf.launch.launcher import RoleFailed
        raise RoleFailed("worker-0 (exit 1) died: ImportError: cannot import name 'layer' (the code under test)")
    rng = random.Random(len(CALLS) * 7919 + int(os.environ.get("FAKE_SEED", "0")))
    step = facts["compute_s"] + facts["sync_s"] + facts.get("input_s", 0.0)
    return STEP_S / step * (1.0 + float(os.environ.get("FAKE_NOISE", "0.01")) * rng.gauss(0, 1))


def breakdown(config, spec):
    facts = _facts(config, spec)
    return {k: facts[k] for k in ("compute_s", "sync_s", "input_s") if k in facts}
"""

#: One step at speed 1: compute 0.2 s, push/pull 0.05 s, no input wait.
FAST = {"compute_s": 0.2, "sync_s": 0.05, "input_s": 0.0}

CONFTEST = fake_run_conftest(step_s=0.25, warmup=1.0, wobble=0.0, extra=TREE_RUNS)

#: What every session of these projects is pinned to (small, one trick, no scaling reference).
SESSION_ARGS = (
    "-p",
    "no:cacheprovider",
    "--bpsperf-steps=8",
    "--bpsperf-batch-size=8",
    "--bpsperf-image-size=32",
    "--bpsperf-omp-threads=2",
    "--bpsperf-no-scaling",
    "--bpsperf-tricks=default",
)


def make_history(path: Path, commits: Sequence[dict], *, ini: str = "") -> "list[str]":
    """The project at ``path`` with one commit per entry of ``commits`` (the first is the harness too);
    each entry: the step's parts (``compute_s``, ...), ``broken``, ``files``, ``subject``. The shas, oldest first."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "conftest.py").write_text(CONFTEST)
    (path / "test_perf.py").write_text(GATED_TEST)
    (path / "pytest.ini").write_text("[pytest]\nmarkers =\n    perf: perf\n" + ini)
    init(path)
    shas = []
    for k, commit in enumerate(commits):
        facts = {key: value for key, value in commit.items() if key not in ("files", "subject")}
        (path / "speed.json").write_text(json.dumps({**FAST, **facts}, sort_keys=True) + "\n")
        for name, text in (commit.get("files") or {}).items():
            (path / name).write_text(text)
        with open(path / "CHANGES.txt", "a", encoding="utf-8") as fh:  # a commit that changes no speed
            fh.write(f"{commit.get('subject') or f'change {k}'}\n")
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", commit.get("subject") or f"change {k}")
        shas.append(git(path, "rev-parse", "HEAD"))
    return shas
