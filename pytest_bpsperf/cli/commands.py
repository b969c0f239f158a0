"""The ``bpsperf`` subcommands: each takes the parsed arguments, prints, and returns the exit status."""

from __future__ import annotations

import argparse
import fnmatch
import json
from pathlib import Path
from typing import Sequence

from ..judge.offline import baseline_sessions, check_results, compare_results, pair_verdicts, profile_of
from ..judge.verdict import IMPROVEMENT, INCONCLUSIVE, REGRESSION, Verdict
from ..remote.provenance import utc_now_iso
from ..store.baselines import BaselineStore
from ..store.entries import latest_date, latest_session
from ..store.files import atomic_write_text
from ..store.history import HistoryStore, check_commit, current_branch, make_record, trends
from ..store.results import read_document


def _write(path: "str | Path", text: str) -> None:
    target = Path(path).absolute()
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, text)


def _print_verdicts(verdicts: Sequence[Verdict], strict: bool = False) -> int:
    """One line per verdict and a count; exit 1 on a regression (with ``strict``, also on inconclusive)."""
    from ..report.text import verdict_line

    for v in verdicts:
        print(verdict_line(v))
    counts = {s: sum(v.status == s for v in verdicts) for s in dict.fromkeys(v.status for v in verdicts)}
    print(", ".join(f"{n} {s}" for s, n in counts.items()) or "no jobs in the results")
    if any(v.status == IMPROVEMENT for v in verdicts):
        print("faster beyond noise: consider recording new baselines (bpsperf baselines record RESULTS.json)")
    failing = (REGRESSION, INCONCLUSIVE) if strict else (REGRESSION,)
    if any(v.status == INCONCLUSIVE for v in verdicts) and not strict:
        print("inconclusive: the data could not tell (not a pass; --strict fails it)")
    return 1 if any(v.status in failing for v in verdicts) else 0


def compare(args: argparse.Namespace) -> int:
    """``bpsperf compare BASE.json HEAD.json``, or ``bpsperf compare PAIRS.json`` (a base-vs-head session)."""
    if args.head is None:
        results = read_document(args.base, "results")
        verdicts = pair_verdicts(results, tolerance=args.tolerance)
        if not verdicts:
            raise ValueError(f"{args.base} holds no base-vs-head session (--bpsperf-base); compare two results "
                             "files with: bpsperf compare BASE.json HEAD.json")
        return _print_verdicts(verdicts, args.strict)
    base, head = read_document(args.base, "results"), read_document(args.head, "results")
    verdicts, missing = compare_results(base, head, tolerance=args.tolerance, session_spread=args.session_spread)
    for key in missing:
        print(f"note: {args.base} has no runs of {key}")
    return _print_verdicts(verdicts, args.strict)


def check(args: argparse.Namespace) -> int:
    """``bpsperf check RESULTS.json``: against the stored baselines, or a base-vs-head session's own pairs."""
    from ..report.markdown import verdict_markdown

    results = read_document(args.results, "results")
    if results.get("base_vs_head"):
        verdicts = pair_verdicts(results, tolerance=args.tolerance)
        print(f"base vs head ({args.results}): decided from its pairs, no stored baseline")
        status = _print_verdicts(verdicts, args.strict)
        if args.markdown:
            _write(args.markdown, "\n".join(["## bpsperf verdicts", ""] + verdict_markdown(verdicts)) + "\n")
            print(f"wrote {args.markdown}")
        return status
    profile_id = profile_of(results, args.profile, source=args.results)
    history = HistoryStore(args.history).load(profile_id) if args.history else []
    verdicts = check_results(results, BaselineStore(args.baselines_dir), profile_id=profile_id,
                             tolerance=args.tolerance, history=history)
    print(f"profile {profile_id}, baselines {BaselineStore(args.baselines_dir).path_for(profile_id)}")
    status = _print_verdicts(verdicts, args.strict)
    if args.markdown:
        _write(args.markdown, "\n".join(["## bpsperf verdicts", ""] + verdict_markdown(verdicts)) + "\n")
        print(f"wrote {args.markdown}")
    return status


def baselines_list(args: argparse.Namespace) -> int:
    """``bpsperf baselines list``."""
    store = BaselineStore(args.dir)
    files = sorted(Path(args.dir).glob("*.json")) if Path(args.dir).is_dir() else []
    if not files:
        print(f"no baselines files in {args.dir}")
        return 0
    print(f"{'profile':48s} {'entries':>7s}  latest")
    for f in files:
        data = store.load(f.stem)
        dates = sorted(str(latest_session(e).get("date") or "") for e in data.entries.values())
        print(f"{f.stem:48s} {len(data.entries):7d}  {dates[-1] if dates else '-'}")
    return 0


