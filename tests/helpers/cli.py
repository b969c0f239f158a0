"""The ``bpsperf`` command called in this process."""

from __future__ import annotations

from pytest_bpsperf.cli import main


def bpsperf(capsys, *args):
    """(exit status, stdout, stderr) of ``bpsperf ARGS...``; ``capsys`` is pytest's fixture."""
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err
