"""A base-vs-head job's loop: what it counts, what it says while it runs, and pairs run again for foreign load."""

from __future__ import annotations

import math
import random
from types import SimpleNamespace

from pytest_bpsperf.judge.pairs import FOREIGN, Pair, PairedJob

SETTINGS = dict(tolerance=0.10, confidence=0.99, session_spread=0.25, normalize="off", repeats=1, max_pairs=12,
                foreign_load=0.25)


def spec(**settings):
    return SimpleNamespace(nodeid="t.py::test_x[default]", test="t.py::test_x", trick=SimpleNamespace(name="default"),
                           repeat=0, settings=SimpleNamespace(**{**SETTINGS, **settings}))


def run(img: float, foreign: "float | None" = 0.0):
    """What a pair needs of a run: its img/s, its foreign load, a job to belong to."""
    return SimpleNamespace(img_per_sec=img, foreign_cores=foreign, job=None, spec=spec(),
                           measurement=SimpleNamespace(breakdown=None))


class Runner:
    """Runs pair ``index`` as told: the ratio, whether the base run fails, the foreign load of each arm."""

    def __init__(self, job: PairedJob, ratios, *, fail_base=(), foreign=None, limit=0.25):
        self.job, self.ratios, self.fail_base, self.foreign, self.limit = job, ratios, set(fail_base), foreign, limit
        self.asked = []

    def __call__(self, _spec, index, first):
        self.asked.append(index)
        base_load, head_load = (self.foreign or {}).get(index, (0.0, 0.0))
        pair = Pair(index, first, base=None if index in self.fail_base else run(100.0, base_load),
                    head=run(100.0 * self.ratios(index), head_load))
        if pair.base is None:
            pair.dropped = "base run failed: worker-0 died"
        return self.job.add(pair, foreign_limit=self.limit)


def job_with(ratios, **kw):
    said = []
    job = PairedJob("k", profile_id="p", seed=1, say=said.append, on_verdict=lambda *a: None)
    runner = Runner(job, ratios, **kw)
    job._run_pair = runner  # noqa: SLF001 - the job's own runner, as the gate gives it
    runner(None, 0, job.first_arm(0))
    return job, runner, said


def test_the_progress_counts_valid_pairs_against_max_pairs_whatever_was_dropped():
    rng = random.Random(4)
    # noisy enough to stay undecided: the job runs to max_pairs, replacing two pairs of failed base runs
    job, runner, said = job_with(lambda i: math.exp(rng.gauss(0, 0.3)), fail_base={1, 2})
    job.assert_within_baseline(run(100.0))
    numbers = [int(line.split(": pair ")[1].split(" of at most")[0]) for line in said]
    assert max(numbers) <= SETTINGS["max_pairs"] and job.valid_pairs <= SETTINGS["max_pairs"]
    assert numbers == sorted(numbers) and numbers[-1] == job.valid_pairs
    assert "(2 dropped for a failed base run)" in said[-1]
    assert len(job.pairs) == job.valid_pairs + 2


def test_a_pair_whose_runs_saw_different_foreign_load_is_run_again_and_the_verdict_says_so():
    # pair 0 ran with a neighbour beside its head run: dropped and replaced; the rest agree
    job, runner, said = job_with(lambda i: 1.0 + 0.002 * (i % 3), foreign={0: (0.02, 0.95)})
    job.assert_within_baseline(run(100.0))
    first = job.pairs[0]
    assert first.dropped.startswith(FOREIGN) and "base 0.02, head 0.95 cores" in first.dropped
    assert job.foreign_dropped == 1 and job.valid_pairs == len(job.pairs) - 1
    text = job.verdict.figures()
    assert job.verdict.status == "ok" and "(1 pair run again: its two runs saw different foreign load)" in text
    assert job.verdict.pairs[0]["base_foreign_cores"] == 0.02 and job.verdict.pairs[0]["ratio"] is None


def test_foreign_load_reruns_are_bounded_and_the_rest_are_kept_and_named():
    loud = {i: (0.0, 1.0) for i in range(10)}  # a neighbour beside every head run
    job, runner, said = job_with(lambda i: 1.0 + 0.002 * (i % 3), foreign=loud)
    job.assert_within_baseline(run(100.0))
    assert job.foreign_dropped == PairedJob.MAX_FOREIGN
    assert job.foreign_kept >= 1 and job.verdict.status != "inconclusive"
    assert (f"kept although their runs saw different foreign load (after {PairedJob.MAX_FOREIGN} re-runs)"
            in job.verdict.figures() or "kept although its runs" in job.verdict.figures())


def test_equal_foreign_load_on_both_runs_is_no_reason_to_run_again():
    job, runner, said = job_with(lambda i: 1.0, foreign={i: (1.0, 1.1) for i in range(10)})
    job.assert_within_baseline(run(100.0))
    assert job.foreign_dropped == 0 and job.verdict.status == "ok"
