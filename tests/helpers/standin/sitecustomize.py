"""Runs at the start of every Python process that has the BytePS stand-in first on its path (see
``_bpsperf_simulation``): the process is marked as a simulation, and MXNet's GPUs map to the CPU."""

import _bpsperf_simulation

_bpsperf_simulation.install()
