"""The ``bpsperf`` command: verdicts, baselines, history, reports and exports from files.

Everything here works on files the plugin wrote (``--bpsperf-json`` results,
``baselines/``, a history directory) and makes the same decisions as the
plugin. It imports neither Ray nor MXNet, nor pytest, and starts in well
under a second.

Exit statuses (``EXIT_STATUSES``), one table for every command:

- 0: all is well;
- 1: the gate says no: a verdict is ``regression`` (with ``--strict`` also
  ``inconclusive``, a missing baseline, or a job that HEAD has no runs of), or
  a baseline was refused for its spread;
- 2: a usage or input error: a bad option or value, a file that cannot be read,
  parsed or written, a lock not taken in time; the message names the file or value;
- 3: an internal error (a bug of bpsperf): one line naming it; ``--debug`` shows the traceback.

No traceback is printed without ``--debug``.

``bisect`` reads them as a search does: 0 a culprit found, 1 none beyond the tolerance, 2 bad
input, 3 internal error, 4 the range could not be narrowed to one commit.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable, Optional, Sequence

from .. import __version__

__all__ = ["EXIT_STATUSES", "main", "split_pytest_args"]

OK, GATE_FAILED, INPUT_ERROR, INTERNAL_ERROR = 0, 1, 2, 3
#: What each exit status of ``bpsperf`` means (the module's docstring says when each is given).
EXIT_STATUSES = {
    OK: "ok",
    GATE_FAILED: "regression (the gate says no)",
    INPUT_ERROR: "usage or input error",
    INTERNAL_ERROR: "internal error",
}


def _setting(option: str, setting: str = "tolerance") -> Callable[[str], object]:
    """A parser for ``option`` that accepts what the plugin's ``setting`` does (``10%`` for a percentage)."""
    from ..config.settings import OPTIONS_BY_NAME

    parse = OPTIONS_BY_NAME[setting].parse

    def convert(text: str) -> object:
        if setting == "session_spread" and text.strip().rstrip("%").strip() in ("0", "0.0"):
            return 0.0  # none between sessions: both sides ran in one session
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{option} {text!r}: {exc}") from None

    return convert


def _date(option: str) -> Callable[[str], str]:
    """A parser for a calendar date option (``YYYY-MM-DD``); returns the text, as ISO dates compare."""
    import datetime

    def convert(text: str) -> str:
        try:
            return datetime.date.fromisoformat(text.strip()).isoformat()
        except ValueError:
            raise argparse.ArgumentTypeError(f"{option} {text!r}: expected a date YYYY-MM-DD") from None

    return convert


def _default(name: str) -> Any:
    """The plugin's default of setting ``name``: the CLI and the plugin share the option table."""
    from ..config.settings import OPTIONS_BY_NAME

    return OPTIONS_BY_NAME[name].default


#: ``default`` of :func:`_option` when the command takes the option table's default
TABLE = object()


def _option(
    q: argparse.ArgumentParser,
    name: str,
    help_text: str,
    *,
    metavar: "str | None" = None,
    default: object = TABLE,
    aliases: Sequence[str] = (),
) -> None:
    """``--NAME`` for the plugin's setting ``name`` (``--bpsperf-NAME``): its name dashed, its parser and
    accepted values, and its default from the option table unless ``default`` is given (None: each job's
    recorded setting). An on/off setting is a bare switch here. ``aliases``: earlier spellings kept."""
    from ..config.settings import OPTIONS_BY_NAME, flag

    opt = OPTIONS_BY_NAME[name]
    names = ["--" + name.replace("_", "-"), *aliases]
    value = opt.default if default is TABLE else default
    if opt.accepted == "on or off":
        q.add_argument(*names, dest=name, action="store_true", default=value, help=f"{help_text} [as {flag(name)}]")
        return
    accepted = opt.accepted.replace("%", "%%")
    q.add_argument(
        *names,
        dest=name,
        type=_setting(names[0], name),
        default=value,
        metavar=metavar,
        help=f"{help_text} [as {flag(name)}: {accepted}]",
    )


