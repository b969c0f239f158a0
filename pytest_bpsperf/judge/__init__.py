"""From what the roles wrote to verdicts: measurement, jobs, verdicts, base against head.

:mod:`.measurement` turns a run's output (:mod:`pytest_bpsperf.runs.output`)
into img/s and the compute/sync split; :mod:`.job` owns the runs of one
test's job, :mod:`.verdict` decides against the stored baseline and
:mod:`.pairs` between the arms of a base-vs-head job; :mod:`.offline` makes the
same decisions from files.
"""
