"""``stats/changepoint.py``: where throughput stepped along a history of commits."""

from __future__ import annotations

import math
import random

import pytest

from pytest_bpsperf.stats.changepoint import detect_steps, noise_sigma


def test_step_is_found_at_the_commit_that_caused_it():
    rng = random.Random(1)
    values = [math.log(100) + rng.gauss(0, 0.04) for _ in range(15)]
    values += [math.log(85) + rng.gauss(0, 0.04) for _ in range(15)]
    fit = detect_steps(values)
    assert [s.index for s in fit.steps] == [15]
    assert fit.steps[0].change_pct == pytest.approx(-15, abs=4)
    assert fit.level_at(3) > fit.level_at(20)


def test_slow_creep_shows_as_steps_at_the_commits_that_made_it():
    rng = random.Random(7)
    values = [math.log(100) - 0.04 * (i // 10) + rng.gauss(0, 0.008) for i in range(30)]
    assert [s.index for s in detect_steps(values).steps] == [10, 20]


@pytest.mark.parametrize("seed", range(10))
def test_noise_alone_is_one_segment(seed):
    rng = random.Random(seed)
    fit = detect_steps([rng.gauss(0, 0.1) for _ in range(25)])
    assert fit.steps == ()
    assert len(fit.segments) == 1


def test_small_steps_are_merged_away():
    values = [0.0] * 10 + [0.01] * 10  # a 1% step with no noise at all
    assert detect_steps(values, min_change=0.02).steps == ()
    assert [s.index for s in detect_steps(values, min_change=0.005).steps] == [10]


def test_noise_estimate_ignores_a_step():
    values = [0.0, 0.1] * 10 + [5.0, 5.1] * 10
    assert noise_sigma(values) == pytest.approx(noise_sigma([0.0, 0.1] * 20), rel=0.01)


@pytest.mark.parametrize("bad", [[], [1.0, float("nan")]])
def test_detect_steps_rejects_bad_series(bad):
    with pytest.raises(ValueError, match="finite"):
        detect_steps(bad)
