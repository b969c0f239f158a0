"""One run as data: what a test asks for, the plan of its processes, what its roles produced.

The contract between the pytest layer, the ``pytest_bpsperf_run`` hook, the
backends and the launcher:

- :mod:`.spec`: :class:`~.spec.RunSpec`, what one run is asked to be;
- :mod:`.plan`: where each process of the run goes, with what environment and command;
- :mod:`.output`: :class:`~.output.RunOutput`, each role's outcome and each worker's step records.

Plain data: no Ray, no pytest.
"""