def _profile_argument(q: argparse.ArgumentParser) -> None:
    """The ``PROFILE`` operand: a profile id, checked as the plugin's ``profile`` setting is."""
    q.add_argument("profile", metavar="PROFILE", type=_setting("PROFILE", "profile"))


def _baselines_dir(
    q: argparse.ArgumentParser, help_text: str = "baselines directory", *, aliases: Sequence[str] = ()
) -> None:
    """``--baselines-dir`` (the plugin's setting ``baselines_dir``), default ``baselines`` in the working
    directory (the plugin's: under its rootdir)."""
    from ..config.settings import BASELINES_DIR

    _option(
        q, "baselines_dir", f"{help_text} (default: %(default)s)", metavar="DIR", default=BASELINES_DIR, aliases=aliases
    )


def _json_flag(q: argparse.ArgumentParser, default: object = False) -> None:
    """``--json``: the same facts as the text, as one JSON document on stdout (errors stay on stderr)."""
    q.add_argument(
        "--json",
        action="store_true",
        default=default,
        help="print one JSON document (sorted keys, schema_version; schema "
        "pytest_bpsperf/schemas/cli.schema.json) instead of text; same exit status, errors on "
        "stderr",
    )


_DEBUG_HELP = "on an internal error (exit status 3), print its traceback"

#: ``add(name, func, help, parent=None)``: a subcommand under ``parent`` (default: the top level).
Adder = Callable[..., argparse.ArgumentParser]


def _parser() -> argparse.ArgumentParser:
    """The ``bpsperf`` parser: one builder per command below, each adding its own arguments."""
    from . import commands as c

    p = argparse.ArgumentParser(
        prog="bpsperf",
        description=__doc__.split("\n\n")[0],
        epilog="exit statuses: " + ", ".join(f"{k} {v}" for k, v in EXIT_STATUSES.items()),
    )
    p.add_argument("--version", action="version", version=f"bpsperf {__version__}")
    p.add_argument("--debug", action="store_true", help=_DEBUG_HELP)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(name: str, func: "Callable | None", help_text: str, parent=None) -> argparse.ArgumentParser:
        q = (parent or sub).add_parser(name, help=help_text, description=help_text)
        q.set_defaults(func=func)
        # after the command too; SUPPRESS: unset there, it leaves the top level's value alone
        q.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=_DEBUG_HELP)
        return q

    for build in (
        _compare_command,
        _check_command,
        _baselines_command,
        _history_command,
        _report_command,
        _export_command,
        _comment_command,
        _bisect_command,
    ):
        build(add, c)
    return p


def _verdict_options(q: argparse.ArgumentParser) -> None:
    """The options of the commands that decide verdicts: the plugin's ``strict`` and ``tolerance``, ``--json``."""
    _option(q, "strict", "exit 1 on an inconclusive verdict or a missing baseline too")
    _option(q, "tolerance", "override each test's tolerance", metavar="PCT", default=None)
    _json_flag(q)


def _compare_command(add: Adder, c) -> None:
    """The ``compare`` command's arguments."""
    q = add(
        "compare",
        c.compare,
        "decide HEAD results against BASE results, or the pairs of one base-vs-head "
        "results file (exit 1 on a regression)",
    )
    q.add_argument("base", metavar="BASE.json", help="results of the base, or of a base-vs-head session alone")
    q.add_argument("head", metavar="HEAD.json", nargs="?", help="results of the head (omit for a base-vs-head file)")
    _verdict_options(q)
    _option(
        q,
        "session_spread",
        "spread between the two sessions to allow for (default: HEAD's session_spread "
        f"setting, {100 * _default('session_spread'):.0f}%%; two pytest sessions on one machine differ by "
        "more than runs of one session); 0 compares as if both ran in one session",
        metavar="PCT",
        default=None,
    )


def _check_command(add: Adder, c) -> None:
    """The ``check`` command's arguments."""
    q = add("check", c.check, "verdicts of a results file against the stored baselines (exit 1 on a regression)")
    q.add_argument("results", metavar="RESULTS.json")
    _baselines_dir(q)
    _option(q, "profile", "profile id (default: the one the results record)", metavar="PROFILE", default=None)
    _verdict_options(q)
    _report_option(q, "markdown", "also write the verdicts as Markdown")
    _report_option(
        q,
        "history",
        "the session's history directory: its sessions of one commit inform the spread "
        "between sessions, as in the plugin",
    )


