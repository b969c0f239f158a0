"""Tests of ``pytest_bpsperf/backends/``: ``test_<module>.py`` for each module, ``test_init.py`` for ``__init__.py``."""
