"""The pytest layer: small plugin objects, each registering only its own hooks.

- :mod:`.config`: options, settings per test, tricks, parametrization, ordering;
- :mod:`.runner`: the Ray session and the runs (the default ``pytest_bpsperf_run``);
- :mod:`.gate`: jobs, verdicts against the baselines, recording baselines;
- :mod:`.reporting`: the terminal summary and the report files.

:mod:`pytest_bpsperf.plugin` creates them in ``pytest_configure`` and wires them.
"""
