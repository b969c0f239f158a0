"""The ``bpsperf`` command's usage errors: inputs it cannot read, values it does not accept.

Everything the command does with results files the plugin wrote is in ``tests/pytester/test_cli.py``.
"""

from __future__ import annotations

import json

import pytest

from helpers.cli import bpsperf
from pytest_bpsperf.cli import main


@pytest.mark.parametrize("args, message", [
    (["check", "missing.json"], "results file missing.json does not exist"),
    (["compare", "bad.json", "bad.json"], "is not valid JSON (line 1"),
    (["check", "wrong.json"], "$.tests[0].img_per_sec = \"fast\""),
])
def test_bad_input_is_named(tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.json").write_text("{")
    (tmp_path / "wrong.json").write_text(json.dumps({"schema_version": 1, "tests": [
        {"nodeid": "a", "test": "a", "trick": "default", "repeat": 0, "backend": "mxnet",
         "settings": {"tolerance": 0.1}, "img_per_sec": "fast"}]}))
    code, _, err = bpsperf(capsys, *args)
    assert code == 2
    assert message in err


def test_bad_tolerance_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["compare", "a.json", "b.json", "--tolerance", "150%"])
    assert info.value.code == 2
    assert "--tolerance '150%'" in capsys.readouterr().err


def _run(**extra):
    return {"nodeid": "a", "test": "a", "trick": "default", "repeat": 0, "backend": "mxnet",
            "settings": {"tolerance": 0.1}, "img_per_sec": 10.0, **extra}


@pytest.mark.parametrize("version, run, valid", [
    (2, _run(), True),  # older versions stay readable
    (3, _run(settings_origins={"tolerance": "command line option --bpsperf-tolerance"}), True),
    (3, _run(settings_origins={"tolerance": 0.1}), False),
    (4, _run(), False),
])
def test_results_schema_versions_and_settings_origins(version, run, valid):
    from pytest_bpsperf.store.schema import SchemaError, validate

    document = {"schema_version": version, "tests": [run]}
    if valid:
        validate(document, "results", "a results file")
    else:
        with pytest.raises(SchemaError):
            validate(document, "results", "a results file")


def test_bpsperf_tolerance_is_a_percentage_with_the_plugins_rule(capsys):
    with pytest.raises(SystemExit) as info:
        main(["compare", "a.json", "b.json", "--tolerance", "10"])
    assert info.value.code == 2
    assert "--tolerance '10': a bare number is a fraction of 1, so 10 would be 1000%" in capsys.readouterr().err
