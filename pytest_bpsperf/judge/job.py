"""Runs and jobs: one run is one bring-up-train-teardown; a job is every run of one configuration.

:class:`RunSpec` is what a test asks for (the argument of the hook
``pytest_bpsperf_run``), :class:`RunResult` what one run measured, and
:class:`Job` holds the runs of one configuration (test, trick, topology,
workload), decides its verdict and runs its own loop of extra runs (to
confirm a regression, or until the verdict is decided). Plain
Python: the pytest layer gives a job its baseline, a way to run again and a
callback for the verdict; a notebook can give its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ..runs.output import RunOutput
from ..runs.spec import RunSpec, run_key
from .measurement import Measurement
from .verdict import CONFIRM, REGRESSION, STOP, Verdict, VerdictSettings, decide_job, next_step

if TYPE_CHECKING:  # pragma: no cover
    from ..stats import BetweenPrior


@dataclass
class RunResult:
    """What one run measured; returned by the ``bpsperf_train`` fixture."""

    spec: RunSpec
    output: RunOutput
    measurement: Measurement
    job: "Job | None" = field(default=None, repr=False)

    @property
    def backend(self) -> str:
        """The backend that ran (``auto`` resolved)."""
        return self.output.backend

    @property
    def key(self) -> str:
        """The key of this run's job and baseline entry."""
        return run_key(self.spec, self.backend)

    @property
    def img_per_sec(self) -> float:
        """Aggregate steady-state images/s (sum over worker processes)."""
        return self.measurement.img_per_sec

    @property
    def per_worker_img_per_sec(self) -> "dict[str, float]":
        """Worker name -> its steady-state img/s."""
        return self.measurement.per_worker_img_per_sec

    @property
    def warmup_steps(self) -> "dict[str, list[int]]":
        """Worker name -> the step indices counted as warm-up."""
        return self.measurement.warmup_steps

    @property
    def bringup_s(self) -> float:
        """Seconds from the run's start until every role process ran."""
        return self.measurement.bringup_s

    @property
    def teardown_s(self) -> float:
        """Seconds to stop every role and remove its actor."""
        return self.measurement.teardown_s

    @property
    def foreign_cores(self) -> "float | None":
        """Cores' worth of CPU that processes outside the run's roles used on its busiest node while it was
        timed (None where not measured: a run from another ``pytest_bpsperf_run``)."""
        return self.output.foreign_cores

    @property
    def log_dir(self) -> str:
        """Directory with one log per role (and the workers' records)."""
        return self.output.log_dir

    @property
    def trick(self) -> str:
        """Name of the trick this run ran under."""
        return self.spec.trick.name

    @property
    def verdict(self) -> "Verdict | None":
        """The verdict of this run's job, once decided."""
        return self.job.verdict if self.job is not None else None

    def assert_within_baseline(self) -> None:
        """Fail when throughput regressed beyond tolerance against the stored baseline (see :class:`Job`)."""
        if self.job is None:
            raise RuntimeError("this result belongs to no job: add it to a Job (bpsperf_train does) first")
        self.job.assert_within_baseline(self)

    def as_dict(self) -> "dict[str, Any]":
        """JSON view of this result (the ``--bpsperf-json`` test entry)."""
        out = {
            "nodeid": self.spec.nodeid,
            "key": self.key,
            "test": self.spec.test,
            "trick": self.spec.trick.name,
            "trick_env": self.spec.trick.as_dict()["env"],
            "repeat": self.spec.repeat,
            "arm": self.spec.arm.name if self.spec.arm is not None else None,
            "pair": self.spec.pair,
            "backend": self.backend,
            "settings": self.spec.settings.as_dict(),
            # where each setting came from: "command line option --bpsperf-tolerance", "default", ...
            "settings_origins": dict(self.spec.settings.origins),
            "topology": dict(self.output.topology),
            "log_dir": self.output.log_dir,
            "roles": [r.as_dict() for r in self.output.roles],
        }
        out.update(self.measurement.as_dict())
        # Per-step series, so that reports and pictures can be made again from the file alone.
        starts = {w.name: w.start for w in self.output.workers}
        out["workers"] = [
            {
                "name": w.name,
                "batch_size": w.batch_size,
                "step_s": list(w.step_seconds),
                "python": starts.get(w.name, {}).get("python"),
                "entry_file": starts.get(w.name, {}).get("entry_file"),
                # seconds from the workload's start to its first step: backend, data, model, kvstore
                "setup_s": starts.get(w.name, {}).get("setup_s"),
                "compute_s": None if w.compute_seconds is None else list(w.compute_seconds),
                "sync_s": None if w.sync_seconds is None else list(w.sync_seconds),
                "warmup_steps": list(w.steady.warmup_steps),
            }
            for w in self.measurement.workers
        ]
        if self.output.single_img_per_sec is not None:
            out["single_img_per_sec"] = self.output.single_img_per_sec
        if self.output.node_img_per_sec is not None:
            out["node_img_per_sec"] = self.output.node_img_per_sec
        if self.output.comm:
            out["timeline"] = {w.name: w.as_dict() for w in self.output.comm}
        if self.output.notes:
            out["exit_notes"] = list(self.output.notes)
        if self.output.load:
            out["foreign_load"] = {
                "cores": round(self.output.foreign_cores or 0.0, 3),
                "nodes": [n.as_dict() for n in self.output.load],
            }
        if self.output.simulation:
            out["simulation"] = self.output.simulation
        if self.verdict is not None:
            out["verdict"] = self.verdict.as_dict()
        return out


