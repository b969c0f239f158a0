"""The stall watchdog of a run: a worker with no new step for too long fails the run, by name.

The launcher polls every role's actor; for workers the answer carries how many
step records the worker wrote, its last step, its recent step time and its
process state (from ``/proc`` on its node). :class:`StallWatch` keeps, on the
driver's own clock, when each worker last made progress, and says which worker
is stuck once one has made none for the stall limit: by default derived from
the run's own step times, never below :data:`FLOOR_S`. Under ``dist_sync``
every worker waits when one stops, so the culprit is the role whose process is
stopped (state ``T``), else the worker that is behind. Driver-side, plain Python.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

#: The derived limit is never below this many seconds (a loaded machine pauses).
FLOOR_S = 30.0
#: The derived limit is this many times the slowest worker's recent step time.
STEP_FACTOR = 20.0
#: Before its first step a worker builds its model and meets the parameter
#: server; it gets at least this long.
FIRST_STEP_S = 120.0
#: ... and on GPUs longer: a CUDA build of MXNet imports for tens of seconds, then come
#: NCCL's set-up across the node's ranks, the ps-lite barrier over every node and cuDNN's
#: autotune of the first step (not measured yet on a real cluster: generous on purpose).
FIRST_STEP_GPU_S = 300.0

#: /proc states that mean the process cannot make progress by itself.
STOPPED_STATES = {"T": "stopped (SIGSTOP)", "t": "stopped by a tracer", "Z": "a zombie"}


@dataclass(frozen=True)
class Stall:
    """A stuck run: the culprit roles, why they are the culprits, and the message."""

    culprits: "tuple[str, ...]"
    message: str


@dataclass
class StallWatch:
    """Tracks each worker's progress; :meth:`check` returns a :class:`Stall` once one is stuck.

    ``setting`` is the ``stall_timeout`` setting (0: derived), ``origin`` where it came from.
    """

    setting: float = 0.0
    origin: str = "default"
    #: how long a worker may take to its first step (GPU workloads: :data:`FIRST_STEP_GPU_S`)
    first_step_s: float = FIRST_STEP_S
    _seen: "dict[str, tuple[int, float]]" = field(default_factory=dict)  # worker -> (steps, driver time)
    _step_s: "dict[str, float]" = field(default_factory=dict)

    def limit(self) -> float:
        """Seconds without progress that count as a stall, now."""
        if self.setting > 0:
            return self.setting
        slowest = max(self._step_s.values(), default=0.0)
        return max(FLOOR_S, STEP_FACTOR * slowest)

    def describe_limit(self) -> str:
        """The limit and where it came from, for messages."""
        if self.setting > 0:
            return f"{self.setting:g}s, setting 'stall_timeout' from {self.origin}"
        return (
            f"{self.limit():.0f}s, setting 'stall_timeout' auto: {STEP_FACTOR:g} x the slowest recent step, "
            f"at least {FLOOR_S:g}s"
        )

    def check(self, status: "Mapping[str, dict]", workers: "list[str]", now: float) -> "Stall | None":
        """Update with one poll's answers (role -> status dict) at driver time ``now``; the stall, if any."""
        idle: dict = {}
        for name in workers:
            st = status.get(name) or {}
            if st.get("code") is not None:
                continue  # exited: the exit status speaks for it
            steps = int(st.get("steps") or 0)
            if st.get("step_s"):
                self._step_s[name] = float(st["step_s"])
            last = self._seen.get(name)
            if last is None or steps != last[0]:
                self._seen[name] = (steps, now)
                continue
            allowed = self.limit() if steps > 0 else max(self.limit(), self.first_step_s)
            if now - last[1] > allowed:
                idle[name] = now - last[1]
        if not idle:
            return None
        return self._explain(status, workers, idle)

    def _explain(self, status: "Mapping[str, dict]", workers: "list[str]", idle: dict) -> Stall:
        stopped = [n for n, st in status.items() if (st or {}).get("state") in STOPPED_STATES]
        if stopped:
            culprits = stopped
            why = "; ".join(f"{n} is {STOPPED_STATES[status[n]['state']]}" for n in stopped)
        else:
            counts = {n: int((status.get(n) or {}).get("steps") or 0) for n in idle}
            low = min(counts.values())
            culprits = [n for n in idle if counts[n] == low] if len(set(counts.values())) > 1 else list(idle)
            why = "behind the others" if len(culprits) < len(idle) else "no role is stopped; all stalled together"
        parts = []
        for name in culprits:
            st = status.get(name) or {}
            if name in workers:
                seen = idle.get(name, max(idle.values()))
                parts.append(f"{name} made no new step for {seen:.0f}s (last step {st.get('last_step', 'none')})")
            else:
                parts.append(f"{name} (process state {st.get('state', '?')})")
        message = f"stalled: {'; '.join(parts)} [{why}] (stall limit {self.describe_limit()})"
        return Stall(tuple(culprits), message)


def progress_line(label: str, steps: int, latest: dict) -> "str | None":
    """``LABEL: step k/N, X img/s`` from the workers' latest records (None before any step).

    k is the step the slowest worker finished (workers of ``dist_sync`` step
    together); img/s is the sum over workers of their latest step's rate.
    """
    done = [r for r in latest.values() if r and r.get("event") in ("step", "end")]
    if not done or len(done) < len(latest):
        return None
    last_steps = [r for r in done if r.get("event") == "step"]
    # a record is a step, or a window of steps through ``through`` (sync_every)
    k = min(int(r.get("through", r.get("step", -1))) + 1 if r.get("event") == "step" else steps for r in done)
    rate = sum(float(r["images"]) / float(r["total_s"]) for r in last_steps if r.get("total_s"))
    return f"{label}: step {k}/{steps}" + (f", {rate:.1f} img/s" if last_steps else "")
