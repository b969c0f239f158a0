"""Fed runs: a project's ``pytest_bpsperf_run`` that returns finished records without Ray.

:func:`fake_run_conftest` returns the source of such a conftest.py, for pytester
projects that test options, verdicts and reports in milliseconds. Its records
have the shape the real workload writes (``pytest_bpsperf/remote/workload.py``):
a ``start`` record that names the timing, one ``step`` record per step, an
``end`` record. In the default timing, ``overlapped``, a step record has only
``total_s`` and ``images``; with ``timing="breakdown"`` it also has
``compute_s`` and ``sync_s`` (the serialized diagnostic), as
:func:`pytest_bpsperf.judge.measurement.measure_worker` reads them. A run whose
``breakdown(config, spec)`` gives the parts of a step adds the ``diagnostic``
records the workload writes after its timed steps (setting ``breakdown_steps``).

:func:`perf_test` returns the source of a perf test module such a project runs.
"""

from __future__ import annotations

import pytest

TIMINGS = ("overlapped", "breakdown")

#: The fed run itself; the import and the constants above it come from :func:`fake_run_conftest`.
_RUN = '''

def scenario(config, spec):
    """This run's factor on the speed; a test's extra source redefines it (to log the call, sleep, raise)."""
    return 1.0


def single_img_per_sec(config, spec):
    """The single-process img/s of this run (the scaling reference); none unless redefined."""
    return None


def foreign_load(config, spec):
    """Cores of CPU that others used on this run's node while it was timed; None (not measured) unless redefined."""
    return None


def _load(cores):
    """The run's NodeLoad: a 10 s window on node-0 (2 cores) with ``cores`` of others beside 1.5 of the roles."""
    if cores is None:
        return ()
    return (NodeLoad(node="node-0", window_s=10.0, busy_s=10.0 * (1.5 + cores), roles_s=15.0, cpus=2),)


def breakdown(config, spec):
    """Seconds per diagnostic step of each part ({"input_s": .., "compute_s": .., "sync_s": ..}); None
    (unless redefined): the run trains no diagnostic steps, as with breakdown_steps=0."""
    return None


def _step_s(i, step_s):
    """Step 0 is WARMUP times slower; the others alternate WOBBLE above and below ``step_s``."""
    if i == 0:
        return step_s * WARMUP
    return step_s * (1 + WOBBLE if i % 2 else 1 - WOBBLE)


def _worker(name, node, steps, step_s, batch_size, parts=None, diagnostic_steps=0):
    """The records one worker writes: start (with the timing), one per step, the diagnostic steps
    (``parts`` each, when given), end."""
    records = [{"event": "start", "batch_size": batch_size, "steps": steps, "timing": TIMING}]
    for i in range(steps):
        total = _step_s(i, step_s)
        record = {"event": "step", "step": i, "total_s": total, "images": batch_size}
        if TIMING == "breakdown":  # the serialized step: forward+backward, then push/pull
            compute = total * (0.5 if i == 0 else 0.6)
            record.update(compute_s=compute, sync_s=total - compute)
        records.append(record)
    for k in range(diagnostic_steps if parts else 0):
        values = {"input_s": None, "compute_s": None, "sync_s": None, "unsplit_s": None, **parts}
        total = sum(v for v in values.values() if v is not None)
        records.append({"event": "diagnostic", "step": k, "images": batch_size, "total_s": total, **values})
    records.append({"event": "end", "steps": steps})
    return WorkerRecords(name=name, node=node, records=tuple(records))


def pytest_bpsperf_run(config, spec):
    speed = scenario(config, spec)
    for part in spec.trick.parts:
        speed *= SPEED_BY_TRICK.get(part, 1.0)
    s = spec.settings
    parts = breakdown(config, spec)
    workers = tuple(_worker(f"worker-{i}", f"node-{i}", s.steps, STEP_S / speed, s.batch_size, parts,
                            s.breakdown_steps) for i in range(WORKERS or s.workers))
    roles = tuple(RoleOutcome(w.name, "worker", w.node, 0, spec.log_dir + "/" + w.name + ".log") for w in workers)
    return RunOutput(workers=workers, roles=roles, bringup_s=1.0, teardown_s=0.5, wall_s=8.0, log_dir=spec.log_dir,
                     topology={"workers": len(workers), "worker_processes": len(workers)}, backend="mxnet",
                     single_img_per_sec=single_img_per_sec(config, spec), load=_load(foreign_load(config, spec)))
'''


