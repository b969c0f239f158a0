"""The history: one file per session, and the trend of every job across commits.

``HISTORY_DIR/<profile_id>/<YYYYmmddTHHMMSSZ>-<commit12>-<session>.json``
holds one session's record (:func:`make_record`): profile, commit, branch,
date, software versions, the settings of each job and every run's img/s with
its per-step img/s. A session never rewrites another's file, so histories
from several machines, branches or CI jobs merge by copying directories
together (a git merge of two branches that both added records never
conflicts). The directory can be committed, kept in a CI cache, or uploaded
as an artifact and downloaded again.

:func:`trends` turns records into one :class:`Trend` per job, a point per
commit in the order the commits were first measured, with the change points
of :func:`~pytest_bpsperf.stats.changepoint.detect_steps` on mean log img/s.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

from ..remote.provenance import software_versions, utc_now_iso
from ..stats.changepoint import StepFit, detect_steps, noise_sigma
from .files import atomic_write_text
from .results import DocumentError, jobs_of, read_document, run_key_of, step_img_per_sec
from .schema import validate

__all__ = [
    "HISTORY_DIR",
    "SCHEMA_VERSION",
    "HistoryError",
    "HistoryStore",
    "Trend",
    "TrendPoint",
    "check_commit",
    "current_branch",
    "make_record",
    "session_groups",
    "trends",
]

SCHEMA_VERSION = 1

#: The history directory where none is named: what ``bpsperf history`` reads and writes, and what the
#: example workflows give ``--bpsperf-history`` (the plugin keeps no history unless asked).
HISTORY_DIR = ".bpsperf-history"


class HistoryError(ValueError):
    """A history file or directory cannot be used; the message names it."""


#: A git commit id, full (SHA-1 or SHA-256) or abbreviated: what may name a history file.
_COMMIT_ID = re.compile(r"[0-9a-fA-F]{4,64}")


def check_commit(commit: Optional[str], source: str) -> Optional[str]:
    """``commit`` when it is None, empty or a git commit id; else a HistoryError naming it and ``source``.

    The commit names the record's file, so a string such as ``../../x`` would
    write outside the history directory: only hex digits are accepted.
    """
    if commit and not _COMMIT_ID.fullmatch(commit):
        raise HistoryError(
            f"commit {commit!r} (from {source}) cannot name a history file: expected a git commit "
            "id, 4 to 64 hex digits (git rev-parse HEAD)"
        )
    return commit


def current_branch(cwd: "str | os.PathLike | None" = None) -> Optional[str]:
    """The branch being measured: GitHub's PR head or ref name when set, else git's, else None."""
    for var in ("GITHUB_HEAD_REF", "GITHUB_REF_NAME"):
        if os.environ.get(var):
            return os.environ[var]
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "--abbrev-ref", "HEAD"],
            cwd=None if cwd is None else str(cwd),
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    name = proc.stdout.strip()
    return name if proc.returncode == 0 and name and name != "HEAD" else None


def make_record(
    results: Mapping[str, Any],
    *,
    profile: Mapping[str, Any],
    commit: Optional[str],
    branch: Optional[str],
    date: Optional[str] = None,
    session: Optional[str] = None,
    versions: "Mapping[str, str] | None" = None,
) -> "dict[str, Any]":
    """One session's history record from its results document (``--bpsperf-json``)."""
    runs = []
    for run in results.get("tests", []):
        runs.append(
            {
                "key": run_key_of(run),
                "test": run["test"],
                "trick": run["trick"],
                "nodeid": run["nodeid"],
                "repeat": run["repeat"],
                "img_per_sec": run["img_per_sec"],
                "compute_s_per_step": run.get("compute_s_per_step", 0.0),
                "sync_s_per_step": run.get("sync_s_per_step", 0.0),
                "step_img_per_sec": step_img_per_sec(run),
            }
        )
    settings = {key: dict(job.settings, backend=job.workload["backend"]) for key, job in jobs_of(results).items()}
    record = {
        "schema_version": SCHEMA_VERSION,
        "session": session or (results.get("session_info") or {}).get("run_id") or _content_id(runs),
        "profile": dict(profile),
        "commit": commit,
        "branch": branch,
        "date": date or utc_now_iso(),
        "versions": dict(versions) if versions is not None else software_versions(),
        "settings": settings,
        "runs": runs,
    }
    validate(record, "history", "the new history record")
    return record


