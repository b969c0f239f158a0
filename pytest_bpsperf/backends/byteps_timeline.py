"""BytePS communication traces: per-step PUSH and PULL time from ``comm.json``.

With tracing on (see :class:`pytest_bpsperf.backends.byteps_env.TraceWindow`) every
worker process writes ``<trace dir>/<local_rank>/comm.json``, a Chrome
trace-event file whose events are all complete events (``"ph": "X"``, ``ts``
and ``dur`` in microseconds):

- one per push_pull of a whole tensor: ``name`` ``Comm.<tensor>``, ``tid`` ``total``;
- one per partition and stage of it: ``name`` ``Comm.<tensor>.<STAGE>`` (PUSH,
  PULL, COPYD2H, ...), ``tid`` the partition's key. A large tensor is cut into
  several partitions, each with its own PUSH and PULL events.

BytePS writes no step markers. A tensor is push_pulled once per training step,
so the k-th ``total`` event of a tensor belongs to the k-th traced step; a
partition event belongs to the push_pull of its tensor that started last before
it (its own order is the fallback when a tensor has no ``total`` events).

For each step this module reports PUSH and PULL as wall time (the union of the
intervals during which at least one partition of any tensor was pushing,
resp. pulling) and as busy time (the sum of all partitions' durations, which
counts parallel transfers once each). Plain Python, no BytePS import.
"""

from __future__ import annotations

import json
import os
import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

#: Stage names BytePS 0.2.5 writes (byteps/common/common.h, LogStrings).
STAGES = (
    "COORDINATE_REDUCE",
    "REDUCE",
    "COPYD2H",
    "PCIE_REDUCE",
    "COORDINATE_PUSH",
    "COMPRESS",
    "PUSH",
    "PULL",
    "DECOMPRESS",
    "COPYH2D",
    "COORDINATE_BROADCAST",
    "BROADCAST",
)
TRACE_FILE = "comm.json"
_US = 1e-6
_RANK_FILE_RE = re.compile(r"(?:^|/)(\d+)/" + re.escape(TRACE_FILE) + r"$")


class TraceError(ValueError):
    """A trace is missing, incomplete or not in BytePS's format; the message says which file."""


@dataclass(frozen=True)
class CommEvent:
    """One complete event of comm.json, times in microseconds."""

    tensor: str
    stage: str  # "" for the whole-tensor push_pull, else one of STAGES
    key: str  # partition key; "total" for the whole tensor
    ts: int
    dur: int

    @property
    def end(self) -> int:
        """End time in microseconds."""
        return self.ts + self.dur


@dataclass(frozen=True)
class StepComm:
    """Communication of one traced training step on one worker process."""

    step: int  # 0-based training step (the workload's record "step") when the window is known
    push_s: float  # wall time with at least one PUSH in flight
    pull_s: float  # wall time with at least one PULL in flight
    push_busy_s: float  # sum of the PUSH durations of every partition
    pull_busy_s: float
    comm_s: float  # wall time with at least one tensor's push_pull in flight
    tensors: int  # tensors push_pulled in this step

    def as_dict(self) -> dict:
        """Plain JSON-able view."""
        return {
            "step": self.step,
            "push_s": self.push_s,
            "pull_s": self.pull_s,
            "push_busy_s": self.push_busy_s,
            "pull_busy_s": self.pull_busy_s,
            "comm_s": self.comm_s,
            "tensors": self.tensors,
        }


@dataclass(frozen=True)
class RankTimeline:
    """The traced steps of one worker process (one comm.json)."""

    local_rank: int
    source: str
    steps: tuple  # of StepComm, in step order


@dataclass(frozen=True)
class CommSummary:
    """Means over every traced step of every worker process of a window."""

    ranks: int
    steps: int  # traced steps per process (the most any process has)
    samples: int  # (process, step) pairs averaged
    mean_push_s: float
    mean_pull_s: float
    mean_push_busy_s: float
    mean_pull_busy_s: float
    mean_comm_s: float

    def as_dict(self) -> dict:
        """Plain JSON-able view."""
        return {
            "ranks": self.ranks,
            "steps": self.steps,
            "samples": self.samples,
            "mean_push_s": self.mean_push_s,
            "mean_pull_s": self.mean_pull_s,
            "mean_push_busy_s": self.mean_push_busy_s,
            "mean_pull_busy_s": self.mean_pull_busy_s,
            "mean_comm_s": self.mean_comm_s,
        }


