"""Operating characteristics of the verdict: false alarms on unchanged code, and drops caught.

A seeded simulation drives the real decision (:func:`pytest_bpsperf.verdict.decide`)
and the real stopping rule of a job (:func:`pytest_bpsperf.verdict.next_step`)
with throughput drawn from noise levels of real recorded runs. log img/s of a
run is::

    machine speed of the session (shared with the single-process reference)
  + residual session effect (not shared)
  + run effect + mean of the steady steps' noise
  (+ the change under test, in the current session)

Noise levels (SD of log img/s):

- between runs: pooled from the committed baselines file's samples (5 runs
  of each of 4 tricks: 0.127, 16 dof); of that, within-run step noise of 10%
  per step over 19 steady steps is 0.023, the rest is the run effect;
- between sessions: the issue saw ``omp-passive`` at +35% a day after its
  baseline with unchanged code (n=5 each); read as a one-SD difference of two
  session means that is ``log(1.35) / sqrt(2) = 0.21``;
- with ``normalize=single`` the machine speed cancels; what is left is
  assumed (the lead measures it): a residual session effect of 1.5% and the
  single-process reference's own noise of 1.5% (one measurement per
  session), together 2.1%.

Each simulated test is one job with one trick: a baseline of recorded
sessions of 3 runs each, then the current session's runs as the job asks for
them. The figures are stated in the README ("What the verdicts can detect").
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_bpsperf.store.entries import session_samples
from pytest_bpsperf.verdict import CONFIRM, REGRESSION, STOP, decide, next_step

BASELINES = Path(__file__).resolve().parents[1] / "baselines" / "cpu-amd-epyc-2c-24g-1n-x86-64-994d8926.json"


def pooled_run_sd() -> float:
    """SD of log img/s between runs of one session, pooled over the committed sessions of 5 runs.

    Sessions of fewer runs (the 2-run sessions recorded since) add little and
    would move the documented figure with every recording.
    """
    entries = json.loads(BASELINES.read_text())["entries"].values()
    ss, dof = 0.0, 0
    for entry in entries:
        for samples in (s for s in session_samples(entry) if len(s) >= 5):
            logs = [math.log(x) for x in samples]
            mean = sum(logs) / len(logs)
            ss += sum((x - mean) ** 2 for x in logs)
            dof += len(logs) - 1
    return math.sqrt(ss / dof)


RUN_SD = pooled_run_sd()
STEP_SD, STEADY_STEPS = 0.10, 19
RUN_EFFECT_SD = math.sqrt(RUN_SD ** 2 - STEP_SD ** 2 / STEADY_STEPS)
SESSION_SD = math.log(1.35) / math.sqrt(2.0)  # machine speed of the day (raw img/s)
RESIDUAL_SD = 0.015  # session effect left after normalize=single (assumed)
SINGLE_SD = 0.015  # noise of the single-process reference (assumed)
DROP = math.log(0.85)


@dataclass(frozen=True)
class Gate:
    """The settings of a gate, as the job sees them."""

    normalize: str = "off"
    recorded_sessions: int = 1
    repeats: int = 1
    max_repeats: int = 4
    confirm: int = 2
    confidence: float = 0.99
    tolerance: float = 0.15
    session_spread: float = 0.25


def _run(rng: random.Random, session: float) -> float:
    steps = sum(rng.gauss(0.0, STEP_SD) for _ in range(STEADY_STEPS)) / STEADY_STEPS
    return session + rng.gauss(0.0, RUN_EFFECT_SD) + steps


def _session(rng: random.Random, normalize: str) -> "tuple[float, float]":
    """(session effect on the distributed runs, log single-process reference)."""
    machine, residual = rng.gauss(0.0, SESSION_SD), rng.gauss(0.0, RESIDUAL_SD)
    return machine + residual, machine + rng.gauss(0.0, SINGLE_SD)


def simulate_test(rng: random.Random, gate: Gate, change: float) -> "tuple[str, int]":
    """One job against a freshly recorded baseline: (verdict status, runs taken)."""
    sessions = []
    for _ in range(gate.recorded_sessions):
        effect, single = _session(rng, gate.normalize)
        sessions.append({"samples": [math.exp(_run(rng, effect)) for _ in range(3)],
                         "single_img_per_sec": math.exp(single)})
    entry = {"sessions": sessions}
    effect, single = _session(rng, gate.normalize)
    samples = [math.exp(_run(rng, effect + change)) for _ in range(gate.repeats)]
    confirmations = 0
    while True:
        verdict = decide(nodeid="t", test="t", trick="x", profile_id="p", key="k", samples=samples,
                         baseline=entry, tolerance=gate.tolerance, confidence=gate.confidence,
                         session_spread=gate.session_spread, normalize=gate.normalize,
                         single_img_per_sec=math.exp(single))
        step = next_step(verdict, confirmations=confirmations, confirm=gate.confirm,
                         max_repeats=max(gate.max_repeats, gate.repeats))
        if step == STOP:
            return verdict.status, len(samples)
        confirmations += step == CONFIRM
        samples.append(math.exp(_run(rng, effect + change)))


def rates(gate: Gate, trials: int, seed: int) -> "tuple[float, float, float]":
    """(false alarms on unchanged code, share of 15% drops caught, mean runs per job on unchanged code)."""
    rng = random.Random(seed)
    null = [simulate_test(rng, gate, 0.0) for _ in range(trials)]
    drop = [simulate_test(rng, gate, DROP) for _ in range(trials)]
    false_alarms = sum(s == REGRESSION for s, _ in null) / trials
    caught = sum(s == REGRESSION for s, _ in drop) / trials
    return false_alarms, caught, sum(n for _, n in null) / trials


def test_noise_levels_come_from_the_committed_runs():
    assert RUN_SD == pytest.approx(0.1274, abs=1e-3)
    assert RUN_EFFECT_SD < RUN_SD
    assert SESSION_SD == pytest.approx(0.212, abs=1e-3)


def test_default_gate_keeps_false_alarms_below_one_percent_but_cannot_see_15_percent_across_days():
    # Defaults, a baseline of one recorded session, raw img/s: the assumed 25%
    # between sessions covers the +35% days, so unchanged code does not fail;
    # the price is that a 15% drop cannot be told from a slow day.
    false_alarms, caught, runs = rates(Gate(), trials=600, seed=1)
    assert false_alarms <= 0.01
    assert caught < 0.10
    assert runs < 1.5  # undecidable from one session: more runs would not help, so none are spent


def test_recorded_sessions_estimate_the_day_to_day_spread_without_false_alarms():
    false_alarms, caught, _ = rates(Gate(recorded_sessions=10), trials=500, seed=2)
    assert false_alarms <= 0.01
    assert caught < 0.3  # a day-to-day SD of 21% hides a 15% drop however many runs


def test_normalized_gate_with_recorded_sessions_keeps_false_alarms_and_catches_more():
    # normalize=single, a baseline of 10 recorded sessions, at least 3 and up to 8 runs per job:
    # the best trade-off found (45% caught). It does NOT reach 90% for a 15% drop: runs of one session
    # spread 12.7% here, and 90% power at 1% false alarms needs the SD of the difference
    # below log(0.85) / (2.33 + 1.28) = 0.045, i.e. about 17 runs per job.
    gate = Gate(normalize="single", recorded_sessions=10, repeats=3, max_repeats=8)
    false_alarms, caught, runs = rates(gate, trials=400, seed=3)
    assert false_alarms <= 0.01
    assert 0.3 <= caught < 0.9
    assert 3 <= runs < 8
