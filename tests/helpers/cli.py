"""The ``bpsperf`` command called in this process."""

from __future__ import annotations

from pytest_bpsperf.cli import main


def bpsperf(capsys, *args):
    """(exit status, stdout, stderr) of ``bpsperf ARGS...``; ``capsys`` is pytest's fixture."""
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def another_session(results, out, date: str = "2030-01-02T03:04:05Z"):
    """A copy of the results file ``results`` dated ``date``: its runs as a session of another day
    (recording one file twice adds its session once), at ``out``; returns ``out``."""
    import json
    from pathlib import Path

    doc = json.loads(Path(results).read_text())
    doc["date"] = date
    Path(out).write_text(json.dumps(doc))
    return out
