"""The per-look levels computed ahead (pytest_bpsperf/stats/look_levels.json): the simulation's own
output, read instead of simulating, never used when made with another design."""

from __future__ import annotations

import json

import pytest

from pytest_bpsperf.stats import rule
from pytest_bpsperf.stats import sequential as paired


@pytest.fixture
def no_simulation(monkeypatch):
    """Any simulation from here on fails the test: only the file may answer."""
    def refuse(*args):
        raise AssertionError(f"simulated {args}")

    monkeypatch.setattr(paired, "_smallest_p", refuse)


def test_the_file_holds_the_defaults_and_is_of_todays_design():
    doc = json.loads(paired.LEVELS_FILE.read_text())
    assert doc["design"] == paired.simulation_design()
    for alpha in ((1 - 0.99) / 2, rule.TOLERANCE_LEVEL):  # the default confidence and the tolerance checks
        assert paired.level_key("ancova", 3, 20, alpha) in doc["levels"]


@pytest.mark.parametrize("design", [(3, 20, (1 - 0.99) / 2), (3, 20, rule.TOLERANCE_LEVEL), (4, 12, (1 - 0.95) / 2)])
def test_a_shipped_level_is_the_number_the_simulation_gives(design):
    first, last, alpha = design
    shipped = paired.computed_levels()[paired.level_key("ancova", first, last, alpha)]
    assert shipped == paired.simulated_look_level(first, last, alpha, "ancova")


def test_a_session_of_a_shipped_design_reads_the_level_and_simulates_nothing(no_simulation):
    level = paired.look_level(3, 20, (1 - 0.99) / 2)
    assert 0 < level < 0.005  # stricter per look than over all looks
    c = paired.paired_compare([paired.PairRuns(i, 0.0, 0.01 * (i % 2), i % 2 == 0) for i in range(5)],
                              tolerance=0.1, confidence=0.99, first_look=3, last_look=20)
    assert c.looks == 3


def test_a_design_the_file_lacks_is_simulated(no_simulation):
    with pytest.raises(AssertionError, match="simulated"):
        paired.look_level(3, 41, 0.005)


def test_a_file_of_another_design_or_unreadable_is_not_used(tmp_path, monkeypatch):
    other = tmp_path / "look_levels.json"
    doc = json.loads(paired.LEVELS_FILE.read_text())
    doc["design"]["seed"] += 1
    other.write_text(json.dumps(doc))
    monkeypatch.setattr(paired, "LEVELS_FILE", other)
    paired.computed_levels.cache_clear()
    try:
        assert paired.computed_levels() == {}
        other.write_text("{not json")
        paired.computed_levels.cache_clear()
        assert paired.computed_levels() == {}
    finally:
        monkeypatch.undo()
        paired.computed_levels.cache_clear()
    assert paired.computed_levels()  # the shipped file again
