"""``store/schema.py``: the JSON Schemas of the files and of the command's output, and their bounds."""

from __future__ import annotations

import json

import pytest

from helpers.cli import bpsperf
from pytest_bpsperf.judge.measurement import MAX_IMG_PER_SEC, MIN_STEP_S
from pytest_bpsperf.store.schema import SchemaError, load_schema, validate


def test_the_output_schema_is_a_valid_schema_and_refuses_what_it_should():
    import jsonschema

    schema = load_schema("cli")
    jsonschema.validators.validator_for(schema).check_schema(schema)
    validate({"schema_version": 1, "command": "baselines list", "directory": "b", "profiles": []}, "cli", "x")
    with pytest.raises(SchemaError, match=r"\$\.profiles"):
        validate({"schema_version": 1, "command": "baselines list", "directory": "b", "profiles": [{}]}, "cli", "x")
    with pytest.raises(SchemaError, match="verdicts"):
        validate({"schema_version": 1, "command": "check"}, "cli", "x")


@pytest.mark.parametrize(
    "argv, key",
    [(["baselines", "list", "--baselines-dir", "none"], "profiles"), (["history", "--history", "none"], "trends")],
    ids=["baselines", "history"],
)
def test_nothing_stored_is_an_empty_list(argv, key, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, out, err = bpsperf(capsys, *argv, "--json")
    doc = json.loads(out)
    validate(doc, "cli", "the output")
    assert code == 0 and err == "" and doc[key] == []


def _run(**extra):
    return {
        "nodeid": "a",
        "test": "a",
        "trick": "default",
        "repeat": 0,
        "backend": "mxnet",
        "settings": {"tolerance": 0.1},
        "img_per_sec": 10.0,
        **extra,
    }


@pytest.mark.parametrize(
    "version, run, valid",
    [
        (2, _run(), True),  # older versions stay readable
        (3, _run(settings_origins={"tolerance": "command line option --bpsperf-tolerance"}), True),
        (3, _run(settings_origins={"tolerance": 0.1}), False),
        (4, _run(), False),
    ],
)
def test_results_schema_versions_and_settings_origins(version, run, valid):
    from pytest_bpsperf.store.schema import SchemaError, validate

    document = {"schema_version": version, "tests": [run]}
    if valid:
        validate(document, "results", "a results file")
    else:
        with pytest.raises(SchemaError):
            validate(document, "results", "a results file")


def test_the_bounds_of_a_measurement_are_the_schemas():
    run_ = load_schema("results")["$defs"]
    assert run_["img_per_sec"]["maximum"] == MAX_IMG_PER_SEC and run_["step_s"]["minimum"] == MIN_STEP_S
    assert load_schema("baselines")["$defs"]["samples"]["items"]["maximum"] == MAX_IMG_PER_SEC
