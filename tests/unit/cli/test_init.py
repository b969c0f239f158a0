"""``cli/__init__.py``: the ``bpsperf`` parser and its exit statuses.

``--json`` where the text output has facts to give, the options that mirror a plugin setting named,
parsed and defaulted by the plugin's own tables, ``bisect``'s pytest arguments. Runs of ``--json`` on
results files the plugin wrote are in ``tests/pytester/test_cli_json_output.py``.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_bpsperf.cli import EXIT_STATUSES, _parser, main
from pytest_bpsperf.config.reports import EXPORT_ALIASES, REPORT_OPTIONS, export_options
from pytest_bpsperf.config.settings import OPTIONS_BY_NAME, flag
from pytest_bpsperf.store.history import HISTORY_DIR


def parse(*argv: str):
    return _parser().parse_args(list(argv))


#: The commands that print facts (verdicts, trends, profiles, entries): each takes --json.
JSON_COMMANDS = (
    ["check", "r.json"],
    ["compare", "a.json", "b.json"],
    ["compare", "pairs.json"],
    ["history"],
    ["history", "show"],
    ["baselines", "list"],
    ["baselines", "show", "prof"],
)


@pytest.mark.parametrize("argv", JSON_COMMANDS, ids=" ".join)
def test_the_commands_that_print_facts_take_json(argv):
    assert parse(*argv).json is False
    assert parse(*argv, "--json").json is True


@pytest.mark.parametrize(
    "argv",
    [
        ["export", "r.json", "--format", "bmf", "-o", "x"],
        ["history", "add", "r.json"],
        ["baselines", "record", "r.json"],
    ],
    ids=" ".join,
)
def test_commands_that_write_files_take_no_json(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        parse(*argv, "--json")
    assert exc.value.code == 2 and "--json" in capsys.readouterr().err


#: (command line before the option, the option, the plugin setting it mirrors, a value the setting rejects)
MIRRORED = [
    (["check", "r.json"], "--tolerance", "tolerance", "150%"),
    (["check", "r.json"], "--profile", "profile", "../x"),
    (["check", "r.json"], "--baselines-dir", "baselines_dir", " "),
    (["compare", "a.json", "b.json"], "--tolerance", "tolerance", "lots"),
    (["compare", "a.json", "b.json"], "--session-spread", "session_spread", "lots"),
    (["baselines", "record", "r.json"], "--max-spread", "max_spread", "0"),
    (["baselines", "record", "r.json"], "--sessions", "sessions", "0"),
    (["baselines", "record", "r.json"], "--profile", "profile", "a/b"),
    (["baselines", "list"], "--baselines-dir", "baselines_dir", ""),
    (["history", "add", "r.json"], "--profile", "profile", ".."),
    (["history"], "--profile", "profile", "a b/c"),
    (["history", "show"], "--profile", "profile", "../.."),
]


def _action(argv, option):
    from argparse import _SubParsersAction

    parser = _parser()
    for word in argv:
        subs = [a for a in parser._actions if isinstance(a, _SubParsersAction)]
        if subs and word in subs[0].choices:
            parser = subs[0].choices[word]
    [action] = [a for a in parser._actions if option in a.option_strings]
    return action


@pytest.mark.parametrize("argv, option, setting, bad", MIRRORED, ids=[f"{' '.join(m[0][:2])} {m[1]}" for m in MIRRORED])
def test_an_option_that_mirrors_a_setting_has_its_name_and_parser(argv, option, setting, bad, capsys):
    assert option == flag(setting).replace("--bpsperf-", "--")
    action = _action(argv, option)
    assert action.dest == setting and flag(setting) in action.help
    good = {
        "tolerance": "10%",
        "session_spread": "7%",
        "max_spread": "30%",
        "sessions": "3",
        "profile": "cpu-x.1",
        "baselines_dir": "perf/bl",
    }[setting]
    assert getattr(parse(*argv, option, good), setting) == OPTIONS_BY_NAME[setting].parse(good)
    with pytest.raises(SystemExit) as exc:
        parse(*argv, option, bad)
    assert exc.value.code == 2 and f"{option} {bad!r}" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, option",
    [
        (["check", "r.json"], "--markdown"),
        (["check", "r.json"], "--history"),
        (["history"], "--history"),
        (["history", "add", "r.json"], "--history"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else v,
)
def test_an_option_that_mirrors_a_report_option_has_its_name(argv, option):
    [report] = [o for o in REPORT_OPTIONS if o.flag == option.replace("--", "--bpsperf-")]
    action = _action(argv, option)
    assert action.dest == report.name and action.metavar == report.metavar and report.flag in action.help


@pytest.mark.parametrize("argv", [["check", "r.json"], ["compare", "a.json", "b.json"]], ids=" ".join)
def test_strict_is_the_plugins_switch_with_its_default(argv):
    action = _action(argv, "--strict")
    assert action.default is OPTIONS_BY_NAME["strict"].default is False
    assert "--bpsperf-strict" in action.help and parse(*argv, "--strict").strict is True


def test_the_profile_operand_is_checked_as_the_setting_is(capsys):
    with pytest.raises(SystemExit) as exc:
        parse("baselines", "show", "../escape")
    assert exc.value.code == 2 and "PROFILE '../escape'" in capsys.readouterr().err


@pytest.mark.parametrize("action", ["list", "show", "record", "prune"])
def test_baselines_take_the_settings_name_and_keep_dir(action):
    argv = ["baselines", action] + (["r.json"] if action == "record" else ["p"] if action != "list" else [])
    assert parse(*argv, "--baselines-dir", "x").baselines_dir == "x"
    assert parse(*argv, "--dir", "y").baselines_dir == "y"


@pytest.mark.parametrize("argv", [["history"], ["history", "show"], ["history", "add", "r.json"]], ids=" ".join)
def test_the_history_directory_is_named_as_the_plugins_option_and_keeps_dir(argv):
    assert parse(*argv).history == HISTORY_DIR
    assert parse(*argv, "--history", "h").history == "h" and parse(*argv, "--dir", "d").history == "d"


@pytest.mark.parametrize("where", ["before show", "after show"])
def test_history_options_count_on_either_side_of_show(where):
    # 'history' and 'history show' take the same options; a value given before 'show' was overwritten by
    # the subcommand's default (argparse copies a subparser's defaults over what its parent parsed)
    given = ["--dir", "d", "--profile", "p", "--branch", "b", "--test", "t*", "--json"]
    args = parse("history", *given, "show") if where == "before show" else parse("history", "show", *given)
    assert (args.history, args.profile, args.branch, args.test, args.json) == ("d", "p", "b", "t*", True)
    args = parse("history", "--dir", "d", "show", "--profile", "p")  # some on each side
    assert (args.history, args.profile, args.branch, args.json) == ("d", "p", None, False)
    assert parse("history", "show").history == HISTORY_DIR


def test_export_formats_are_the_plugins_report_options():
    from pytest_bpsperf.cli.commands import exporters

    names = [o.name for o in export_options()]
    assert names == ["benchmark_json", "bmf", "github_benchmark"]
    assert sorted(exporters()) == sorted(names)
    assert _action(["export"], "--format").choices == ["benchmark-json", "bmf", "github-benchmark"]
    for option in export_options():
        assert parse("export", "r.json", "--format", option.cli_name, "-o", "x").format == option.cli_name
        assert option.flag in _action(["export"], "--format").help
    for old, name in EXPORT_ALIASES.items():
        assert parse("export", "r.json", "--format", old, "-o", "x").format == name.replace("_", "-")


def test_pytest_arguments_are_what_follows_the_first_double_dash_after_bisect():
    from pytest_bpsperf.cli import split_pytest_args

    assert split_pytest_args(["bisect", "A", "B", "--out", "x", "--", "-k", "t", "--", "y"]) == (
        ["bisect", "A", "B", "--out", "x"],
        ["-k", "t", "--", "y"],
    )
    assert split_pytest_args(["check", "r.json"]) == (["check", "r.json"], None)


def test_bad_tolerance_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["compare", "a.json", "b.json", "--tolerance", "150%"])
    assert info.value.code == 2
    assert "--tolerance '150%'" in capsys.readouterr().err


def test_bpsperf_tolerance_is_a_percentage_with_the_plugins_rule(capsys):
    with pytest.raises(SystemExit) as info:
        main(["compare", "a.json", "b.json", "--tolerance", "10"])
    assert info.value.code == 2
    assert "--tolerance '10': a bare number is a fraction of 1, so 10 would be 1000%" in capsys.readouterr().err


def test_the_commands_defaults_come_from_the_option_table(retabled):
    from pytest_bpsperf.cli import _parser

    retabled(sessions=7)
    assert _parser().parse_args(["baselines", "record", "r.json"]).sessions == 7


def test_one_history_directory_for_the_plugin_and_the_command(monkeypatch):
    from pytest_bpsperf.cli import _parser
    from pytest_bpsperf.config.reports import REPORT_OPTIONS
    from pytest_bpsperf.store import history

    [option] = [o for o in REPORT_OPTIONS if o.flag == "--bpsperf-history"]
    assert history.HISTORY_DIR == ".bpsperf-history" and history.HISTORY_DIR in option.help
    monkeypatch.setattr(history, "HISTORY_DIR", "perf-history")
    parse = _parser().parse_args
    assert {parse(argv).history for argv in (["history"], ["history", "show"], ["history", "add", "r.json"])} == {
        "perf-history"
    }


def test_the_table_is_what_the_command_says():
    assert EXIT_STATUSES == {
        0: "ok",
        1: "regression (the gate says no)",
        2: "usage or input error",
        3: "internal error",
    }
    proc = subprocess.run([sys.executable, "-m", "pytest_bpsperf.cli", "--help"], capture_output=True, text=True)
    assert "exit statuses: 0 ok, 1 regression (the gate says no), 2 usage or input error, 3 internal error" in " ".join(
        proc.stdout.split()
    )
