"""The ``bpsperf`` subcommands: each takes the parsed arguments, prints, and returns the exit status."""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from ..judge.offline import baseline_sessions, check_results, compare_results, pair_verdicts, profile_of
from ..judge.pairs import PairedVerdict
from ..judge.verdict import IMPROVEMENT, INCONCLUSIVE, NO_BASELINE, REGRESSION, Verdict
from ..remote.provenance import utc_now_iso
from ..store.baselines import BaselineStore
from ..store.entries import latest_date, latest_session
from ..store.files import atomic_write_text
from ..store.history import HistoryStore, check_commit, current_branch, make_record, trends
from ..store.results import jobs_of, read_document


def _write(path: "str | Path", text: str, option: str = "") -> None:
    """Write ``text`` to the file ``path`` (its directories made); ValueError naming ``option`` and the path
    when it is a directory or cannot be written."""
    target = Path(path).absolute()
    what = f"{option} {path}" if option else str(path)
    if target.is_dir():
        raise ValueError(f"cannot write {what}: it is a directory; expected the path of a file")
    try:
        _make_dir(target.parent, what)
        atomic_write_text(target, text)
    except OSError as exc:
        raise ValueError(f"cannot write {what}: {exc.strerror or exc}") from None


def _make_dir(directory: Path, what: str) -> None:
    """Make ``directory`` (and its parents); ValueError naming ``what`` when a plain file is in the way."""
    check = directory
    while not check.exists() and check != check.parent:
        check = check.parent
    if not check.is_dir():
        raise ValueError(f"cannot write {what}: {check} is a file, not a directory")
    directory.mkdir(parents=True, exist_ok=True)


def _exit_status(verdicts: "Sequence[Verdict | PairedVerdict]", strict: bool) -> int:
    """1 on a regression (with ``strict``, also on an inconclusive verdict or a missing baseline, as the
    plugin's ``--bpsperf-strict`` fails them), else 0."""
    failing = (REGRESSION, INCONCLUSIVE, NO_BASELINE) if strict else (REGRESSION,)
    return 1 if any(v.status in failing for v in verdicts) else 0


def _hints(verdicts: "Sequence[Verdict | PairedVerdict]", strict: bool) -> "list[str]":
    """What the statuses ask of the reader: record new baselines, or know that inconclusive is no pass."""
    out = []
    if any(v.status == IMPROVEMENT for v in verdicts):
        out.append("faster beyond noise: consider recording new baselines (bpsperf baselines record RESULTS.json)")
    if any(v.status == INCONCLUSIVE for v in verdicts) and not strict:
        out.append("inconclusive: the data could not tell (not a pass; --strict fails it)")
    return out


def _verdicts_out(
    args: argparse.Namespace,
    verdicts: "Sequence[Verdict | PairedVerdict]",
    *,
    header: Sequence[str] = (),
    notes: Sequence[str] = (),
    exit_floor: int = 0,
    **facts: Any,
) -> int:
    """Print the verdicts (text: the header, one line per verdict, a count, the notes; or with ``--json``
    one document) and return the exit status."""
    from ..report.text import verdict_line
    from .output import dumps, verdicts_document

    status = max(_exit_status(verdicts, args.strict), exit_floor)
    notes = [*notes, *_hints(verdicts, args.strict)]
    if args.json:
        print(
            dumps(
                verdicts_document(args.command, verdicts, exit_status=status, strict=args.strict, notes=notes, **facts)
            ),
            end="",
        )
        return status
    for line in header:
        print(line)
    for v in verdicts:
        print(verdict_line(v))
    counts = {s: sum(v.status == s for v in verdicts) for s in dict.fromkeys(v.status for v in verdicts)}
    print(", ".join(f"{n} {s}" for s, n in counts.items()) or "no jobs in the results")
    for line in notes:
        print(line)
    if facts.get("markdown"):
        print(f"wrote {facts['markdown']}")
    return status