#: The job's baseline entry (None when there is none), looked up when first needed.
BaselineLookup = Callable[[], "Mapping[str, Any] | None"]
#: Called with the job, the run that asked, and the verdict (None while repeats are pending).
VerdictCallback = Callable[["Job", RunResult, "Verdict | None"], None]


def this_session() -> "dict[str, object]":
    """This session's software versions and host, as a baseline's recorded session keeps them."""
    import platform

    from ..remote.provenance import software_versions

    return {"versions": software_versions(), "host": platform.node()}


class Job:
    """Every run of one configuration; decides its verdict, running again until it is decided.

    The job's first ``repeats`` runs are the test's parametrized items
    (interleaved with other tricks). Then :func:`~pytest_bpsperf.judge.verdict.next_step`
    says whether to run again: ``rerun(spec)`` runs the configuration once
    more (it adds the run to this job) to confirm a regression (up to
    ``confirm`` times) or because the verdict is not decided yet (up to
    ``max_repeats`` runs). ``on_verdict`` hears every decision; without it a
    regression raises ``AssertionError``.
    """

    def __init__(
        self,
        key: str,
        *,
        profile_id: str,
        baseline: BaselineLookup,
        rerun: "Callable[[RunSpec], RunResult] | None" = None,
        confirm: int = 0,
        on_verdict: "VerdictCallback | None" = None,
        say: "Callable[[str], None] | None" = None,
        prior: "Callable[[], BetweenPrior | None] | None" = None,
    ) -> None:
        self.key = key
        self.profile_id = profile_id
        self.runs: "list[RunResult]" = []
        self.verdict: "Verdict | None" = None
        self.confirmations = 0
        self.adaptive_runs = 0
        self._baseline = baseline
        self._rerun = rerun
        self._confirm = confirm
        self._on_verdict = on_verdict
        self._say = say or (lambda _message: None)
        self._prior = prior or (lambda: None)

    def add(self, run: RunResult) -> RunResult:
        """Make ``run`` one of this job's runs."""
        if run.key != self.key:
            raise ValueError(f"run {run.spec.nodeid} has key {run.key!r}, not this job's {self.key!r}")
        run.job = self
        self.runs.append(run)
        return run

    @property
    def samples(self) -> "list[float]":
        """img/s of every run, in order."""
        return [r.img_per_sec for r in self.runs]

    @property
    def single_img_per_sec(self) -> "float | None":
        """This session's single-process img/s for the job's workload (the latest run's), if measured."""
        for run in reversed(self.runs):
            if run.output.single_img_per_sec:
                return run.output.single_img_per_sec
        return None

    def decide(self) -> Verdict:
        """The verdict over every run so far (a pure function of samples, baseline and settings)."""
        last = self.runs[-1].spec
        return decide_job(
            nodeid=last.nodeid,
            test=last.test,
            trick=last.trick.name,
            profile_id=self.profile_id,
            key=self.key,
            samples=self.samples,
            baseline=self._baseline(),
            settings=VerdictSettings.of(last.settings),
            single_img_per_sec=self.single_img_per_sec,
            prior=self._prior(),
            now=this_session(),
            foreign=[r.foreign_cores for r in self.runs],
            breakdowns=[r.measurement.breakdown for r in self.runs],
        )

    def assert_within_baseline(self, run: RunResult) -> None:
        """Decide once every repeat of ``run`` ran; run again until decided; report the verdict."""
        settings = run.spec.settings
        if run.spec.repeat + 1 < settings.repeats:
            self._report(run, None)
            return
        verdict = self.decide()
        while self._rerun is not None:
            step = next_step(
                verdict,
                confirmations=self.confirmations,
                confirm=self._confirm,
                max_repeats=max(settings.max_repeats, settings.repeats),
            )
            if step == STOP:
                break
            if step == CONFIRM:
                self.confirmations += 1
                why = f"confirming with run {self.confirmations} of {self._confirm}"
            else:
                self.adaptive_runs += 1
                why = (
                    f"not decided at {settings.confidence:.0%}: run {len(self.runs) + 1} of at most "
                    f"{settings.max_repeats}"
                )
            self._say(f"{run.spec.nodeid}: {verdict.figures()}; {why}")
            self._rerun(replace(run.spec, repeat=len(self.runs)))
            verdict = self.decide()
        self.verdict = verdict
        self._report(run, verdict)

    def _report(self, run: RunResult, verdict: "Verdict | None") -> None:
        if self._on_verdict is not None:
            self._on_verdict(self, run, verdict)
        elif verdict is not None and verdict.status == REGRESSION:
            raise AssertionError(verdict.message())


