"""No value of a variable whose name looks secret reaches anything the plugin or the ``bpsperf`` command writes.

A token goes in wherever a session takes variables (the roles' environment, the
``role_env`` setting, a trick, a URL with a password) and every output is
grepped for it: the results, the Markdown and HTML reports, the pictures, the
exports, the history, the baselines, the JUnit XML, the job summary, the
annotations and the terminal, a usage error. The names stay. The rule itself
(:func:`pytest_bpsperf.remote.environ.looks_secret`) is in
``tests/unit/remote/test_environ.py``; the worker's start record of a real run is
in ``tests/e2e/test_e2e_workload_local.py`` and ``tests/e2e/test_e2e_mxnet.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.cli import bpsperf
from helpers.fakes import fake_run_conftest, perf_test, run

#: What the test hides: nothing else in the project holds it (it comes from the environment).
TOKEN = "ghp_s3cr3tV4lueThatMustNeverBeWritten"

#: The fed run, whose roles report an environment with secrets in it, as a real role's /proc would.
ROLES_WITH_SECRETS = """

_fed = pytest_bpsperf_run


def pytest_bpsperf_run(config, spec):
    import dataclasses
    import os

    token = os.environ["FAKE_SECRET"]
    env = {"BPSPERF_PR_TOKEN": token, "GH_TOKEN": token, "OMP_WAIT_POLICY": "PASSIVE",
           "BPSPERF_CHOSEN_VARS": "WANDB_API_KEY,PIP_INDEX_URL,BYTEPS_KEY_HASH_FN",
           "WANDB_API_KEY": token, "PIP_INDEX_URL": f"https://ci:{token}@pypi.example/simple",
           "BYTEPS_KEY_HASH_FN": "djb2"}
    out = _fed(config, spec)
    return dataclasses.replace(out, roles=tuple(dataclasses.replace(r, environ=env) for r in out.roles))
"""


@pytest.fixture
def fake_run() -> str:
    return fake_run_conftest(extra=ROLES_WITH_SECRETS)


def _files(root: Path) -> "list[Path]":
    return [p for p in root.rglob("*") if p.is_file()]


def test_a_token_reaches_no_output_of_a_session_or_of_the_command(ourtester, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_SECRET", TOKEN)
    monkeypatch.setenv("BPSPERF_PR_TOKEN", TOKEN)  # as the recording workflow's job would have it
    ourtester.makepyfile(test_perf=perf_test("result.assert_within_baseline()", tricks=("default", "secret-trick")))
    ourtester.makeini("[pytest]\nbpsperf_steps = 8\nbpsperf_profile = testprof\nbpsperf_scaling = off\n")
    secrets = (
        "-o",
        f"bpsperf_define_tricks=secret-trick: worker:MY_SECRET={TOKEN} -- a trick that sets a secret",
        f"--bpsperf-role-env=worker:HF_TOKEN={TOKEN} worker:DMLC_INTERFACE=lo",
    )
    recorded = run(
        ourtester,
        *secrets,
        "--bpsperf-repeats=2",
        "--bpsperf-update-baselines",
        "--bpsperf-baselines-dir=baselines",
        "--bpsperf-json=recorded.json",
    )
    assert recorded.ret == 0, recorded.stdout.str()
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(ourtester.path / "summary.md"))
    # against no baselines: the verdicts are no-baseline, which the annotations show
    gated = run(
        ourtester,
        *secrets,
        "-v",
        "--bpsperf-baselines-dir=empty",
        "--bpsperf-json=out/results.json",
        "--bpsperf-markdown=out/report.md",
        "--bpsperf-plots=out/img",
        "--bpsperf-history=history",
        "--bpsperf-benchmark-json=out/bench.json",
        "--bpsperf-bmf=out/bmf.json",
        "--bpsperf-github-benchmark=out/gh.json",
        "--junitxml=out/junit.xml",
    )
    assert gated.ret == 0, gated.stdout.str()
    assert "::warning " in gated.stdout.str()  # the annotations were printed
    shown = run(ourtester, *secrets, "--bpsperf-show-settings")
    refused = run(ourtester, f"--bpsperf-role-env=nosuchrole:HF_TOKEN={TOKEN}", "-p", "no:randomly")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR and "HF_TOKEN=***" in refused.stderr.str()
    monkeypatch.delenv("GITHUB_ACTIONS")
    results = ourtester.path / "out" / "results.json"
    for args in (
        ("report", "--results", results, "--history", "history", "--out", "html"),
        ("report", "--results", results, "--format", "markdown", "--out", "md"),
        ("export", results, "--format", "bmf", "-o", "exports/bmf.json"),
        ("export", results, "--format", "github-benchmark", "-o", "exports/gh.json"),
        ("export", results, "--format", "benchmark-json", "-o", "exports/bench.json"),
        ("comment", results, "--markdown", "out/report.md", "--marker", "cpu", "--out", "comment.md"),
        ("check", results, "--baselines-dir", "baselines", "--markdown", "check.md", "--json"),
        ("history", "add", results, "--history", "history2"),
        ("baselines", "record", "recorded.json", "--baselines-dir", "baselines2", "--force"),
    ):
        with monkeypatch.context() as m:
            m.chdir(ourtester.path)
            code, out, err = bpsperf(capsys, *args)
        assert code in (0, 1) and TOKEN not in out + err, (args, out, err)

    written = _files(ourtester.path)
    names = {p.relative_to(ourtester.path).as_posix() for p in written}
    assert {
        "summary.md",
        "comment.md",
        "check.md",
        "html/report.html",
        "md/report.md",
        "out/junit.xml",
        "baselines/testprof.json",
        "baselines2/testprof.json",
    } <= names
    assert any(n.startswith("out/img/") and n.endswith(".png") for n in names)
    assert any(n.startswith("history/") for n in names) and any(n.startswith("history2/") for n in names)
    leaks = [p.relative_to(ourtester.path).as_posix() for p in written if TOKEN.encode() in p.read_bytes()]
    assert leaks == []
    for result in (recorded, gated, shown, refused):
        assert TOKEN not in result.stdout.str() + result.stderr.str()

    # the names are kept, the values hidden; what is no secret stays as it was
    doc = json.loads(results.read_text())
    run_ = next(t for t in doc["tests"] if t["trick"] == "secret-trick")
    env = run_["roles"][0]["env"]
    assert env["BPSPERF_PR_TOKEN"] == env["WANDB_API_KEY"] == "***"
    assert env["PIP_INDEX_URL"] == "https://ci:***@pypi.example/simple"
    assert env["OMP_WAIT_POLICY"] == "PASSIVE" and env["BYTEPS_KEY_HASH_FN"] == "djb2"
    assert run_["trick_env"]["worker"] == {"MY_SECRET": "***"}
    assert ["worker", "HF_TOKEN", "***"] in run_["settings"]["role_env"]
    assert ["worker", "DMLC_INTERFACE", "lo"] in run_["settings"]["role_env"]
    assert "worker:HF_TOKEN=*** worker:DMLC_INTERFACE=lo" in shown.stdout.str()