def compare(args: argparse.Namespace) -> int:
    """``bpsperf compare BASE.json HEAD.json``, or ``bpsperf compare PAIRS.json`` (a base-vs-head session)."""
    facts = {"base": args.base, "head": args.head}
    verdicts: "Sequence[Verdict | PairedVerdict]"
    if args.head is None:
        results = read_document(args.base, "results")
        verdicts = pair_verdicts(results, tolerance=args.tolerance)
        if not verdicts:
            raise ValueError(
                f"{args.base} holds no base-vs-head session (--bpsperf-base); compare two results "
                "files with: bpsperf compare BASE.json HEAD.json"
            )
        return _verdicts_out(args, verdicts, base_vs_head=True, missing=[], **facts)
    base, head = read_document(args.base, "results"), read_document(args.head, "results")
    verdicts, missing = compare_results(base, head, tolerance=args.tolerance, session_spread=args.session_spread)
    # jobs that ran in BASE but not in HEAD: nothing of them was measured, which --strict does not pass
    not_in_head = sorted(set(jobs_of(base)) - set(jobs_of(head)))
    header = [f"note: {args.base} has no runs of {key}" for key in missing]
    header += [f"note: {args.head} has no runs of {key}" for key in not_in_head]
    status_floor = 1 if args.strict and (not_in_head or not verdicts) else 0
    if args.strict and not verdicts:
        header.append(f"{args.head} has no runs: nothing was measured (--strict fails it)")
    return _verdicts_out(
        args,
        verdicts,
        header=header,
        base_vs_head=False,
        missing=list(missing),
        not_in_head=not_in_head,
        exit_floor=status_floor,
        **facts,
    )


def check(args: argparse.Namespace) -> int:
    """``bpsperf check RESULTS.json``: against the stored baselines, or a base-vs-head session's own pairs."""
    from ..report.markdown import verdict_markdown

    results = read_document(args.results, "results")
    verdicts: "Sequence[Verdict | PairedVerdict]"
    facts: "dict[str, Any]"
    if results.get("base_vs_head"):
        verdicts = pair_verdicts(results, tolerance=args.tolerance)
        header = f"base vs head ({args.results}): decided from its pairs, no stored baseline"
        facts = {"base_vs_head": True, "profile": (results.get("profile") or {}).get("id"), "baselines": None}
    else:
        profile_id = profile_of(results, args.profile, source=args.results)
        store = BaselineStore(args.baselines_dir)
        history = HistoryStore(args.history).load(profile_id) if args.history else []
        verdicts = check_results(results, store, profile_id=profile_id, tolerance=args.tolerance, history=history)
        header = f"profile {profile_id}, baselines {store.path_for(profile_id)}"
        facts = {"base_vs_head": False, "profile": profile_id, "baselines": str(store.path_for(profile_id))}
    if args.markdown:
        _write(args.markdown, "\n".join(["## bpsperf verdicts", ""] + verdict_markdown(verdicts)) + "\n", "--markdown")
    return _verdicts_out(
        args, verdicts, header=[header], results=args.results, history=args.history, markdown=args.markdown, **facts
    )


def _profile_rows(directory: str) -> "list[dict]":
    """A row per profile file of a baselines directory: its path, how many entries, the latest session's date."""
    store = BaselineStore(directory)
    rows = []
    for f in sorted(Path(directory).glob("*.json")) if Path(directory).is_dir() else []:
        data = store.load(f.stem)
        dates = sorted(str(latest_session(e).get("date") or "") for e in data.entries.values())
        rows.append(
            {
                "profile": f.stem,
                "path": str(f),
                "entries": len(data.entries),
                "latest": (dates[-1] or None) if dates else None,
            }
        )
    return rows


def baselines_list(args: argparse.Namespace) -> int:
    """``bpsperf baselines list``."""
    from .output import baselines_document, dumps

    rows = _profile_rows(args.baselines_dir)
    if args.json:
        print(dumps(baselines_document(args.baselines_dir, rows)), end="")
        return 0
    if not rows:
        print(f"no baselines files in {args.baselines_dir}")
        return 0
    print(f"{'profile':48s} {'entries':>7s}  latest")
    for row in rows:
        print(f"{row['profile']:48s} {row['entries']:7d}  {row['latest'] or '-'}")
    return 0


def _entry_row(key: str, entry: dict) -> dict:
    """One baseline entry as ``baselines show`` gives it: summary of its samples, sessions, the latest one."""
    from ..stats import summarize
    from ..store.entries import entry_samples, entry_sessions

    s, last = summarize(entry_samples(entry)), latest_session(entry)
    return {
        "key": key,
        "test": entry.get("test"),
        "trick": entry.get("trick"),
        "median_img_per_sec": s.median,
        "n": s.n,
        "rel_spread": s.rel_spread,
        "sessions": len(entry_sessions(entry)),
        "latest_commit": last.get("commit"),
        "latest_date": last.get("date"),
        "topology": dict(entry.get("topology") or {}),
        "workload": dict(entry.get("workload") or {}),
    }


