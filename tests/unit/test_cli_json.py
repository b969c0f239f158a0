"""The ``bpsperf`` parser: the options that mirror a plugin setting named, parsed and defaulted by the
plugin's own tables (``OPTIONS``, ``REPORT_OPTIONS``).
"""

from __future__ import annotations

import pytest

from pytest_bpsperf.cli import _parser
from pytest_bpsperf.config.reports import EXPORT_ALIASES, REPORT_OPTIONS, export_options
from pytest_bpsperf.config.settings import OPTIONS_BY_NAME, flag
from pytest_bpsperf.store.history import HISTORY_DIR


def parse(*argv: str):
    return _parser().parse_args(list(argv))


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
    good = {"tolerance": "10%", "session_spread": "7%", "max_spread": "30%", "sessions": "3", "profile": "cpu-x.1",
            "baselines_dir": "perf/bl"}[setting]
    assert getattr(parse(*argv, option, good), setting) == OPTIONS_BY_NAME[setting].parse(good)
    with pytest.raises(SystemExit) as exc:
        parse(*argv, option, bad)
    assert exc.value.code == 2 and f"{option} {bad!r}" in capsys.readouterr().err


@pytest.mark.parametrize("argv, option", [(["check", "r.json"], "--markdown"), (["check", "r.json"], "--history"),
                                          (["history"], "--history"), (["history", "add", "r.json"], "--history")],
                         ids=lambda v: " ".join(v) if isinstance(v, list) else v)
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