@dataclass(frozen=True)
class TraceTimeline:
    """Every worker process's traced steps of one trace window."""

    ranks: tuple  # of RankTimeline, by local rank

    def summary(self) -> CommSummary:
        """Mean PUSH/PULL seconds per step over the window (and over processes)."""
        samples = [s for r in self.ranks for s in r.steps]
        if not samples:
            raise TraceError("the trace has no traced steps (no whole-tensor or PUSH/PULL events)")

        def mean(attr: str) -> float:
            return sum(getattr(s, attr) for s in samples) / len(samples)

        return CommSummary(
            ranks=len(self.ranks),
            steps=max(len(r.steps) for r in self.ranks),
            samples=len(samples),
            mean_push_s=mean("push_s"),
            mean_pull_s=mean("pull_s"),
            mean_push_busy_s=mean("push_busy_s"),
            mean_pull_busy_s=mean("pull_busy_s"),
            mean_comm_s=mean("comm_s"),
        )

    def as_dict(self) -> dict:
        """Plain JSON-able view: every step of every process, and the summary."""
        return {
            "ranks": [
                {"local_rank": r.local_rank, "source": r.source, "steps": [s.as_dict() for s in r.steps]}
                for r in self.ranks
            ],
            "summary": self.summary().as_dict(),
        }


# -- parsing -------------------------------------------------------------------


def parse_events(doc: Any, source: str = "<trace>") -> list:
    """The :class:`CommEvent` values of a decoded comm.json (dict with traceEvents, or a bare list)."""
    raw_events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(raw_events, list):
        raise TraceError(f"{source}: not a Chrome trace (no traceEvents list)")
    events = []
    for raw in raw_events:
        if not isinstance(raw, dict) or raw.get("ph") != "X":
            continue
        name = raw.get("name")
        if not isinstance(name, str) or not name.startswith("Comm."):
            continue
        try:
            ts = int(raw["ts"])
            dur = int(raw["dur"])
        except (KeyError, TypeError, ValueError):
            raise TraceError(f"{source}: event {name!r} has no integer ts/dur") from None
        tid = str(raw.get("tid", ""))
        # pid (and args.name) is "Comm.<tensor>"; tensor names may contain dots,
        # so the stage is what follows that prefix, not the last dotted part.
        prefix = raw.get("pid")
        if not isinstance(prefix, str) or not prefix.startswith("Comm."):
            args = raw.get("args")
            prefix = args.get("name") if isinstance(args, dict) else None
        if tid == "total":
            tensor, stage = name[len("Comm.") :], ""
        elif isinstance(prefix, str) and name.startswith(prefix + "."):
            tensor, stage = prefix[len("Comm.") :], name[len(prefix) + 1 :]
        else:
            head, _, tail = name.rpartition(".")
            if tail not in STAGES or head == "Comm":
                continue
            tensor, stage = head[len("Comm.") :], tail
        events.append(CommEvent(tensor=tensor, stage=stage, key=tid, ts=ts, dur=max(0, dur)))
    return events