def baselines_show(args: argparse.Namespace) -> int:
    """``bpsperf baselines show PROFILE``."""
    from .output import dumps, entries_document

    data = BaselineStore(args.baselines_dir).load(args.profile)
    if not data.exists:
        raise ValueError(f"no baselines file {data.path} (bpsperf baselines list shows the profiles)")
    rows = [_entry_row(key, data.entries[key]) for key in sorted(data.entries)]
    if args.json:
        print(dumps(entries_document(args.baselines_dir, args.profile, data.path, rows)), end="")
        return 0
    print(f"{data.path}: {len(data.entries)} entries")
    for r in rows:
        print(
            f"{r['test']} [{r['trick']}]: median {r['median_img_per_sec']:.1f} img/s, n={r['n']}, spread "
            f"{100 * r['rel_spread']:.0f}%, {r['sessions']} session(s), latest commit "
            f"{(r['latest_commit'] or '-')[:12]}, {r['latest_date'] or '-'}"
        )
        print(f"    key {r['key']}")
    return 0


def _writer(args: argparse.Namespace) -> BaselineStore:
    """The store of ``--baselines-dir`` for a command that writes it: it waits ``--lock-timeout`` seconds
    for another writer's lock, and says so on stderr."""
    import sys

    return BaselineStore(
        args.baselines_dir,
        lock_timeout=args.lock_timeout,
        say=lambda message: print(f"bpsperf baselines: {message}", file=sys.stderr, flush=True),
    )


def baselines_record(args: argparse.Namespace) -> int:
    """``bpsperf baselines record RESULTS.json``."""
    results = read_document(args.results, "results")
    profile_id = profile_of(results, args.profile, source=args.results)
    sessions, refused = baseline_sessions(results, max_spread=args.max_spread, force=args.force)
    profile = dict(results.get("profile") or {"id": profile_id})
    profile["id"] = profile_id
    if sessions:
        already: "list[str]" = []
        path = _writer(args).add_sessions(profile_id, profile, sessions, window=args.sessions, already=already)
        for key in already:
            print(
                f"already recorded: {key} holds this session of {args.results} (commit "
                f"{str(results.get('commit') or '-')[:12]}, {results.get('date') or 'undated'}): not added again"
            )
        added = len(sessions) - len(already)
        if added:
            print(
                f"recorded {added} baseline entr{'y' if added == 1 else 'ies'} in {path} "
                f"(a session each; each keeps its last {args.sessions})"
            )
    for line in refused:
        print(f"refused: {line}")
    return 1 if refused else 0


def baselines_adopt(args: argparse.Namespace) -> int:
    """``bpsperf baselines adopt OLD_PROFILE [--to PROFILE]``: move a file of the older profile scheme to this
    machine's profile (or ``--to``'s), for a person who knows it was recorded on this kind of CPU."""
    from ..remote.hardware import collect_facts, core_count, local_gpus
    from ..store.profile import Profile, differences, legacy_id, make_profile

    store = BaselineStore(args.baselines_dir)
    if args.to:
        # a profile named by hand (a cluster's, from a session's header): its facts come with its next recording
        target = Profile(name=args.to, hash="", facts={}, override=args.to)
    else:  # this machine as the embedded Ray sees it: one node with its cores and GPUs
        target = make_profile(collect_facts(cluster={"nodes": [{"gpus": len(local_gpus()), "cpus": core_count()}]}))
        if legacy_id(target.facts) != args.profile and not args.force:
            recorded = dict((store.load(args.profile).profile or {}).get("facts") or {})
            told = "; ".join(d for d in differences(recorded, target.facts) if not d.startswith("recorded before"))
            raise ValueError(
                f"{store.path_for(args.profile)} was not recorded on this machine: under the older "
                f"scheme this machine is {legacy_id(target.facts)}, and the facts differ ({told or 'ids'}); "
                "nothing was moved (--force moves them anyway, --to names another profile)"
            )
    path = store.adopt(args.profile, target.as_dict())
    print(
        f"moved the entries of {store.path_for(args.profile)} to {path} (profile {target.id}); "
        f"{store.path_for(args.profile)} is gone"
    )
    return 0


