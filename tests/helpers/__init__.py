"""Helpers of the plugin's own tests, imported by test modules as ``helpers.<module>``.

- ``paths``: the checkout's root and the tests' data;
- ``procs``: finding the processes a run started, to check that none is left;
- ``recdata``: a small ImageNet-style record file;
- scripts run by path, not imported: ``floor_check.py`` (under Ray at its floor), ``actionlint.cjs`` (node).
"""