def load_comm_json(text: str, source: str = "<trace>") -> list:
    """Parse the text of one comm.json into events."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise TraceError(
            f"{source}: not valid JSON ({exc}); BytePS writes it asynchronously, so it may be "
            "incomplete: wait for 'communication traces output done!' in the worker's log"
        ) from None
    return parse_events(doc, source)


def _union_s(intervals: Iterable[tuple]) -> float:
    total = 0
    cur_start = cur_end = None
    for start, end in sorted(intervals):
        if cur_end is None or start > cur_end:
            if cur_end is not None:
                total += cur_end - cur_start
            cur_start, cur_end = start, end
        else:
            cur_end = max(cur_end, end)
    if cur_end is not None:
        total += cur_end - cur_start
    return total * _US


def step_timeline(events: Sequence[CommEvent], first_step: int = 0) -> tuple:
    """The :class:`StepComm` of each traced step of one process's events.

    ``first_step`` is the number given to the first traced step (with a known
    window: ``start_step - 1``, the 0-based training step).
    """
    totals: dict = {}
    parts: dict = {}
    for ev in events:
        if ev.stage == "":
            totals.setdefault(ev.tensor, []).append(ev)
        else:
            parts.setdefault((ev.tensor, ev.key, ev.stage), []).append(ev)
    for evs in totals.values():
        evs.sort(key=lambda e: e.ts)
    starts = {t: [e.ts for e in evs] for t, evs in totals.items()}

    # step index -> stage -> list of (start, end); plus whole-tensor intervals
    by_step: dict = {}

    def slot(k: int) -> dict:
        return by_step.setdefault(k, {"total": [], "tensors": set(), "PUSH": [], "PULL": []})

    for tensor, evs in totals.items():
        for k, ev in enumerate(evs):
            s = slot(k)
            s["total"].append((ev.ts, ev.end))
            s["tensors"].add(tensor)
    for (tensor, _key, stage), evs in parts.items():
        evs.sort(key=lambda e: e.ts)
        tensor_starts = starts.get(tensor)
        for order, ev in enumerate(evs):
            if tensor_starts:
                # the push_pull of this tensor that started last before this stage
                k = max(0, bisect_right(tensor_starts, ev.ts) - 1)
            else:
                k = order
            s = slot(k)
            s["tensors"].add(tensor)
            if stage in ("PUSH", "PULL"):
                s[stage].append((ev.ts, ev.end))

    out = []
    for k in sorted(by_step):
        s = by_step[k]
        out.append(
            StepComm(
                step=first_step + k,
                push_s=_union_s(s["PUSH"]),
                pull_s=_union_s(s["PULL"]),
                push_busy_s=sum(e - b for b, e in s["PUSH"]) * _US,
                pull_busy_s=sum(e - b for b, e in s["PULL"]) * _US,
                comm_s=_union_s(s["total"]),
                tensors=len(s["tensors"]),
            )
        )
    return tuple(out)


def timeline_from_files(files: Mapping[str, str], start_step: "int | None" = None) -> TraceTimeline:
    """A window's timeline from ``{path: text}`` of its comm.json files.

    Paths end in ``<local_rank>/comm.json`` (as :meth:`RoleProcess.read_files`
    returns them); other files are ignored. ``start_step`` is the window's
    BYTEPS_TRACE_START_STEP; steps are then numbered as 0-based training steps,
    otherwise from 0 within the window.
    """
    first = start_step - 1 if start_step is not None else 0
    ranks = []
    for path in sorted(files):
        match = _RANK_FILE_RE.search(path.replace(os.sep, "/"))
        if not match:
            continue
        events = load_comm_json(files[path], path)
        ranks.append(RankTimeline(local_rank=int(match.group(1)), source=path, steps=step_timeline(events, first)))
    if not ranks:
        raise TraceError(
            "no <local_rank>/comm.json among the trace files "
            f"({', '.join(sorted(files)) or 'none'}); BytePS writes it only after every traced tensor "
            "reached BYTEPS_TRACE_END_STEP"
        )
    ranks.sort(key=lambda r: (r.local_rank, r.source))
    return TraceTimeline(ranks=tuple(ranks))


def read_window(trace_dir: str, start_step: "int | None" = None) -> TraceTimeline:
    """A window's timeline from the ``<trace_dir>/<local_rank>/comm.json`` files on this machine."""
    if not os.path.isdir(trace_dir):
        raise TraceError(f"trace directory {trace_dir} does not exist")
    files = {}
    for entry in sorted(os.listdir(trace_dir)):
        path = os.path.join(trace_dir, entry, TRACE_FILE)
        if entry.isdigit() and os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as fh:
                files[path] = fh.read()
    if not files:
        raise TraceError(
            f"no <local_rank>/{TRACE_FILE} under {trace_dir}; BytePS writes it only after every traced "
            "tensor reached BYTEPS_TRACE_END_STEP (and, with DistributedTrainer, only for a window that "
            "starts at step 3 or later)"
        )
    return timeline_from_files(files, start_step)


def tensor_times(files: Mapping[str, str]) -> "dict[str, dict[str, float]]":
    """Tensor -> mean PUSH and PULL busy seconds per traced step (``push_s``, ``pull_s``), over the
    processes of a window's ``{path: text}`` comm.json files.

    A tensor's busy time is the sum of its partitions' PUSH (PULL) durations, per
    push_pull of the whole tensor (one per step; its partition count where it has
    no whole-tensor events): what a bigger layer adds to a step's communication.
    """
    sums: "dict[str, dict[str, list]]" = {}
    for path in sorted(files):
        if not _RANK_FILE_RE.search(path.replace(os.sep, "/")):
            continue
        steps: "dict[str, int]" = {}
        pushes: "dict[tuple, int]" = {}  # (tensor, partition) -> its PUSH events
        busy: "dict[str, dict[str, int]]" = {}
        for ev in load_comm_json(files[path], path):
            if ev.stage == "":
                steps[ev.tensor] = steps.get(ev.tensor, 0) + 1
            elif ev.stage in ("PUSH", "PULL"):
                part = busy.setdefault(ev.tensor, {"PUSH": 0, "PULL": 0})
                part[ev.stage] += ev.dur
                if ev.stage == "PUSH":
                    pushes[(ev.tensor, ev.key)] = pushes.get((ev.tensor, ev.key), 0) + 1
        for tensor, part in busy.items():
            n = steps.get(tensor) or max([c for (t, _k), c in pushes.items() if t == tensor] or [1])
            for stage, key in (("PUSH", "push_s"), ("PULL", "pull_s")):
                sums.setdefault(tensor, {}).setdefault(key, []).append(part[stage] * _US / n)
    return {t: {k: sum(v) / len(v) for k, v in parts.items()} for t, parts in sorted(sums.items())}


__all__ = [
    "CommEvent",
    "CommSummary",
    "RankTimeline",
    "STAGES",
    "StepComm",
    "TraceError",
    "TraceTimeline",
    "load_comm_json",
    "parse_events",
    "read_window",
    "step_timeline",
    "tensor_times",
    "timeline_from_files",
]