def baselines_show(args: argparse.Namespace) -> int:
    """``bpsperf baselines show PROFILE``."""
    from ..stats import summarize
    from ..store.entries import entry_samples, entry_sessions, latest_session

    data = BaselineStore(args.dir).load(args.profile)
    if not data.exists:
        raise ValueError(f"no baselines file {data.path} (bpsperf baselines list shows the profiles)")
    print(f"{data.path}: {len(data.entries)} entries")
    for key in sorted(data.entries):
        e = data.entries[key]
        s, last = summarize(entry_samples(e)), latest_session(e)
        print(f"{e.get('test')} [{e.get('trick')}]: median {s.median:.1f} img/s, n={s.n}, spread "
              f"{100 * s.rel_spread:.0f}%, {len(entry_sessions(e))} session(s), latest commit "
              f"{(last.get('commit') or '-')[:12]}, {last.get('date') or '-'}")
        print(f"    key {key}")
    return 0


def baselines_record(args: argparse.Namespace) -> int:
    """``bpsperf baselines record RESULTS.json``."""
    results = read_document(args.results, "results")
    profile_id = profile_of(results, args.profile, source=args.results)
    sessions, refused = baseline_sessions(results, max_spread=args.max_spread, force=args.force)
    profile = dict(results.get("profile") or {"id": profile_id})
    profile["id"] = profile_id
    if sessions:
        path = BaselineStore(args.dir).add_sessions(profile_id, profile, sessions, window=args.sessions)
        print(f"recorded {len(sessions)} baseline entr{'y' if len(sessions) == 1 else 'ies'} in {path} "
              f"(a session each; each keeps its last {args.sessions})")
    for line in refused:
        print(f"refused: {line}")
    return 1 if refused else 0


def baselines_prune(args: argparse.Namespace) -> int:
    """``bpsperf baselines prune PROFILE [--test GLOB] [--trick NAME] [--older-than DATE]``."""
    store = BaselineStore(args.dir)
    data = store.load(args.profile)
    if not data.exists:
        raise ValueError(f"no baselines file {data.path} (bpsperf baselines list shows the profiles)")
    if not (args.test or args.trick or args.older_than):
        raise ValueError("prune needs at least one of --test, --trick, --older-than (to remove a whole "
                         f"profile, delete {data.path})")
    keys, undated = [], []
    for k, e in sorted(data.entries.items()):
        if (args.test and not fnmatch.fnmatchcase(str(e.get("test")), args.test)) \
                or (args.trick and e.get("trick") != args.trick):
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
    """``bpsperf history add RESULTS.json --dir DIR``."""
    results = read_document(args.results, "results")
    profile_id = profile_of(results, args.profile, source=args.results)
    profile = dict(results.get("profile") or {})
    profile["id"] = profile_id
    commit = check_commit(args.commit, "--commit") if args.commit else \
        check_commit(results.get("commit"), f"results file {args.results}")
    record = make_record(results, profile=profile, commit=commit,
                         branch=args.branch or results.get("branch") or current_branch(),
                         date=results.get("date") or utc_now_iso(), versions=results.get("versions") or {})
    path = HistoryStore(args.dir).save(record)
    print(f"saved {len(record['runs'])} runs of commit {(record['commit'] or '-')[:12]} in {path}")
    return 0


def _selected_trends(args: argparse.Namespace) -> list:
    store = HistoryStore(args.dir)
    found = trends(store.load(args.profile), profile_id=args.profile, branch=args.branch)
    if getattr(args, "test", None):
        found = [t for t in found if fnmatch.fnmatchcase(t.test, args.test)
                 or fnmatch.fnmatchcase(t.test.split("::")[-1], args.test)]
    return found


def history_show(args: argparse.Namespace) -> int:
    """``bpsperf history [show] --dir DIR``."""
    from ..report.pages import trend_lines

    found = _selected_trends(args)
    if not found:
        print(f"no history in {args.dir}" + (f" for profile {args.profile}" if args.profile else ""))
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
    results = read_document(args.results, "results") if args.results else None
    baselines, tolerances = {}, {}
    profile_id = args.profile
    if results is not None:
        profile_id = profile_of(results, args.profile, source=args.results) if (
            args.profile or (results.get("profile") or {}).get("id")) else None
        tolerances = {k: j.tolerance for k, j in jobs_of(results).items()}
    if profile_id:
        baselines = dict(BaselineStore(args.baselines_dir).load(profile_id).entries)  # the bands of the pictures
    found = []
    if args.history:
        found = trends(HistoryStore(args.history).load(profile_id), profile_id=profile_id, branch=args.branch)
        if results is not None:  # the jobs of this session, as its own report shows them
            keys = {run_key_of(r) for r in results.get("tests", [])}
            found = [t for t in found if t.key in keys]
    pictures = session_pictures(results or {}, out / pages.PICTURES_DIR, trends=found, baselines=baselines,
                                tolerances=tolerances)
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


def export(args: argparse.Namespace) -> int:
    """``bpsperf export RESULTS.json --format bmf|github|pytest-benchmark -o PATH``."""
    from ..report.exports import benchmark_export, bmf_export, github_benchmark_export

    results = read_document(args.results, "results")
    if args.format == "bmf":
        doc = bmf_export(results)
    elif args.format == "github":
        doc = github_benchmark_export(results)
    else:
        doc = benchmark_export(results, (results.get("profile") or {}).get("id"))
    _write(args.output, json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n")
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
    _write(args.out, body)
    print(f"wrote {args.out} ({len(body):,} characters)")
    return 0
