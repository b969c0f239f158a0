"""Made-up results: worker step records, a run's output and a finished run result (no run, no Ray).

``steps`` gives step dicts (warm-up steps, then steady ones with an optional jitter, each split into
compute and sync), ``job_output`` the output of a run of those workers, ``make_result`` a run result of a
trick measured from them, ``speed`` times as fast as the default.
"""

from __future__ import annotations

from pytest_bpsperf.config.settings import Hardware, Source, resolve
from pytest_bpsperf.config.tricks import TrickRegistry
from pytest_bpsperf.judge.job import RunResult
from pytest_bpsperf.judge.measurement import measure
from pytest_bpsperf.runs.output import RoleOutcome, RunOutput, worker_records_from
from pytest_bpsperf.runs.spec import RunSpec

TEST = "tests/test_x.py::test_x"


def steps(warmup, steady, n_steady=8, jitter=0.0, compute_frac=0.6, warm_compute=None):
    """Step dicts: warm-up step times, then ``n_steady`` steps around ``steady`` seconds."""
    out = []
    for t in warmup:
        c = warm_compute if warm_compute is not None else t * compute_frac
        out.append({"total_s": t, "compute_s": c, "sync_s": t - c})
    for i in range(n_steady):
        t = steady * (1 + (jitter if i % 2 else -jitter))
        out.append({"total_s": t, "compute_s": t * compute_frac, "sync_s": t * (1 - compute_frac)})
    return out


def job_output(workers, *, bringup=3.0, teardown=1.0, wall=20.0, topology=None, comm=(), single=None):
    """The output of a run whose workers wrote ``workers`` (and a scheduler), with these harness timings."""
    roles = tuple(RoleOutcome(w.name, "worker", w.node, 0, f"/logs/{w.name}.log") for w in workers) + (
        RoleOutcome("scheduler", "scheduler", "node-0", 0, "/logs/scheduler.log"),
    )
    return RunOutput(
        workers=tuple(workers),
        roles=roles,
        bringup_s=bringup,
        teardown_s=teardown,
        wall_s=wall,
        log_dir="/logs",
        topology=topology or {"workers": len(workers), "worker_processes": len(workers), "servers": 1},
        backend="mxnet",
        comm=comm,
        single_img_per_sec=single,
    )


REGISTRY = TrickRegistry()


def make_result(
    trick="default",
    *,
    speed=1.0,
    repeat=0,
    test=TEST,
    jitter=0.04,
    workers=2,
    batch=8,
    settings_values=None,
    comm=(),
    single=None,
    skew=0.0,
):
    """A run result of ``trick`` from ``workers`` workers, each step 0.5 s / ``speed`` (one warm-up, ten steady)."""
    s = resolve([Source("cli", "command line", settings_values or {})], Hardware(gpus=0, cores=2))
    records = [
        worker_records_from(
            f"worker-{i}", steps([2.0], 0.5 / speed * (1 + skew), n_steady=10, jitter=jitter), batch_size=batch
        )
        for i in range(workers)
    ]
    output = job_output(records, comm=comm, single=single)
    suffix = trick if not repeat and not settings_values else f"{trick}-r{repeat + 1}"
    req = RunSpec(
        nodeid=f"{test}[{suffix}]", test=test, trick=REGISTRY.get(trick), repeat=repeat, settings=s, log_dir="/logs"
    )
    return RunResult(spec=req, output=output, measurement=measure(output))
