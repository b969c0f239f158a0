"""The baseline store: one JSON file per hardware profile.

``DIR/<profile_id>.json`` holds::

    {"schema_version": 2,
     "profile": {"id": ..., "name": ..., "hash": ..., "facts": {...}},
     "entries": {KEY: ENTRY, ...}}

where KEY comes from :func:`entry_key` and ENTRY records what produced the
baseline: test, trick, topology, workload, a summary, and its samples grouped
by the session that measured them (:mod:`.entries`). Files of
schema_version 1 (flat samples per entry) are read as entries of one session
and written as version 2. The files are meant to be committed and reviewed,
so they are sorted, pretty-printed and written atomically; a file this code
cannot read is reported and never overwritten.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Union

from ..remote.provenance import current_commit, software_versions, utc_now_iso  # noqa: F401 - part of this API
from ..stats import summarize
from .entries import add_session, holds_session, make_session, migrate_entry
from .files import atomic_write_text
from .profile import is_legacy, validate_profile_id
from .schema import SchemaError, validate

__all__ = [
    "SCHEMA_VERSION",
    "BaselineError",
    "BaselineFile",
    "BaselineStore",
    "check_baseline_quality",
    "current_commit",
    "entry_key",
    "make_entry",
    "make_session",
    "software_versions",
    "utc_now_iso",
]

SCHEMA_VERSION = 2
#: Versions this code reads; older ones are migrated when the file is next written.
READABLE_VERSIONS = (1, 2)

_UNTOUCHED = "it was left untouched; fix it by hand, restore it from version control, or delete it"


class BaselineError(Exception):
    """A baselines file cannot be read or written safely; the message names the file."""


def _fmt_value(value: object) -> str:
    # Settings may arrive as 8 or 8.0 depending on where they were parsed;
    # both must give the same key or an existing baseline would be missed.
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return str(int(value))
    if isinstance(value, (int, float, str)):
        return str(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _fmt_mapping(mapping: Mapping[str, object]) -> str:
    if not mapping:
        return "-"
    return ",".join(f"{k}={_fmt_value(mapping[k])}" for k in sorted(mapping, key=str))


def entry_key(test: str, trick: str, topology: Mapping[str, object], workload: Mapping[str, object]) -> str:
    """Readable, deterministic key of one baseline entry.

    ``test|trick|k=v,...|k=v,...`` with topology and workload keys sorted,
    e.g. ``test_resnet50_throughput|omp-passive|server_nodes=1,servers_per_node=1,workers=2|
    backend=mxnet,batch_size=8``; an empty mapping is written ``-``.
    """
    return "|".join((str(test), str(trick), _fmt_mapping(topology), _fmt_mapping(workload)))


def make_entry(
    *,
    test: str,
    trick: str,
    topology: Mapping[str, object],
    workload: Mapping[str, object],
    samples: Sequence[float],
    versions: Optional[Mapping[str, str]] = None,
    commit: Optional[str] = None,
    date: Optional[str] = None,
    extra: Optional[Mapping[str, object]] = None,
    single_img_per_sec: Optional[float] = None,
    host: Optional[str] = None,
) -> Dict[str, object]:
    """Build one ENTRY dict holding one recorded session; ``versions`` and ``date`` default to now.

    No tolerance is stored: the verdict uses the tolerance of the test that compares.
    """
    session = make_session(
        samples=samples,
        commit=commit,
        date=date or utc_now_iso(),
        versions=versions if versions is not None else software_versions(),
        single_img_per_sec=single_img_per_sec,
        host=host,
        extra=extra,
    )
    head = {"test": test, "trick": trick, "topology": dict(topology), "workload": dict(workload)}
    return add_session(None, head, session, window=1)


@dataclass(frozen=True)
class BaselineFile:
    """The parsed content of one baselines file (empty when the file is absent)."""

    path: Path
    exists: bool
    profile: Optional[Dict[str, Any]] = field(default=None, hash=False)
    entries: Dict[str, Dict[str, object]] = field(default_factory=dict, hash=False)
    #: the version the file was written in (entries are always given in the current form)
    schema_version: int = SCHEMA_VERSION

    def get(self, key: str) -> Optional[Dict[str, object]]:
        """The entry stored under ``key``, or None."""
        return self.entries.get(key)


def _parse(path: Path, raw: bytes) -> BaselineFile:
    """Validate the top-level shape; everything wrong raises BaselineError."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise BaselineError(f"baselines file {path} is not UTF-8 ({exc}); {_UNTOUCHED}") from None
    except json.JSONDecodeError as exc:
        raise BaselineError(
            f"baselines file {path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); {_UNTOUCHED}"
        ) from None
    except RecursionError:
        raise BaselineError(f"baselines file {path} nests its JSON too deeply to be read; {_UNTOUCHED}") from None
    if not isinstance(data, dict):
        raise BaselineError(
            f"baselines file {path} holds a JSON {type(data).__name__}, expected an object with "
            f"'schema_version', 'profile' and 'entries'; {_UNTOUCHED}"
        )
    version = data.get("schema_version")
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        raise BaselineError(
            f"baselines file {path} has schema_version {version!r}, but this pytest-bpsperf "
            f"reads schema_version {' or '.join(map(str, READABLE_VERSIONS))} only (a newer or older "
            f"plugin wrote it?); {_UNTOUCHED}"
        )
    profile = data.get("profile")
    if profile is not None and not isinstance(profile, dict):
        raise BaselineError(
            f"baselines file {path}: 'profile' is a {type(profile).__name__}, expected an object; {_UNTOUCHED}"
        )
    entries = data.get("entries", {})
    if not isinstance(entries, dict):
        raise BaselineError(
            f"baselines file {path}: 'entries' is a {type(entries).__name__}, expected an object; {_UNTOUCHED}"
        )
    for key, entry in entries.items():
        if not isinstance(entry, dict):
            raise BaselineError(
                f"baselines file {path}: entry {key!r} is a {type(entry).__name__}, expected an object; {_UNTOUCHED}"
            )
        _check_samples(path, key, entry.get("samples"))
        sessions = entry.get("sessions")
        if sessions is not None and (not isinstance(sessions, list) or not all(isinstance(x, dict) for x in sessions)):
            raise BaselineError(
                f"baselines file {path}: entry {key!r} has 'sessions' {sessions!r}, expected a list "
                f"of objects; {_UNTOUCHED}"
            )
        for session in sessions or []:
            _check_samples(path, key, session.get("samples"))
    try:
        validate(data, "baselines", f"baselines file {path}")
    except SchemaError as exc:
        raise BaselineError(f"{exc}\n{_UNTOUCHED}") from None
    entries = {key: migrate_entry(entry) for key, entry in entries.items()}
    return BaselineFile(path=path, exists=True, profile=profile, entries=entries, schema_version=version)