def fake_run_conftest(
    speed_by_trick: "dict | None" = None,
    *,
    timing: str = "overlapped",
    step_s: float = 0.5,
    warmup: float = 8.0,
    wobble: float = 0.03,
    workers: "int | None" = None,
    extra: str = "",
) -> str:
    """Source of a conftest.py whose ``pytest_bpsperf_run`` returns a finished run.

    - ``speed_by_trick``: how much faster each trick part makes a step (parts multiply);
    - ``timing``: ``overlapped`` (the default, as users train) or ``breakdown``;
    - ``step_s``: seconds per step at speed 1; ``warmup``: how many times slower step 0 is;
      ``wobble``: the other steps alternate this fraction above and below ``step_s``;
    - ``workers``: how many workers record (None: as many as the settings say), each on its own node;
    - ``extra``: source appended as it is; it may redefine ``scenario(config, spec)`` (a factor on
      the speed, called first in every run), ``single_img_per_sec(config, spec)`` and
      ``foreign_load(config, spec)`` (cores of others' CPU beside the run), ``breakdown(config, spec)``
      (the parts of the run's diagnostic steps), and add hooks.
    """
    if timing not in TIMINGS:
        raise ValueError(f"timing must be one of {TIMINGS}, not {timing!r}")
    head = (
        f'"""A fed run in the {timing} timing (tests/helpers/fakes.py)."""\n\n'
        "from pytest_bpsperf.runs.output import NodeLoad, RoleOutcome, RunOutput, WorkerRecords\n\n"
        f"SPEED_BY_TRICK = {dict(speed_by_trick or {})!r}\n"
        f"TIMING = {timing!r}\n"
        f"STEP_S = {step_s!r}\n"
        f"WARMUP = {warmup!r}\n"
        f"WOBBLE = {wobble!r}\n"
        f"WORKERS = {workers!r}\n"
    )
    return head + _RUN + extra


def perf_test(check: str = "assert result.img_per_sec > 0", tricks: "tuple | None" = ("default", "omp-passive")) -> str:
    """Source of a perf test module: ``test_x`` over ``tricks`` runs ``result = bpsperf_train()``, then ``check``."""
    marker = "@pytest.mark.bpsperf_tricks(" + ", ".join(f'"{t}"' for t in tricks) + ")\n" if tricks else ""
    return (
        "\nimport pytest\n\npytestmark = pytest.mark.perf\n\n\n"
        f"{marker}def test_x(bpsperf_train):\n    result = bpsperf_train()\n    {check}\n"
    )


#: omp-passive makes a step twice as fast as the default trick.
OMP_PASSIVE_2X = {"omp-passive": 2.0}

#: Measures each of two tricks and checks only that it measured something.
MATRIX_TEST = perf_test()

#: Measures each of two tricks and holds the result to its baseline.
GATED_TEST = perf_test("result.assert_within_baseline()")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """The inner session, in this process, without the cache plugin."""
    return pytester.runpytest("-p", "no:cacheprovider", *args)


#: The arguments that pin a fed session's workload and profile (the default trick matrix's small runs).
PINNED_SESSION = (
    "-p",
    "no:cacheprovider",
    "--bpsperf-steps=12",
    "--bpsperf-batch-size=8",
    "--bpsperf-image-size=32",
    "--bpsperf-omp-threads=2",
    "--bpsperf-no-scaling",
    "--bpsperf-profile=testprof",
)
