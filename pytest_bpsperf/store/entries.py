"""Baseline entries: what produced a baseline, its samples grouped by the session that measured them.

An ENTRY of schema_version 2::

    {"test": ..., "trick": ..., "topology": {...}, "workload": {...},
     "summary": {...},                      # over every sample of every kept session
     "sessions": [SESSION, ...]}            # oldest first, at most the window

    SESSION = {"commit": ..., "date": ..., "host": ..., "samples": [img/s per run],
               "single_img_per_sec": img/s of one process alone in that session, or null,
               "versions": {...}, "extra": {...}}

Days differ more than runs (a session's runs share its machine's luck), so
the verdict treats sessions as units (:func:`pytest_bpsperf.stats.compare`).
Recording adds a session and keeps the last ``window`` of them: a diff of the
committed file shows one new session, and the oldest one leaving.

Entries of schema_version 1 kept ``samples``, ``commit``, ``date``,
``versions`` and ``extra`` at the top; :func:`migrate_entry` turns one into an
entry with that one session (the store does so on read, and writes version 2).
"""

from __future__ import annotations

import platform
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ..stats import summarize

__all__ = [
    "SESSION_KEYS",
    "add_session",
    "holds_session",
    "between_groups",
    "entry_sessions",
    "entry_samples",
    "latest_date",
    "latest_session",
    "make_session",
    "migrate_entry",
    "recorded_sessions",
    "session_samples",
]

#: The keys of schema_version 1 that now belong to a session.
SESSION_KEYS = ("samples", "commit", "date", "versions", "extra")


def make_session(
    *,
    samples: Sequence[float],
    commit: Optional[str],
    date: str,
    versions: Mapping[str, str],
    single_img_per_sec: Optional[float] = None,
    host: Optional[str] = None,
    extra: Optional[Mapping[str, Any]] = None,
    dirty: Optional[bool] = None,
) -> Dict[str, Any]:
    """One recorded session: its runs' img/s, where and when, and its single-process reference."""
    session: Dict[str, Any] = {
        "commit": commit,
        "date": date,
        "host": host if host is not None else platform.node(),
        "samples": [float(s) for s in samples],
        "single_img_per_sec": None if single_img_per_sec is None else float(single_img_per_sec),
        "versions": dict(versions),
    }
    if dirty is not None:  # recorded from a tree with uncommitted changes: the commit alone is not the code
        session["dirty"] = bool(dirty)
    if extra:
        session["extra"] = dict(extra)
    return session


def migrate_entry(entry: Mapping[str, Any]) -> Dict[str, Any]:
    """An entry in schema_version 2 form; a version 1 entry (flat ``samples``) becomes one session.

    Keys that are not part of the format (notes written by hand) are kept.
    An entry that already has ``sessions``, or has no samples at all, is
    returned as a copy.
    """
    out = dict(entry)
    if "sessions" in out or "samples" not in out:
        return out
    session: Dict[str, Any] = {"host": None, "single_img_per_sec": None}
    for key in SESSION_KEYS:
        if key in out:
            session[key] = out.pop(key)
    out["sessions"] = [session]
    return out


def entry_sessions(entry: "Mapping[str, Any] | None") -> "List[Mapping[str, Any]]":
    """The recorded sessions of ``entry`` (either schema), oldest first; those without samples left out."""
    if not entry:
        return []
    sessions = migrate_entry(entry).get("sessions") or []
    return [s for s in sessions if isinstance(s, Mapping) and s.get("samples")]


def session_samples(entry: "Mapping[str, Any] | None") -> "List[List[float]]":
    """img/s of ``entry``'s runs, one list per recorded session."""
    return [[float(x) for x in s["samples"]] for s in entry_sessions(entry)]


def entry_samples(entry: "Mapping[str, Any] | None") -> "List[float]":
    """Every sample of ``entry``, all sessions together."""
    return [x for s in session_samples(entry) for x in s]


def latest_session(entry: "Mapping[str, Any] | None") -> "Mapping[str, Any]":
    """The most recent recorded session of ``entry`` (empty when there is none)."""
    sessions = entry_sessions(entry)
    return sessions[-1] if sessions else {}


def latest_date(entry: "Mapping[str, Any] | None") -> Optional[str]:
    """The latest ``date`` among ``entry``'s recorded sessions (ISO 8601 text), or None when none has one.

    The latest by date, not by position: a session recorded from an older
    results file is appended after newer ones.
    """
    dates = [str(s["date"]) for s in entry_sessions(entry) if s.get("date")]
    return max(dates) if dates else None


def recorded_sessions(entries: "Mapping[str, Mapping[str, Any]]") -> "tuple[int, Optional[str]]":
    """How many recording sessions the ``entries`` of one file hold together, and the latest date.

    One session adds to every entry it measured: it is counted once, by its commit and date.
    """
    seen = {(s.get("commit"), s.get("date")) for e in entries.values() for s in entry_sessions(e)}
    dates = [str(d) for _c, d in seen if d]
    return len(seen), (max(dates) if dates else None)


#: What makes two recorded sessions one: the same commit, date, host and samples (one results file
#: recorded twice); sessions of different days never share all four.
SESSION_IDENTITY = ("commit", "date", "host", "samples")


def holds_session(entry: "Mapping[str, Any] | None", session: Mapping[str, Any]) -> bool:
    """Whether ``entry`` already keeps ``session`` (:data:`SESSION_IDENTITY`): recording it again would
    count one session twice and understate the spread between sessions."""

    def identity(s: Mapping[str, Any]) -> tuple:
        return tuple(json_key(s.get(k)) for k in SESSION_IDENTITY)

    return any(identity(s) == identity(session) for s in entry_sessions(entry))


def json_key(value: object) -> str:
    """A value as a comparable text (samples as floats: 8 and 8.0 are one sample)."""
    import json

    if isinstance(value, (list, tuple)):
        value = [float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v for v in value]
    return json.dumps(value, sort_keys=True, default=str)


def add_session(
    existing: "Mapping[str, Any] | None",
    head: Mapping[str, Any],
    session: Mapping[str, Any],
    *,
    window: int,
) -> Dict[str, Any]:
    """``existing`` (or a new entry) with ``session`` appended, keeping the last ``window`` sessions.

    A session that ``existing`` already holds (:func:`holds_session`) is not added again.

    ``head`` gives the entry's identity (test, trick, topology, workload);
    other keys of ``existing`` (hand-written notes) are kept, and the summary
    is recomputed over the kept sessions.
    """
    if window < 1:
        raise ValueError(f"window is {window!r}, expected an integer >= 1")
    if existing is not None and holds_session(existing, session):
        return migrate_entry(existing)  # already recorded: nothing to add
    entry = migrate_entry(existing) if existing else {}
    entry.update({k: head[k] for k in ("test", "trick", "topology", "workload") if k in head})
    kept = [dict(s) for s in entry_sessions(entry)] + [dict(session)]
    entry["sessions"] = kept[-window:]
    entry["summary"] = summarize(entry_samples(entry)).as_dict()
    return entry


def between_groups(
    entries: "Mapping[str, Mapping[str, Any]]", *, exclude: Optional[str] = None
) -> "List[List[List[float]]]":
    """The recorded sessions of every entry but ``exclude``, one group per entry with two or more sessions.

    What the profile knows about the spread between its sessions, for an entry
    that has few of its own (:func:`pytest_bpsperf.stats.pooled_between`).
    """
    return [
        groups
        for key, entry in sorted(entries.items())
        if key != exclude
        for groups in [session_samples(entry)]
        if len(groups) >= 2
    ]
