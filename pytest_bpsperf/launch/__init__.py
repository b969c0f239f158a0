"""The driver side of Ray: bring a run's roles up, watch them, tear them down, say why a run failed.

:mod:`.session` owns the cluster and the runs of a pytest session; it places
each run (:mod:`pytest_bpsperf.planning`), reserves it (:mod:`.reservation`),
runs its roles (:mod:`.launcher`, :mod:`.watchdog`) and says why a run failed
(:mod:`.diagnose`, :mod:`.local_roles`).
"""