@dataclass(frozen=True)
class RunFailure:
    """A run that produced no measurement: who, and why (the message names roles and logs)."""

    nodeid: str
    reason: str


class Ledger:
    """The session's runs in order, the jobs they belong to, the runs that failed, and notes for the summary.

    The pytest layer's objects share one ledger; they write it through its methods and read its lists.
    """

    def __init__(self) -> None:
        self.runs: "list[RunResult]" = []
        self.jobs: "dict[str, Job]" = {}
        self.failures: "list[RunFailure]" = []
        #: lines for the session's summary: improvements, what was (not) recorded, saved or drawn
        self.notes: "list[str]" = []

    def note(self, line: str) -> None:
        """Add ``line`` to the summary's notes."""
        self.notes.append(line)

    def fail(self, failure: RunFailure) -> None:
        """Keep a run that produced no measurement (for the reports)."""
        self.failures.append(failure)

    def job(self, key: str, new_job: "Callable[[], Job]") -> Job:
        """The job of ``key``, made with ``new_job()`` the first time it is asked for."""
        job = self.jobs.get(key)
        if job is None:
            job = self.jobs[key] = new_job()
        return job

    def keep(self, run: RunResult) -> None:
        """Keep ``run`` in the session's runs, when its job takes it in itself (a base-vs-head pair)."""
        self.runs.append(run)

    def record(self, run: RunResult, new_job: Callable[[RunResult], Job]) -> RunResult:
        """Keep ``run`` and add it to its job (made with ``new_job(run)`` for the job's first run)."""
        job = self.jobs.get(run.key)
        if job is None:
            job = self.jobs[run.key] = new_job(run)
        self.runs.append(run)
        return job.add(run)

    @property
    def verdicts(self) -> "list[Verdict]":
        """The verdicts decided so far, in the order the jobs started."""
        return [j.verdict for j in self.jobs.values() if j.verdict is not None]