def _baselines_command(add: Adder, c) -> None:
    """The ``baselines`` command's arguments."""
    b = add("baselines", None, "list, show, record, adopt and prune stored baselines")
    bsub = b.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name, func, text in (
        ("list", c.baselines_list, "one line per profile file"),
        ("show", c.baselines_show, "the entries of one profile"),
        ("record", c.baselines_record, "record baselines from an earlier run's results"),
        (
            "adopt",
            c.baselines_adopt,
            "move a file of the older profile scheme (CPUs named by "
            "model name alone) to this machine's profile, or --to another; only for baselines "
            "recorded on this kind of CPU",
        ),
        ("prune", c.baselines_prune, "delete entries (all matching the filters)"),
    ):
        q = add(name, func, text, bsub)
        _baselines_dir(q, aliases=("--dir",))
        if name in ("list", "show"):
            _json_flag(q)
        if name in ("show", "prune", "adopt"):
            _profile_argument(q)
        if name == "adopt":
            q.add_argument(
                "--to",
                metavar="PROFILE",
                type=_setting("--to", "profile"),
                default=None,
                help="the profile to move them to (default: this machine's, as a session on the embedded Ray names it)",
            )
            q.add_argument(
                "--force",
                action="store_true",
                help="move them although the older scheme's facts say another machine recorded them",
            )
        if name == "record":
            q.add_argument("results", metavar="RESULTS.json")
            _option(q, "profile", "profile id (default: the one the results record)", metavar="PROFILE", default=None)
            _option(q, "max_spread", "largest stdev/mean accepted (default: the test's)", metavar="PCT", default=None)
            q.add_argument("--force", action="store_true", help="record entries whose runs spread too much")
            _option(q, "sessions", "recorded sessions each entry keeps (default: %(default)s)", metavar="N")
        if name in ("record", "prune"):
            _option(
                q,
                "lock_timeout",
                "seconds to wait for another writer's lock on the directory (default: %(default)s)",
                metavar="S",
            )
        if name == "prune":
            q.add_argument("--test", help="only entries whose test matches this glob")
            q.add_argument("--trick", help="only entries of this trick")
            q.add_argument(
                "--older-than",
                metavar="YYYY-MM-DD",
                type=_date("--older-than"),
                help="only entries recorded before this date",
            )
            q.add_argument("--dry-run", action="store_true", help="say what would go, change nothing")


def _report_option(
    q: argparse.ArgumentParser, name: str, help_text: str, *, default: "str | None" = None, aliases: Sequence[str] = ()
) -> None:
    """``--NAME PATH`` for the plugin's report option ``name`` (``--bpsperf-NAME``), named by its table."""
    from ..config.reports import REPORT_OPTIONS_BY_NAME

    opt = REPORT_OPTIONS_BY_NAME[name]
    q.add_argument(
        "--" + opt.cli_name,
        *aliases,
        dest=opt.name,
        metavar=opt.metavar,
        default=default,
        help=f"{help_text} [as {opt.flag}={opt.metavar}]",
    )


def _history_dir(q: argparse.ArgumentParser, default: "str | None" = None) -> None:
    """``--history DIR`` (``--dir`` kept), default :data:`~pytest_bpsperf.store.history.HISTORY_DIR`
    (``default`` replaces it, the help still naming it)."""
    from ..store.history import HISTORY_DIR

    _report_option(
        q, "history", f"history directory (default: {HISTORY_DIR})", default=default or HISTORY_DIR, aliases=("--dir",)
    )


