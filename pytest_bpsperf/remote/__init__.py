"""Code that runs in processes other than pytest's: inside role actors, as a worker, as the reaper.

Nothing here imports the driver-side modules; the driver imports these only
for constants and to name the entry points (``python -m pytest_bpsperf.remote.workload``).
"""
