"""Where each process of a run goes and with what environment and command (pure data, no Ray).

:mod:`.placement` chooses the nodes; :mod:`.planner` turns a placement, a
backend and a trick into one role plan per process, in the vocabulary of
:mod:`pytest_bpsperf.runs.plan`.
"""