def _content_id(runs: Sequence[Mapping[str, Any]]) -> str:
    """A session id from the runs themselves: saving the same results twice names the same file."""
    return hashlib.sha1(json.dumps(list(runs), sort_keys=True).encode()).hexdigest()[:12]


class HistoryStore:
    """History records under ``directory``, one subdirectory per profile."""

    def __init__(self, directory: "str | os.PathLike") -> None:
        """Use ``directory`` (created on the first save)."""
        self.directory = Path(directory)

    def path_for(self, record: Mapping[str, Any]) -> Path:
        """Where ``record`` goes: unique per session, so copies from elsewhere never collide."""
        stamp = re.sub(r"[^0-9T]", "", str(record["date"]))[:15] + "Z"
        commit = (check_commit(record.get("commit"), "the history record") or "nocommit")[:12]
        profile_id = str(record["profile"]["id"])
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", profile_id):
            raise HistoryError(f"profile id {profile_id!r} of the history record cannot name a directory")
        return self.directory / profile_id / f"{stamp}-{commit}-{record['session']}.json"

    def save(self, record: Mapping[str, Any]) -> Path:
        """Write ``record`` atomically; a session's file is never overwritten. Returns its path."""
        validate(record, "history", "the history record to save")
        path = self.path_for(record)
        if path.exists():
            raise HistoryError(
                f"history file {path} already exists (session {record['session']} was saved "
                "before); it was left untouched"
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(
            path, json.dumps(record, indent=2, sort_keys=True, allow_nan=False, ensure_ascii=False) + "\n"
        )
        return path

    def files(self, profile_id: Optional[str] = None) -> "list[Path]":
        """The record files, of one profile or of all, sorted by name (date first)."""
        if not self.directory.is_dir():
            return []
        dirs = (
            [self.directory / profile_id] if profile_id else sorted(p for p in self.directory.iterdir() if p.is_dir())
        )
        return sorted((f for d in dirs if d.is_dir() for f in d.glob("*.json")), key=lambda f: f.name)

    def load(self, profile_id: Optional[str] = None) -> "list[dict[str, Any]]":
        """Every record (validated), oldest first; a bad file is an error naming it."""
        out = []
        for f in self.files(profile_id):
            try:
                out.append(read_document(f, "history"))
            except DocumentError as exc:
                raise HistoryError(f"{exc}\n(move the file away to use the rest of the history)") from None
        return sorted(out, key=lambda r: r["date"])

    def profiles(self) -> "list[str]":
        """Profile ids that have records."""
        if not self.directory.is_dir():
            return []
        return sorted(p.name for p in self.directory.iterdir() if p.is_dir() and any(p.glob("*.json")))


@dataclass(frozen=True)
class TrendPoint:
    """One commit of a trend: the img/s of every run of the job measured at that commit."""

    commit: Optional[str]
    branch: Optional[str]
    date: str  # of the first session that measured this commit
    samples: "tuple[float, ...]"

    @property
    def mean_log(self) -> float:
        """Mean of log img/s (what change points are fitted on)."""
        return math.fsum(math.log(s) for s in self.samples) / len(self.samples)

    @property
    def geomean(self) -> float:
        """Geometric mean img/s."""
        return math.exp(self.mean_log)

    @property
    def label(self) -> str:
        """Short commit id (or the date when no commit was recorded)."""
        return (self.commit or "")[:8] or self.date[:10]


@dataclass(frozen=True)
class Trend:
    """One job (test, trick, topology, workload) across commits, with its change points."""

    profile_id: str
    key: str
    test: str
    trick: str
    points: "tuple[TrendPoint, ...]"
    fit: StepFit


def _pooled_sigma(points: Sequence[TrendPoint]) -> Optional[float]:
    """Noise of one point's mean log from the spread within commits, when some commit ran twice or more."""
    ss, dof, sizes = 0.0, 0, []
    for p in points:
        logs = [math.log(s) for s in p.samples]
        m = math.fsum(logs) / len(logs)
        ss += math.fsum((x - m) ** 2 for x in logs)
        dof += len(logs) - 1
        sizes.append(len(logs))
    if dof < 2:
        return None
    mean_size = sum(sizes) / len(sizes)
    return math.sqrt(ss / dof / mean_size)


def trends(
    records: Iterable[Mapping[str, Any]],
    *,
    profile_id: Optional[str] = None,
    branch: Optional[str] = None,
    beta: float = 6.0,
    min_change: float = 0.02,
) -> "list[Trend]":
    """One :class:`Trend` per (profile, job), points ordered by the first date each commit was measured.

    ``branch`` keeps only records of that branch (a trend across unrelated
    branches mixes their changes). Sessions of one commit are pooled into one
    point. The noise for the change points is the larger of the spread of
    repeats within commits and the scatter between neighbouring commits.
    """
    grouped: "dict[tuple, dict]" = {}
    meta: "dict[tuple, tuple]" = {}
    for rec in sorted(records, key=lambda r: r["date"]):
        if profile_id and rec["profile"]["id"] != profile_id:
            continue
        if branch and rec.get("branch") != branch:
            continue
        commit_id = rec.get("commit") or f"session:{rec['session']}"
        for run in rec["runs"]:
            job = (rec["profile"]["id"], run["key"])
            meta.setdefault(job, (run["test"], run["trick"]))
            point = grouped.setdefault(job, {}).setdefault(
                commit_id,
                {"commit": rec.get("commit"), "branch": rec.get("branch"), "date": rec["date"], "samples": []},
            )
            point["samples"].append(float(run["img_per_sec"]))
    out = []
    for (prof, key), by_commit in grouped.items():
        points = tuple(TrendPoint(p["commit"], p["branch"], p["date"], tuple(p["samples"])) for p in by_commit.values())
        values = [p.mean_log for p in points]
        # Sessions differ more than runs of one session: the larger estimate wins.
        sigma = max(_pooled_sigma(points) or 0.0, noise_sigma(values))
        fit = detect_steps(values, beta=beta, min_change=min_change, sigma=sigma)
        test, trick = meta[(prof, key)]
        out.append(Trend(profile_id=prof, key=key, test=test, trick=trick, points=points, fit=fit))
    return sorted(out, key=lambda t: (t.profile_id, t.test, t.trick, t.key))


def session_groups(records: Iterable[Mapping[str, Any]], *, profile_id: str) -> "list[list[list[float]]]":
    """Sessions of the same code: for each job and commit measured in two or more sessions, their runs' img/s.

    Every base-vs-head session on main's line adds its base arm at main's
    commit (see the plugin's ``--bpsperf-history``), so a runner's history
    holds the same commit measured again and again: the spread between those
    sessions is the runner's own (:func:`pytest_bpsperf.stats.pooled_between`).
    """
    by_code: "dict[tuple, dict[str, list]]" = {}
    for rec in records:
        if rec["profile"]["id"] != profile_id or not rec.get("commit"):
            continue
        for run in rec["runs"]:
            sessions = by_code.setdefault((run["key"], rec["commit"]), {})
            sessions.setdefault(rec["session"], []).append(float(run["img_per_sec"]))
    return [list(s.values()) for _code, s in sorted(by_code.items()) if len(s) >= 2]
