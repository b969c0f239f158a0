"""``cli/commands.py``: inputs the subcommands cannot read are usage errors that name them, without a traceback.

Everything the command does with results files the plugin wrote is in ``tests/pytester/test_cli.py``.
"""

from __future__ import annotations

import json

import pytest

from helpers.cli import bpsperf
from pytest_bpsperf.cli import main
from pytest_bpsperf.report import pages


@pytest.mark.parametrize(
    "args, message",
    [
        (["check", "missing.json"], "results file missing.json does not exist"),
        (["compare", "bad.json", "bad.json"], "is not valid JSON (line 1"),
        (["check", "wrong.json"], '$.tests[0].img_per_sec = "fast"'),
    ],
)
def test_bad_input_is_named(tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.json").write_text("{")
    (tmp_path / "wrong.json").write_text(
        json.dumps(
            {
                "schema_version": 1,
                "tests": [
                    {
                        "nodeid": "a",
                        "test": "a",
                        "trick": "default",
                        "repeat": 0,
                        "backend": "mxnet",
                        "settings": {"tolerance": 0.1},
                        "img_per_sec": "fast",
                    }
                ],
            }
        )
    )
    code, _, err = bpsperf(capsys, *args)
    assert code == 2
    assert message in err


def test_history_alone_makes_a_history_page(tmp_path, capsys):
    out = tmp_path / "rep"
    assert main(["report", "--history", str(tmp_path / "none"), "--out", str(out), "--format", "markdown"]) == 0
    assert (out / "report.md").read_text() == f"## bpsperf history\n\n- history {tmp_path / 'none'}: 0 job(s)\n\n"
    assert pages.PICTURES_DIR in capsys.readouterr().out


def test_json_nested_100000_deep_is_an_input_error(tmp_path, capsys):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    for args in (["check", deep], ["report", "--results", deep, "--out", tmp_path / "r"], ["compare", deep]):
        code, _out, err = bpsperf(capsys, *args)
        assert code == 2 and f"results file {deep} nests its JSON too deeply" in err
    (tmp_path / "baselines").mkdir()
    (tmp_path / "baselines" / "p.json").write_text('{"a": ' * 50_000 + "1" + "}" * 50_000)
    code, _out, err = bpsperf(capsys, "baselines", "show", "p", "--baselines-dir", tmp_path / "baselines")
    assert code == 2 and "nests its JSON too deeply" in err and "left untouched" in err
