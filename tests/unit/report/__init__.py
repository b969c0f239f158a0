"""Tests of ``pytest_bpsperf/report/``: ``test_<module>.py`` for each module, ``test_init.py`` for ``__init__.py``."""