def _history_command(add: Adder, c) -> None:
    """The ``history`` command's arguments."""
    h = add("history", c.history_show, "trend tables per test and trick across commits, with change points")
    hsub = h.add_subparsers(dest="action", metavar="ACTION")
    q = add("add", c.history_add, "save a results file into the history (one file per session)", hsub)
    q.add_argument("results", metavar="RESULTS.json")
    _history_dir(q)
    _option(q, "profile", "profile id (default: the one the results record)", metavar="PROFILE", default=None)
    q.add_argument("--commit", help="commit measured (default: the one the results record)")
    q.add_argument("--branch", help="branch measured (default: the one the results record)")
    # 'show' takes the options of 'history' too, without defaults of its own: argparse copies a
    # subparser's defaults over what its parent parsed, so 'history --dir X show' lost X
    show = add("show", c.history_show, "the trend tables (the default action)", hsub)
    for target, unset in ((h, None), (show, argparse.SUPPRESS)):
        _history_dir(target, default=unset)
        _option(target, "profile", "only this profile", metavar="PROFILE", default=unset)
        target.add_argument("--branch", default=unset, help="only records of this branch")
        target.add_argument("--test", default=unset, help="only tests matching this glob")
        _json_flag(target, default=False if unset is None else unset)


def _report_command(add: Adder, c) -> None:
    """The ``report`` command's arguments."""
    from ..config.settings import BASELINES_DIR

    q = add("report", c.report, "an HTML or Markdown report with pictures")
    q.add_argument("--results", metavar="RESULTS.json", help="a results file (runs, matrix, verdicts)")
    q.add_argument("--history", metavar="DIR", help="a history directory (trend pictures)")
    q.add_argument(
        "--baselines-dir", default=BASELINES_DIR, help="for the baseline bands of the pictures (default: %(default)s)"
    )
    q.add_argument("--profile", help="profile id (default: the one the results record)")
    q.add_argument("--branch", help="history of this branch only")
    q.add_argument("--out", required=True, metavar="DIR", help="where the report and its PNGs go")
    q.add_argument(
        "--format",
        choices=("html", "markdown", "md"),
        default="html",
        help="an HTML page, or the Markdown the plugin writes (--bpsperf-markdown); md is markdown",
    )


def _export_format(text: str) -> str:
    """A format of ``bpsperf export``: a report option's name (``github-benchmark``), or an earlier name."""
    from ..config.reports import EXPORT_ALIASES

    name = EXPORT_ALIASES.get(text.strip(), text.strip())
    return name.replace("_", "-")


def _export_command(add: Adder, c) -> None:
    """The ``export`` command's arguments: the formats are the plugin's report options of the same names."""
    from ..config.reports import EXPORT_ALIASES, export_options

    formats = export_options()
    old = ", ".join(f"{a} for {n.replace('_', '-')}" for a, n in EXPORT_ALIASES.items())
    q = add("export", c.export, "convert a results file for another tool")
    q.add_argument("results", metavar="RESULTS.json")
    q.add_argument(
        "--format",
        required=True,
        type=_export_format,
        choices=[o.cli_name for o in formats],
        help="the file the plugin's option of the same name writes: "
        + "; ".join(f"{o.cli_name} as {o.flag}" for o in formats)
        + f" (earlier names still accepted: {old})",
    )
    q.add_argument("-o", "--output", required=True, metavar="PATH")


def _comment_command(add: Adder, c) -> None:
    """The ``comment`` command's arguments."""
    q = add(
        "comment",
        c.comment,
        "the pull-request comment of a session: summary first, report collapsed, cut below GitHub's limit",
    )
    q.add_argument("results", metavar="RESULTS.json")
    q.add_argument("--markdown", required=True, metavar="PATH", help="the session's --bpsperf-markdown report")
    q.add_argument(
        "--marker",
        required=True,
        help="names this comment among others (e.g. the runner kind; letters, digits, '.', '_', '-')",
    )
    q.add_argument("--link", help="where the whole report is (the run's artifacts; an http(s) address)")
    q.add_argument("--out", required=True, metavar="PATH", help="where the comment's body goes")


def _positive(option: str) -> Callable[[str], int]:
    """A parser for an integer option of at least 1."""

    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value < 1:
            raise argparse.ArgumentTypeError(f"{option} {text!r}: expected an integer >= 1")
        return value

    return convert