def baselines_prune(args: argparse.Namespace) -> int:
    """``bpsperf baselines prune PROFILE [--test GLOB] [--trick NAME] [--older-than DATE]``."""
    store = _writer(args)
    data = store.load(args.profile)
    if not data.exists:
        raise ValueError(f"no baselines file {data.path} (bpsperf baselines list shows the profiles)")
    if not (args.test or args.trick or args.older_than):
        raise ValueError(
            f"prune needs at least one of --test, --trick, --older-than (to remove a whole profile, delete {data.path})"
        )
    keys, undated = [], []
    for k, e in sorted(data.entries.items()):
        if (args.test and not fnmatch.fnmatchcase(str(e.get("test")), args.test)) or (
            args.trick and e.get("trick") != args.trick
        ):
            continue
        if args.older_than:
            # An entry is as old as its latest recorded session (schema 2 keeps dates there only).
            date = latest_date(e)
            if date is None:
                undated.append(k)
                continue
            if date >= args.older_than:
                continue
        keys.append(k)
    for key in undated:
        print(f"keep {key}: none of its sessions records a date (--older-than cannot judge it)")
    for key in keys:
        print(f"{'would remove' if args.dry_run else 'remove'} {key}")
    if keys and not args.dry_run:
        path = store.remove(args.profile, keys)
        print(f"removed {len(keys)} entr{'y' if len(keys) == 1 else 'ies'} from {path}")
    elif not keys:
        print("nothing matches")
    return 0


def history_add(args: argparse.Namespace) -> int:
    """``bpsperf history add RESULTS.json [--history DIR]``."""
    results = read_document(args.results, "results")
    if results.get("simulation"):  # as baselines record: a stand-in's figures never become history
        print(
            f"refused: {args.results} is a simulation ({results['simulation']}): never a point of the history",
            file=sys.stderr,
        )
        return 1
    profile_id = profile_of(results, args.profile, source=args.results)
    profile = dict(results.get("profile") or {})
    profile["id"] = profile_id
    commit = (
        check_commit(args.commit, "--commit")
        if args.commit
        else check_commit(results.get("commit"), f"results file {args.results}")
    )
    record = make_record(
        results,
        profile=profile,
        commit=commit,
        branch=args.branch or results.get("branch") or current_branch(),
        date=results.get("date") or utc_now_iso(),
        versions=results.get("versions") or {},
    )
    path = HistoryStore(args.history).save(record)
    print(f"saved {len(record['runs'])} runs of commit {(record['commit'] or '-')[:12]} in {path}")
    return 0


def _selected_trends(args: argparse.Namespace) -> list:
    store = HistoryStore(args.history)
    found = trends(store.load(args.profile), profile_id=args.profile, branch=args.branch)
    if getattr(args, "test", None):
        found = [
            t
            for t in found
            if fnmatch.fnmatchcase(t.test, args.test) or fnmatch.fnmatchcase(t.test.split("::")[-1], args.test)
        ]
    return found


def history_show(args: argparse.Namespace) -> int:
    """``bpsperf history [show] [--history DIR]``."""
    from ..report.pages import trend_lines
    from .output import dumps, trends_document

    found = _selected_trends(args)
    if args.json:
        print(
            dumps(
                trends_document(
                    found, directory=str(args.history), profile=args.profile, branch=args.branch, test=args.test
                )
            ),
            end="",
        )
        return 0
    if not found:
        print(f"no history in {args.history}" + (f" for profile {args.profile}" if args.profile else ""))
        return 0
    for line in trend_lines(found):
        print(line)
    return 0


