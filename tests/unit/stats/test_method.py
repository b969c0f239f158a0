"""``stats/method.py``: the one statistical method, a t interval on the difference of mean log throughput.

The first tests pin what ``session_difference`` gave before it was split into one function per case:
the expected values were produced by the function at ea4e940 (one body for all three cases), on the
same inputs; the split functions must reproduce them.
"""

from __future__ import annotations

import math
import random

import pytest

from pytest_bpsperf.stats import (
    log_difference,
    method,
)
from pytest_bpsperf.stats.method import BetweenPrior as P
from pytest_bpsperf.stats.method import session_difference

# --- session_difference: one function per case ------------------------------------------------

#: (name, baseline sessions, current runs, keywords,
#:  (diff, margin, dof, sd, p_value, between_sd, margin_limit),
#:  (estimated, between_assumed, sessions, between_source), description)
SESSION_CASES = [
    (
        "within, estimated",
        [[100.0, 102.0, 98.0]],
        [95.0, 97.0, 96.0],
        dict(),
        (
            -0.04072480545705748,
            0.03615196699660565,
            4.0,
            0.01594734795473526,
            0.0352656124376932,
            0.0,
            0.01804579144192723,
        ),
        (True, False, 1, "none"),
        "pooled SD of log img/s 0.0159 from both groups (4 dof), t=2.776",
    ),
    (
        "within, several sessions pooled",
        [[100.0, 101.0], [99.0, 103.0]],
        [100.5, 99.5],
        dict(confidence=0.99),
        (
            -0.007377199466556128,
            0.06003402873116822,
            4.0,
            0.015056450232666316,
            0.6017808871362578,
            0.0,
            0.019391422858363774,
        ),
        (True, False, 1, "none"),
        "pooled SD of log img/s 0.0151 from both groups (4 dof), t=4.604",
    ),
    (
        "within, assumed",
        [[100.0]],
        [90.0],
        dict(default_rel_noise=0.1),
        (
            -0.10536051565782678,
            0.26418148538053843,
            float("inf"),
            0.09531017980432487,
            0.43440837120358844,
            0.0,
            0.18680451977651352,
        ),
        (False, False, 1, "none"),
        "too few runs to estimate noise (0 dof): assumed default relative noise 10% per run (SD of log 0.0953), "
        "z=1.960",
    ),
    (
        "within, equal",
        [[50.0, 50.0]],
        [50.0, 50.0],
        dict(),
        (0.0, 0.0, 2.0, 0.0, 1.0, 0.0, 0.0),
        (True, False, 1, "none"),
        "pooled SD of log img/s 0.0000 from both groups (2 dof), t=4.303",
    ),
    (
        "one session, assumed",
        [[100.0, 101.0, 99.5]],
        [97.0, 96.5, 98.0],
        dict(session_spread=0.05, confidence=0.99),
        (
            -0.03040896049166797,
            0.17848018503639582,
            57967.41616268844,
            0.007734340170220443,
            0.6607522071165406,
            0.04879016416943201,
            0.17810328123724112,
        ),
        (True, True, 1, "assumed"),
        "SD of log img/s within a session 0.0077 (pooled, 4 dof); between sessions: assumed SD of log 0.0488 "
        "(session_spread 5%; the baseline has 1 recorded session and nothing else was measured); t=2.576 "
        "(57967.4 dof) (Welch-Satterthwaite)",
    ),
    (
        "one session, assumed, no runs noise",
        [[100.0]],
        [104.0],
        dict(session_spread=0.02),
        (
            0.039220713153280684,
            0.6209417608581747,
            float("inf"),
            0.22314355131420976,
            0.9014754231014366,
            0.019802627296179712,
            0.440784233384487,
        ),
        (False, True, 1, "assumed"),
        "too few runs to estimate noise (0 dof): assumed default relative noise 25% per run (SD of log 0.2231); "
        "between sessions: assumed SD of log 0.0198 (session_spread 2%; the baseline has 1 recorded session and "
        "nothing else was measured); z=1.960 (Welch-Satterthwaite)",
    ),
    (
        "one session, prior",
        [[100.0, 101.0, 99.5]],
        [97.0, 96.5],
        dict(session_spread=0.05, prior=P(0.0004, 6.0, 7, 2, "2 other jobs")),
        (
            -0.03468912224047127,
            0.06938971955497417,
            6.524782835306912,
            0.006566616680838862,
            0.27196418665815225,
            0.02,
            0.06925051132248057,
        ),
        (True, False, 1, "pooled"),
        "SD of log img/s within a session 0.0066 (pooled, 3 dof); between sessions: SD of log 0.0200 pooled from "
        "2 other jobs (6 dof; the baseline has 1 recorded session); t=2.400 (6.5 dof) (Welch-Satterthwaite)",
    ),
    (
        "several sessions",
        [[100.0, 101.0, 99.0], [103.0, 104.0, 102.5], [98.0, 99.5, 98.5]],
        [95.0, 96.0, 95.5],
        dict(session_spread=0.05, confidence=0.99),
        (
            -0.0519467686957098,
            0.2622475355300936,
            2.0,
            0.007776265939564052,
            0.18821805813754228,
            0.022438538688277554,
            0.2622475355300936,
        ),
        (True, False, 3, "estimated"),
        "SD of log img/s within a session 0.0078 (pooled, 8 dof); between sessions: SD of log 0.0224 estimated "
        "from 3 recorded sessions (session means as units); t=9.925 (2.0 dof) (the session means' dof)",
    ),
    (
        "several sessions, prior",
        [[100.0, 101.0], [103.0, 104.0]],
        [101.0, 102.5, 101.5],
        dict(session_spread=0.05, prior=P(0.0001, 12.0, 9, 3, "the history")),
        (
            -0.0031719429162357926,
            0.032370615112122234,
            13.0,
            0.0072248548088416084,
            0.8356308510351074,
            0.011116549878879847,
            0.032370615112122234,
        ),
        (True, False, 2, "pooled"),
        "SD of log img/s within a session 0.0072 (pooled, 4 dof); between sessions: SD of log 0.0111 estimated "
        "from 2 recorded sessions (session means as units), pooled with the history (12 dof); t=2.160 (13.0 dof) "
        "(the session means' dof)",
    ),
    (
        "several sessions, one current run",
        [[100.0, 101.0], [103.0, 104.0], [99.0, 98.0]],
        [97.0],
        dict(session_spread=0.1),
        (
            -0.038538674664203576,
            0.12555663729509933,
            2.0,
            0.007017029914159271,
            0.3174788932569619,
            0.024404377499290208,
            0.12372831316862926,
        ),
        (True, False, 3, "estimated"),
        "SD of log img/s within a session 0.0070 (pooled, 3 dof); between sessions: SD of log 0.0244 estimated "
        "from 3 recorded sessions (session means as units); t=4.303 (2.0 dof) (the session means' dof)",
    ),
]


