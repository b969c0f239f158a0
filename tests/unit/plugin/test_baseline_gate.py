"""``plugin/baseline_gate.py`` without a session: writing the baselines keeps an I/O error for the summary.

The baseline gate in sessions is in ``tests/pytester/test_baseline_gate.py``.
"""

from __future__ import annotations


def test_write_baselines_keeps_an_io_error_for_the_summary():
    from pytest_bpsperf.judge.job import Ledger
    from pytest_bpsperf.plugin.baseline_gate import BaselineGate

    class Gate:
        ledger, update_failed, asked = Ledger(), False, []

        def update_baselines(self, interrupted):
            self.asked.append(interrupted)
            raise OSError(28, "No space left on device")

    gate = Gate()
    BaselineGate.write_baselines(gate, interrupted=True)
    assert (gate.asked, gate.update_failed) == ([True], True)
    assert gate.ledger.notes == ["baselines NOT written: [Errno 28] No space left on device"]
