"""A simulation (a run under the BytePS stand-in of the tests) never becomes a baseline, whatever is asked,
nor a point of the history.

The plugin's own refusal is seen end to end on the simulated GPU cluster (``tests/e2e/test_e2e_gpu_sim.py``);
here ``bpsperf baselines record`` refuses a results file whose runs say they were a simulation.
"""

from __future__ import annotations

import json

from helpers.cli import bpsperf

SIMULATION = "BytePS stand-in (tests/helpers/standin): BytePS's MXNet plugin simulated on CPU MXNet"


def test_baselines_record_refuses_a_simulation_even_forced(results, tmp_path, capsys):
    doc = json.loads(results.read_text())
    doc["simulation"] = SIMULATION
    first = doc["tests"][0]["key"]
    for t in doc["tests"]:
        if t["key"] == first:
            t["simulation"] = SIMULATION
    simulated = tmp_path / "simulated.json"
    simulated.write_text(json.dumps(doc))
    bl = tmp_path / "baselines"
    for extra in ((), ("--force",)):
        code, out, _ = bpsperf(capsys, "baselines", "record", simulated, "--dir", bl, *extra)
        assert code == 1, out
        assert out.count("a simulation is never a baseline") == 1 and SIMULATION in out
        stored = json.loads((bl / "testprof.json").read_text())["entries"]
        assert first not in stored and len(stored) == 1  # the other job, measured for real, is recorded


def test_history_add_refuses_a_simulation(results, tmp_path, capsys):
    doc = json.loads(results.read_text())
    doc["simulation"] = SIMULATION
    simulated = tmp_path / "simulated.json"
    simulated.write_text(json.dumps(doc))
    history = tmp_path / "history"
    code, _out, err = bpsperf(capsys, "history", "add", simulated, "--dir", history, "--commit", "a" * 40)
    assert code == 1 and "is a simulation" in err and SIMULATION in err
    assert not history.exists() or not any(history.rglob("*.json"))