def _case_function(name: str):
    if name.startswith("within"):
        return lambda runs, kw: method._within_one_session(runs, kw.get("confidence", 0.95))
    if name.startswith("one session"):
        return lambda runs, kw: method._one_recorded_session(
            runs, kw.get("confidence", 0.95), kw["session_spread"], kw.get("prior")
        )
    return lambda runs, kw: method._several_recorded_sessions(runs, kw.get("confidence", 0.95), kw.get("prior"))


def _check(result, numbers, flags, description, prior) -> None:
    got = (result.diff, result.margin, result.dof, result.sd, result.p_value, result.between_sd, result.margin_limit)
    assert got == pytest.approx(numbers, rel=1e-12, abs=1e-15)
    assert (result.estimated, result.between_assumed, result.sessions, result.between_source) == flags
    assert result.description == description
    assert result.prior == prior


@pytest.mark.parametrize(
    "name, sessions, current, kw, numbers, flags, description", SESSION_CASES, ids=[c[0] for c in SESSION_CASES]
)
def test_session_difference_gives_what_it_gave_before_the_split(
    name, sessions, current, kw, numbers, flags, description
):
    result = session_difference(sessions, current, **{"confidence": 0.95, **kw})
    _check(result, numbers, flags, description, kw.get("prior") if "session_spread" in kw else None)
    assert result.confidence == kw.get("confidence", 0.95)


