"""pytest-bpsperf: performance-regression tests for parameter-server training.

The plugin (entry point ``pytest11``) lives in :mod:`pytest_bpsperf.plugin`;
the modules it glues together are plain Python and importable on their own.
"""

__version__ = "0.1.0"
