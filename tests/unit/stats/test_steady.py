"""``stats/steady.py``: which training steps are warm-up and which measure throughput.

The first two tests pin the results ``detect_steady_state`` gave before it was split into parts.
"""

from __future__ import annotations

import random

import pytest

from pytest_bpsperf.stats import (
    detect_steady_state,
)

_DESCRIBED = (
    "step 0 plus leading steps slower than {}x the median of the last half ({} s; threshold max(25%, 3 "
    "robust sigmas)) until {} consecutive settled steps: "
)
#: (name, step seconds, min_steady, warm-up steps, reliable, method), as detect_steady_state said before the split
STEADY_CASES = [
    ("one step", [2.0], 3, 0, False, "only 1 step: it is kept although it includes warm-up"),
    ("too short", [2.0, 0.1, 0.1], 3, 1, False, "only 3 steps: dropped step 0, kept 2 < min_steady=3; run more steps"),
    (
        "warm-up then flat",
        [5.0, 1.0, 0.11, 0.1, 0.1, 0.102, 0.099, 0.1, 0.101, 0.1],
        3,
        2,
        True,
        _DESCRIBED.format("1.25", "0.1", 3) + "2 warm-up, 8 steady",
    ),
    (
        "uneven warm-up",
        [5.0, 0.1, 0.4, 0.1, 0.1, 0.1, 0.1, 0.1],
        3,
        3,
        True,
        _DESCRIBED.format("1.25", "0.1", 3) + "3 warm-up, 5 steady",
    ),
    (
        "never settled",
        [1.0, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 1.0],
        10,
        1,
        False,
        _DESCRIBED.format("1.25", "0.1", 10) + "never settled, kept the last 10 of 11 steps",
    ),
    (
        "drifting",
        [1.0] + [0.1 * (1 + 0.03 * i) for i in range(16)],
        3,
        1,
        False,
        _DESCRIBED.format("1.25", "0.1345", 3) + "1 warm-up, 16 steady; still drifting (18% between the halves of "
        "the steady region)",
    ),
]


@pytest.mark.parametrize(
    "name, times, min_steady, warmup, reliable, described", STEADY_CASES, ids=[c[0] for c in STEADY_CASES]
)
def test_detect_steady_state_gives_what_it_gave_before_the_split(name, times, min_steady, warmup, reliable, described):
    from pytest_bpsperf.stats.steady import detect_steady_state

    state = detect_steady_state(times, min_steady=min_steady)
    assert state.warmup_steps == tuple(range(warmup))
    assert state.steady_steps == tuple(range(warmup, len(times)))
    assert (state.reliable, state.method) == (reliable, described)


def test_steady_state_parts():
    from pytest_bpsperf.stats import steady

    assert steady._too_short(1, 3).steady_steps == (0,)
    assert steady._too_short(3, 3).warmup_steps == (0,)
    assert steady._first_settled([True, False, True, False, False, False], 3) == 3
    assert steady._first_settled([True, False, False, False], 3) == 1
    assert steady._first_settled([True, False, True, False, False], 3) is None
    assert steady._first_settled([True, False, False], 3) is None  # step 0 never counts
    assert steady._drift_note([0.1, 0.2, 0.3], 0.1) == ""  # halves of 1 step: not judged
    assert steady._drift_note([0.1] * 8, 0.1) == ""
    assert steady._drift_note([0.1, 0.1, 0.1, 0.1, 0.2, 0.2, 0.2, 0.2], 0.1).startswith("; still drifting (100%")


def _noisy(rng: random.Random, centre: float, rel_noise: float, n: int) -> list:
    return [centre * (1.0 + rng.uniform(-rel_noise, rel_noise)) for _ in range(n)]


def test_slow_first_steps_are_warmup():
    times = [5.0, 2.0, 1.5, 1.0, 1.02, 0.98, 1.01, 1.0, 0.99, 1.0, 1.0]
    st = detect_steady_state(times)
    assert st.warmup_steps == (0, 1, 2)
    assert st.steady_steps == tuple(range(3, 11))
    assert st.reliable
    assert "3 warm-up" in st.method


def test_flat_series_keeps_all_but_step_0():
    st = detect_steady_state([1.0] * 10)
    assert st.warmup_steps == (0,)
    assert st.steady_steps == tuple(range(1, 10))
    assert st.reliable


def test_step_0_is_warmup_even_when_fast():
    # A cached graph can make step 0 fast; it still includes the connection.
    st = detect_steady_state([0.5] + [1.0] * 9)
    assert st.warmup_steps == (0,)


def test_uneven_warmup_needs_a_settled_run():
    # A single fast step inside the warm-up must not end it.
    st = detect_steady_state([8, 3, 1, 2.5, 1, 1, 1, 1, 1, 1, 1, 1])
    assert st.warmup_steps == (0, 1, 2, 3)


def test_late_spike_does_not_discard_the_measurement():
    st = detect_steady_state([8] + [1] * 8 + [10] + [1] * 8)
    assert st.warmup_steps == (0,)
    assert 9 in st.steady_steps


@pytest.mark.parametrize("seed", range(8))
def test_noisy_series_finds_the_warmup(seed):
    rng = random.Random(seed)
    times = [10.0, 3.0, 2.5] + _noisy(rng, 0.5, 0.2, 40)
    st = detect_steady_state(times)
    assert st.warmup_steps == (0, 1, 2)
    assert st.reliable


def test_noisy_series_rarely_misjudged():
    # Statistical property over many seeds, not a lucky pick of seeds.
    wrong = 0
    for seed in range(300):
        rng = random.Random(1000 + seed)
        times = [10.0, 3.0, 2.5] + _noisy(rng, 0.5, 0.4, 30)
        st = detect_steady_state(times)
        wrong += st.warmup_steps != (0, 1, 2) or not st.reliable
    assert wrong / 300 < 0.05


def test_drifting_series_is_unreliable():
    st = detect_steady_state([2 - i / 20 for i in range(21)])
    assert not st.reliable
    assert "drifting" in st.method


def test_never_settling_series_keeps_last_min_steady():
    # Step 1 is still slow and no run of 5 settled steps fits after it: the
    # last min_steady steps are kept anyway, flagged as unreliable.
    st = detect_steady_state([9.0, 9.0, 1.0, 1.0, 1.0, 1.0], min_steady=5)
    assert st.warmup_steps == (0,)
    assert st.steady_steps == (1, 2, 3, 4, 5)
    assert not st.reliable
    assert "never settled" in st.method


def test_too_few_steps_is_unreliable():
    st = detect_steady_state([5.0, 1.0, 1.0], min_steady=3)
    assert st.warmup_steps == (0,)
    assert st.steady_steps == (1, 2)
    assert not st.reliable
    single = detect_steady_state([5.0])
    assert single.steady_steps == (0,) and not single.reliable


def test_min_steady_is_respected():
    st = detect_steady_state([9, 9, 9, 9, 9, 9, 9, 1, 1, 1], min_steady=3)
    assert len(st.steady_steps) >= 3
    assert st.steady_steps == (7, 8, 9)


@pytest.mark.parametrize("bad", [[], [1.0, -1.0, 1.0, 1.0], [1.0, float("nan"), 1.0, 1.0], ["x"]])
def test_steady_state_rejects_bad_input(bad):
    with pytest.raises(ValueError):
        detect_steady_state(bad)