@pytest.mark.parametrize(
    "name, sessions, current, kw, numbers, flags, description", SESSION_CASES, ids=[c[0] for c in SESSION_CASES]
)
def test_each_case_function_gives_what_the_one_function_gave(name, sessions, current, kw, numbers, flags, description):
    import math

    logs = [[math.log(x) for x in s] for s in sessions]
    if "session_spread" not in kw:
        logs = [[x for s in logs for x in s]]  # within one session the recorded sessions are one group
    runs = method._pool_within(logs, [math.log(x) for x in current], kw.get("default_rel_noise", 0.25))
    result = _case_function(name)(runs, kw)
    _check(result, numbers, flags, description, kw.get("prior") if "session_spread" in kw else None)
    assert result == session_difference(sessions, current, **{"confidence": 0.95, **kw})


def test_session_difference_checks_its_inputs_before_any_case():
    with pytest.raises(ValueError, match="confidence is 1.0"):
        session_difference([[1.0]], [1.0], confidence=1.0)
    with pytest.raises(ValueError, match="session_spread is -0.1"):
        session_difference([[1.0]], [1.0], session_spread=-0.1, confidence=0.95)
    with pytest.raises(ValueError, match="base has no sessions"):
        session_difference([], [1.0], names=("base", "head"), confidence=0.95)
    with pytest.raises(ValueError, match="head"):
        session_difference([[1.0]], [-1.0], names=("base", "head"), confidence=0.95)


# --- the pytest layer's objects: each writes only its own state, the others ask it through methods --------


def test_log_difference_matches_reference():
    # Reference: scipy.stats.ttest_ind(log b, log a, equal_var=True) on these data.
    a = [1.2, 3.4, 2.2, 5.1, 3.3]
    b = [2.0, 2.5, 2.9, 3.1, 2.2, 2.8]
    d = log_difference(a, b, confidence=0.95)
    assert d.dof == 9
    assert d.p_value == pytest.approx(0.7832260231045712, abs=1e-10)
    assert d.diff / (d.sd * math.sqrt(1 / 5 + 1 / 6)) == pytest.approx(-0.2834743752444079, rel=1e-9)
    assert not d.beyond_noise


def test_log_difference_degenerate_cases():
    assert log_difference([1.0, 1.0], [1.0, 1.0], confidence=0.95).p_value == 1.0
    d = log_difference([2.0, 2.0], [1.0, 1.0], confidence=0.95)
    assert d.p_value == 0.0 and d.beyond_noise
    single = log_difference([1.0], [2.0], confidence=0.95)
    assert not single.estimated and "assumed" in single.description


def test_pooled_between_recovers_the_spread_and_counts_degrees_of_freedom():
    from pytest_bpsperf.stats import pooled_between

    rng = random.Random(3)
    groups = []
    for _ in range(40):
        groups.append(
            [[100 * math.exp(s + rng.gauss(0, 0.02)) for _ in range(3)] for s in (rng.gauss(0, 0.06) for _ in range(4))]
        )
    prior = pooled_between(groups + [[[100.0, 101.0]]])  # a group of one session adds nothing
    assert prior.dof == 40 * 3 and prior.groups == 40 and prior.sessions == 160
    assert prior.sd == pytest.approx(0.06, rel=0.15)
    assert pooled_between([[[100.0, 101.0]], []]) is None