def report(args: argparse.Namespace) -> int:
    """``bpsperf report --results R.json --history DIR --out DIR``.

    Of a results file, the report its session wrote (``--bpsperf-markdown``):
    the same pieces from the same document, with its verdicts as the session
    decided them (``bpsperf check`` decides again); with ``--history`` the trend
    of each of its jobs. Pictures go to ``bpsperf-img/`` in ``--out``, as they go
    next to the plugin's Markdown.
    """
    from ..report import blocks, pages
    from ..report.plots import session_pictures
    from ..store.results import jobs_of, run_key_of

    if not args.results and not args.history:
        raise ValueError("report needs --results RESULTS.json, --history DIR, or both")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {args.out} is a file; expected a directory (the report and its pictures go there)")
    try:
        _make_dir(out.absolute(), f"--out {args.out}")
    except OSError as exc:
        raise ValueError(f"--out {args.out}: cannot make the directory: {exc.strerror or exc}") from None
    results = read_document(args.results, "results") if args.results else None
    baselines, tolerances = {}, {}
    profile_id = args.profile
    if results is not None:
        profile_id = (
            profile_of(results, args.profile, source=args.results)
            if (args.profile or (results.get("profile") or {}).get("id"))
            else None
        )
        tolerances = {k: j.tolerance for k, j in jobs_of(results).items()}
    if profile_id:
        baselines = dict(BaselineStore(args.baselines_dir).load(profile_id).entries)  # the bands of the pictures
    found = []
    if args.history:
        found = trends(HistoryStore(args.history).load(profile_id), profile_id=profile_id, branch=args.branch)
        if results is not None:  # the jobs of this session, as its own report shows them
            keys = {run_key_of(r) for r in results.get("tests", [])}
            found = [t for t in found if t.key in keys]
    pictures = session_pictures(
        results or {}, out / pages.PICTURES_DIR, trends=found, baselines=baselines, tolerances=tolerances
    )
    if results is not None:
        page = pages.session_page(results, trends=found, pictures=pictures, relative_to=out)
    else:
        header = ([f"profile {profile_id}"] if profile_id else []) + [f"history {args.history}: {len(found)} job(s)"]
        page = pages.history_page(header, found, pictures, out)
    if args.format == "html":
        path, text = out / "report.html", blocks.html_page(page, title="bpsperf report")
    else:
        path, text = out / "report.md", blocks.markdown(page)
    _write(path, text)
    print(f"wrote {path} with {len(pictures)} picture(s) in {out / pages.PICTURES_DIR}")
    return 0  # a report is made whatever the verdicts; 'check' is the gate


def exporters() -> "dict[str, Callable[[dict[str, Any]], Any]]":
    """What ``bpsperf export`` makes of a results document, by the name of the plugin's report option
    that writes the same file (``github_benchmark`` is ``--bpsperf-github-benchmark``)."""
    from ..report.exports import benchmark_export, bmf_export, github_benchmark_export

    return {
        "benchmark_json": lambda results: benchmark_export(results, (results.get("profile") or {}).get("id")),
        "bmf": bmf_export,
        "github_benchmark": github_benchmark_export,
    }


def export(args: argparse.Namespace) -> int:
    """``bpsperf export RESULTS.json --format bmf|github-benchmark|benchmark-json -o PATH``."""
    results = read_document(args.results, "results")
    doc = exporters()[args.format.replace("-", "_")](results)
    _write(args.output, json.dumps(doc, indent=2, sort_keys=True, allow_nan=False, ensure_ascii=False) + "\n", "-o")
    print(f"wrote {args.output} ({args.format})")
    return 0


def comment(args: argparse.Namespace) -> int:
    """``bpsperf comment RESULTS.json --markdown REPORT.md --marker KIND [--link URL] --out PATH``."""
    from ..report.comment import comment_body

    results = read_document(args.results, "results")
    try:
        with open(args.markdown, encoding="utf-8") as f:
            markdown = f.read()
    except OSError as exc:
        raise ValueError(f"--markdown {args.markdown}: cannot read it ({exc.strerror or exc})") from None
    body = comment_body(results, markdown, marker=args.marker, link=args.link)
    _write(args.out, body, "--out")
    print(f"wrote {args.out} ({len(body):,} characters)")
    return 0


def bisect(args: argparse.Namespace) -> int:
    """``bpsperf bisect GOOD BAD [-- PYTEST_ARGS]`` (see :mod:`.bisect`); Ctrl-C ends it with status 130."""
    from .bisect import bisect as run_bisect

    try:
        return run_bisect(args)
    except KeyboardInterrupt:
        print(
            "bpsperf bisect: interrupted (each session removed its own worktrees; the logs so far are in "
            f"{Path(args.out) / 'sessions'})",
            file=sys.stderr,
        )
        return 130
    except ValueError:
        raise  # bad input: main() says so, exit 2
    except Exception:  # noqa: BLE001 - an internal error must not read as exit 1 ("no drop")
        import traceback

        traceback.print_exc()
        print("bpsperf bisect: internal error (a bug: please report it with the traceback above)", file=sys.stderr)
        return 3