def _bisect_command(add: Adder, c) -> None:
    """The ``bisect`` command's arguments: the range, the pytest arguments after ``--``, the reports."""
    q = add(
        "bisect",
        c.bisect,
        "find the first commit between GOOD and BAD whose throughput drops beyond the "
        "tolerance: each step a base-vs-head pytest session (exit 0 culprit found, 1 none, 2 bad input, "
        "4 not narrowed to one commit)",
    )
    q.add_argument("good", metavar="GOOD", help="a revision as fast as it should be (the last good nightly)")
    q.add_argument("bad", metavar="BAD", help="a later revision that is slower (BAD's first parents are walked)")
    # PYTEST_ARGS are what follows the first "--" (main() splits them off: argparse would take an
    # option between GOOD BAD and "--" as the end of a variable-length positional)
    q.usage = "bpsperf bisect [options] GOOD BAD [-- PYTEST_ARGS ...]"
    q.epilog = (
        "PYTEST_ARGS, after --: the arguments of every step's pytest session (e.g. -m perf -k "
        "test_resnet50 --bpsperf-tricks=default); the bisect adds --bpsperf-base, --bpsperf-head and "
        "--bpsperf-json to each"
    )
    q.set_defaults(pytest_args=[])
    q.add_argument(
        "--out",
        default="bpsperf-bisect",
        metavar="DIR",
        help="where bisect.md, bisect.json, bisect.png and each session's results and log go (default: %(default)s)",
    )
    q.add_argument(
        "-C",
        "--directory",
        metavar="DIR",
        help="run the sessions there (default: here), in the repository that holds the perf tests",
    )
    q.add_argument(
        "--retries",
        type=int,
        choices=(0, 1, 2),
        default=1,
        help="times an inconclusive step is run again with more pairs before the range is reported "
        "(default: %(default)s)",
    )
    q.add_argument(
        "--retry-pairs",
        type=_positive("--retry-pairs"),
        metavar="N",
        help="max_pairs of a step run again (default: twice the first session's)",
    )
    q.add_argument(
        "--python", metavar="PATH", help="the interpreter that runs pytest (default: the one that runs bpsperf)"
    )


def split_pytest_args(words: "list[str]") -> "tuple[list[str], list[str] | None]":
    """``bisect``'s own words and the PYTEST_ARGS after its first ``--`` (None: no ``--``, or not bisect)."""
    if "bisect" not in words or "--" not in words[words.index("bisect") :]:
        return words, None
    cut = words.index("--", words.index("bisect"))
    return words[:cut], words[cut + 1 :]


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the ``bpsperf`` command; returns its exit status (:data:`EXIT_STATUSES`)."""
    from ..store.baselines import BaselineError
    from ..store.history import HistoryError
    from ..store.results import DocumentError

    parser = _parser()
    words, rest = split_pytest_args(list(sys.argv[1:] if argv is None else argv))
    args = parser.parse_args(words)  # a usage error exits 2 here (argparse), naming the option
    if rest is not None:
        args.pytest_args = rest
    if args.func is None:
        parser.parse_args([*(argv or sys.argv[1:]), "--help"])
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # e.g. piped into head
        return OK
    except (DocumentError, BaselineError, HistoryError, ValueError) as exc:
        print(f"bpsperf {args.command}: error: {exc}", file=sys.stderr)
        return INPUT_ERROR
    except OSError as exc:  # a file the command reads or writes, named by the system's message
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"bpsperf {args.command}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return INPUT_ERROR
    except KeyboardInterrupt:
        print(f"bpsperf {args.command}: interrupted", file=sys.stderr)
        return 130  # the shell's status of a command ended by SIGINT
    except Exception as exc:  # noqa: BLE001 - a bug: one line, and the traceback only when asked for
        if args.debug:
            import traceback

            traceback.print_exc()
        print(
            f"bpsperf {args.command}: internal error: {type(exc).__name__}: {exc} (a bug of bpsperf "
            f"{__version__}; "
            f"{'the traceback is above' if args.debug else 'run it again with --debug for the traceback'}"
            ", and report it)",
            file=sys.stderr,
        )
        return INTERNAL_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