def _check_samples(path: Path, key: str, samples: object) -> None:
    if samples is not None and (
        not isinstance(samples, list)
        or not all(isinstance(s, (int, float)) and not isinstance(s, bool) for s in samples)
    ):
        raise BaselineError(
            f"baselines file {path}: entry {key!r} has 'samples' {samples!r}, expected a list of numbers; {_UNTOUCHED}"
        )


#: Seconds a writer waits for another one's lock on the baselines directory: the setting
#: ``lock_timeout``'s default (a read-merge-write takes milliseconds; a holder this long is stuck).
LOCK_TIMEOUT_S = 60.0
_LOCK_SETTING = (
    "setting lock_timeout: --bpsperf-lock-timeout, BPSPERF_LOCK_TIMEOUT, ini bpsperf_lock_timeout; "
    "--lock-timeout of bpsperf baselines"
)


def lock_holder(path: "str | os.PathLike") -> "str | None":
    """Who holds a ``flock`` on ``path``, from ``/proc/locks``: ``pid N (its command line)``; None where
    nobody does or the system does not say (no ``/proc``, another pid namespace)."""
    try:
        st = os.stat(path)
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    where = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in lines:
        fields = line.split()
        if "FLOCK" in fields and where in fields:
            pid = fields[fields.index(where) - 1]
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    command = " ".join(fh.read().replace(b"\0", b" ").decode(errors="replace").split())  # one line
            except OSError:
                command = ""
            return f"pid {pid}" + (f" ({command[:200]})" if command else "")
    return None


