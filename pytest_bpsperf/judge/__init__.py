"""From what the roles wrote to verdicts: records, measurement, jobs, verdicts, base against head.

:mod:`.records` is what a run of the roles produced; :mod:`.measurement` turns
it into img/s and the compute/sync split; :mod:`.job` owns the runs of one
test's job, :mod:`.verdict` decides against the stored baseline and
:mod:`.pairs` between the arms of a base-vs-head job; :mod:`.offline` makes the
same decisions from files.
"""