@contextlib.contextmanager
def _directory_lock(
    directory: Path, timeout: float = LOCK_TIMEOUT_S, say: "Callable[[str], None] | None" = None, poll: float = 0.2
) -> Iterator[None]:
    """Serialize read-merge-write cycles of concurrent writers (e.g. xdist workers, CI jobs).

    Locks the directory itself so that no lock file is left next to the
    committed baselines. A writer that finds it locked says once who holds it
    (``say``) and waits up to ``timeout`` seconds, then raises BaselineError
    naming the holder and how long it waited. Where flock is unavailable
    (Windows) writers are not serialized; each write is still atomic.
    """
    try:
        import fcntl
    except ImportError:
        yield
        return
    try:
        fd = os.open(str(directory), os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        t0, told = time.monotonic(), False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                waited = time.monotonic() - t0
                if waited >= timeout:
                    raise BaselineError(
                        f"the baselines directory {directory} is locked by "
                        f"{lock_holder(directory) or 'another process'}"
                        f" (recording or pruning baselines); gave up after waiting {waited:.1f}s ({_LOCK_SETTING}); "
                        "nothing was written"
                    ) from None
                if not told and say is not None:
                    say(
                        f"waiting for the lock of the baselines directory {directory}, held by "
                        f"{lock_holder(directory) or 'another process'} (at most {timeout:g}s)"
                    )
                    told = True
                time.sleep(min(poll, max(0.0, timeout - waited)))
            except OSError:
                break  # a file system without flock: not serialized, each write still atomic
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


class BaselineStore:
    """Baselines files under ``directory``, one per profile id."""

    def __init__(
        self,
        directory: Union[str, os.PathLike],
        *,
        lock_timeout: float = LOCK_TIMEOUT_S,
        say: "Callable[[str], None] | None" = None,
    ) -> None:
        """Use ``directory`` (created on the first update) to hold the files; a writer waits up to
        ``lock_timeout`` seconds for another one's lock, telling ``say`` once that it waits."""
        self.directory = Path(directory)
        self.lock_timeout = lock_timeout
        self._say = say

    def path_for(self, profile_id: str) -> Path:
        """The file that holds the baselines of ``profile_id``."""
        return self.directory / f"{validate_profile_id(profile_id)}.json"

    def profiles(self) -> "List[str]":
        """The profile ids that have a file here, sorted (none when the directory does not exist)."""
        if not self.directory.is_dir():
            return []
        return sorted(p.stem for p in self.directory.glob("*.json") if p.is_file())

    def recorded_profiles(self) -> "Dict[str, Dict[str, object]]":
        """Profile id -> the facts its file records (files that cannot be read are left out: this is
        for information, e.g. the nearest recorded profile of a machine without baselines)."""
        out: "Dict[str, Dict[str, object]]" = {}
        for pid in self.profiles():
            try:
                data = self.load(pid)
            except (BaselineError, ValueError):
                continue
            if data.entries:
                out[pid] = dict((data.profile or {}).get("facts") or {})
        return out

    def adopt(self, old_id: str, profile_dict: Mapping[str, object]) -> Path:
        """Move the entries of ``old_id``'s file, recorded under the older profile scheme, to the profile
        ``profile_dict`` (its id names the new file); the old file is removed once the new one is written.

        Refused (BaselineError, nothing changed) when the old file does not exist, is of today's scheme
        (it names its CPU: its entries belong to that CPU), or the new file already holds entries.
        """
        new_id = str(profile_dict["id"])
        with _directory_lock(self.directory):
            old = self.load(old_id)
            if not old.exists or not old.entries:
                raise BaselineError(f"baselines file {old.path} does not exist or holds no entries: nothing to adopt")
            if not is_legacy((old.profile or {}).get("facts")):
                raise BaselineError(
                    f"baselines file {old.path} was recorded under today's profile scheme: it names "
                    "the CPU it ran on, so its entries belong to that profile; nothing was moved"
                )
            target = self.load(new_id)
            if target.entries:
                raise BaselineError(
                    f"baselines file {target.path} already holds {len(target.entries)} entries; "
                    f"{old.path} was left untouched (prune one of them first)"
                )
            header = {**dict(profile_dict), "adopted_from": old_id}
            document = {"schema_version": SCHEMA_VERSION, "profile": header, "entries": old.entries}
            validate(document, "baselines", f"the new content of baselines file {target.path}")
            atomic_write_text(target.path, json.dumps(document, sort_keys=True, indent=2, allow_nan=False) + "\n")
            os.unlink(old.path)
        return target.path

    def load(self, profile_id: str) -> BaselineFile:
        """Read the file of ``profile_id``; a missing file is an empty one.

        Raises BaselineError when the file is corrupt or has another schema.
        """
        path = self.path_for(profile_id)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return BaselineFile(path=path, exists=False)
        except OSError as exc:
            raise BaselineError(f"baselines file {path} cannot be read: {exc}") from None
        return _parse(path, raw)

    def get(self, profile_id: str, key: str) -> Optional[Dict[str, object]]:
        """The entry ``key`` of ``profile_id``, or None when there is none."""
        return self.load(profile_id).get(key)

    def update(
        self,
        profile_id: str,
        profile_dict: Mapping[str, object],
        entries: Mapping[str, Mapping[str, object]],
    ) -> Path:
        """Merge ``entries`` into the file of ``profile_id`` and write it atomically.

        Entries not named in ``entries`` are kept as they are (schema_version 1
        entries are migrated to sessions); named ones are replaced whole. The profile header is replaced by
        ``profile_dict``, since the new entries were measured on that profile. A file that
        cannot be parsed raises BaselineError and is not overwritten.
        Returns the path written.
        """

        def merge(current: BaselineFile) -> Dict[str, Dict[str, object]]:
            merged = dict(current.entries)
            for key, entry in entries.items():
                if not isinstance(entry, Mapping):
                    raise TypeError(f"entry {key!r} is a {type(entry).__name__}, expected a mapping")
                merged[str(key)] = migrate_entry(entry)
            return merged

        return self._rewrite(profile_id, profile_dict, merge)

    def add_sessions(
        self,
        profile_id: str,
        profile_dict: Mapping[str, object],
        sessions: Mapping[str, "tuple[Mapping[str, object], Mapping[str, object]]"],
        *,
        window: int,
        already: "List[str] | None" = None,
    ) -> Path:
        """Add one recorded session to each named entry, keeping the last ``window`` sessions.

        An entry that already holds its session (one results file recorded twice) is left as it is,
        and its key appended to ``already`` when given.

        ``sessions`` maps KEY to ``(head, session)``: the entry's identity
        (test, trick, topology, workload) and the session
        (:func:`~.entries.make_session`). Entries not named are kept as they
        are; a named entry that does not exist yet is created. Read, merge
        and write happen under one lock; the write is atomic.
        """

        def merge(current: BaselineFile) -> Dict[str, Dict[str, object]]:
            merged = dict(current.entries)
            for key, (head, session) in sessions.items():
                if already is not None and holds_session(current.get(str(key)), session):
                    already.append(str(key))
                merged[str(key)] = add_session(current.get(str(key)), head, session, window=window)
            return merged

        return self._rewrite(profile_id, profile_dict, merge)

    def _rewrite(
        self,
        profile_id: str,
        profile_dict: Mapping[str, object],
        merge: "Callable[[BaselineFile], Dict[str, Dict[str, object]]]",
    ) -> Path:
        path = self.path_for(profile_id)
        self.directory.mkdir(parents=True, exist_ok=True)
        with _directory_lock(self.directory, self.lock_timeout, self._say):
            current = self.load(profile_id)
            document = {
                "schema_version": SCHEMA_VERSION,
                "profile": dict(profile_dict),
                "entries": merge(current),
            }
            try:
                # allow_nan=False: NaN/Infinity are not JSON and other tools
                # reading the committed file would choke on them.
                text = json.dumps(document, sort_keys=True, indent=2, allow_nan=False, ensure_ascii=False) + "\n"
            except (TypeError, ValueError) as exc:
                raise BaselineError(
                    f"cannot write baselines file {path}: the data is not plain JSON ({exc}); "
                    "the file was left untouched"
                ) from None
            try:
                validate(document, "baselines", f"the new content of baselines file {path}")
            except SchemaError as exc:
                raise BaselineError(f"{exc}\nthe file was left untouched") from None
            atomic_write_text(path, text)
        return path

    def remove(self, profile_id: str, keys: Sequence[str]) -> Path:
        """Delete the entries ``keys`` from the file of ``profile_id`` and write it atomically.

        Unknown keys are an error (nothing is written), as is a file that cannot be parsed.
        Returns the path written.
        """
        path = self.path_for(profile_id)
        with _directory_lock(self.directory, self.lock_timeout, self._say):
            current = self.load(profile_id)
            unknown = [k for k in keys if k not in current.entries]
            if not current.exists or unknown:
                raise BaselineError(
                    f"baselines file {path} has no entr{'y' if len(unknown) == 1 else 'ies'} "
                    f"{', '.join(map(repr, unknown or keys))}; it was left untouched"
                )
            document = {
                "schema_version": SCHEMA_VERSION,
                "profile": current.profile,
                "entries": {k: v for k, v in current.entries.items() if k not in set(keys)},
            }
            atomic_write_text(
                path, json.dumps(document, sort_keys=True, indent=2, allow_nan=False, ensure_ascii=False) + "\n"
            )
        return path


def check_baseline_quality(samples: Sequence[float], *, max_rel_spread: float) -> Optional[str]:
    """Why ``samples`` should not become a baseline, or None when they may.

    Refuses fewer than 2 samples (the noise of a single run is unknown) and
    samples whose spread (stdev/mean, see :class:`~pytest_bpsperf.stats.Summary`)
    exceeds ``max_rel_spread``.
    """
    if not max_rel_spread > 0:
        raise ValueError(f"max_rel_spread is {max_rel_spread!r}, expected a number > 0")
    summary = summarize(samples)
    if summary.n < 2:
        return (
            f"only {summary.n} sample: a baseline needs at least 2 runs to know its own noise; "
            "record it with more repeats, e.g. --bpsperf-repeats=3"
        )
    if summary.rel_spread > max_rel_spread:
        return (
            f"the {summary.n} runs spread {summary.rel_spread:.1%} (stdev/mean, "
            f"{summary.min:.4g}..{summary.max:.4g} img/s), more than the allowed "
            f"{max_rel_spread:.1%}: such a baseline could only catch large drops; record it "
            "with more repeats (--bpsperf-repeats) on a quieter machine, or raise the limit"
        )
    return None
