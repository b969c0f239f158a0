"""``remote/environ.py``: the contract between a role plan and its process: variables, secrets, PYTHONPATH.

Which variables look secret, and what records, reports and messages show of them; what a role
inherits and what it is given. That no output of a session holds a secret value is in
``tests/pytester/test_secrets.py``.
"""

from __future__ import annotations

import os

import pytest

from pytest_bpsperf import backends
from pytest_bpsperf.remote.environ import HIDDEN, hide_in_text, looks_secret, reported, scrub, shown
from pytest_bpsperf.remote.environ import scrub as clean_env


@pytest.mark.parametrize(
    "name",
    [
        "BPSPERF_PR_TOKEN",
        "GITHUB_TOKEN",
        "gh_token",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_ACCESS_KEY_ID",
        "PGPASSWORD",
        "MYSQL_PWD",
        "DB_PASS",
        "GH_PAT",
        "WANDB_API_KEY",
        "NPM_AUTH",
        "HTTP_AUTHORIZATION",
        "SSH_PRIVATE_KEY",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GPG_PASSPHRASE",
        "Session_Cookie",
        "BPSPERF_CLIENT_SECRET",
        "MY_PASSWD",
    ],
)
def test_names_that_look_secret(name):
    assert looks_secret(name)


@pytest.mark.parametrize(
    "name",
    [
        "OMP_WAIT_POLICY",
        "DMLC_PS_ROOT_PORT",
        "PATH",
        "PWD",
        "BPSPERF_SESSION_SPREAD",
        "BPSPERF_BASE",
        # configuration of BytePS 0.2.5.post15 with a secret-looking part: the records must say it
        "BYTEPS_KEY_HASH_FN",
        "BYTEPS_SERVER_DEBUG_KEY",
        "PS_KEY_LOG",
        # PASS and PAT only as whole words
        "OMP_PASSIVE_X",
        "LD_LIBRARY_PATH",
        "PATCH_LEVEL",
    ],
)
def test_names_that_do_not(name):
    assert not looks_secret(name)


def test_the_reviews_repro_keeps_the_name_and_hides_the_value():
    assert reported(scrub({"BPSPERF_PR_TOKEN": "ghp_x"})) == {"BPSPERF_PR_TOKEN": HIDDEN}
    env = reported({"BPSPERF_PR_TOKEN": "ghp_x", "OMP_WAIT_POLICY": "PASSIVE", "BYTEPS_KEY_HASH_FN": "djb2"})
    assert env == {"BPSPERF_PR_TOKEN": HIDDEN, "BYTEPS_KEY_HASH_FN": "djb2", "OMP_WAIT_POLICY": "PASSIVE"}


def test_a_password_in_a_url_is_hidden_whatever_the_name():
    assert shown("PIP_INDEX_URL", "https://ci:p4ss@pypi.example/simple") == f"https://ci:{HIDDEN}@pypi.example/simple"
    assert shown("PIP_INDEX_URL", "https://pypi.example/simple") == "https://pypi.example/simple"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("worker:HF_TOKEN=abc worker:DMLC_INTERFACE=lo", f"worker:HF_TOKEN={HIDDEN} worker:DMLC_INTERFACE=lo"),
        ("'worker:HF_TOKEN=abc'", f"'worker:HF_TOKEN={HIDDEN}'"),
        ("MY_SECRET='a b' X=1", f"MY_SECRET={HIDDEN} X=1"),
        (
            '{"env_vars": {"HF_TOKEN": "abc", "NCCL_DEBUG": "INFO"}}',
            f'{{"env_vars": {{"HF_TOKEN": "{HIDDEN}", "NCCL_DEBUG": "INFO"}}}}',
        ),
        ("git clone https://x:ghp_1@github.com/o/r", f"git clone https://x:{HIDDEN}@github.com/o/r"),
    ],
)
def test_values_in_free_text(text, expected):
    assert hide_in_text(text) == expected


def test_every_variable_a_trick_sets_is_echoed_in_records_and_reports():
    from pytest_bpsperf.config.settings import Hardware, Source, resolve
    from pytest_bpsperf.config.tricks import Trick
    from pytest_bpsperf.planning.planner import make_plan
    from pytest_bpsperf.remote.environ import reported
    from pytest_bpsperf.runs.plan import Node

    trick = Trick("preload", env={"worker": {"LD_PRELOAD": "/usr/lib/libfast.so", "MALLOC_ARENA_MAX": "2"}})
    settings = resolve(
        [Source("cli", "command line", {"role_env": "server:GLOO_SOCKET_IFNAME=lo"})], Hardware(gpus=0, cores=2)
    )
    plan = make_plan(settings, trick, [Node("n0", "127.0.0.1", 2, 0)], backend=backends.get("mxnet"), run_id="r")
    worker = plan.by_role("worker")[0].env
    server = plan.by_role("server")[0].env
    # what the role process gets is what the workload's start record and the reports show
    assert (
        reported({**worker, "PATH": "/bin"}).items()
        >= {"LD_PRELOAD": "/usr/lib/libfast.so", "MALLOC_ARENA_MAX": "2"}.items()
    )
    assert "PATH" not in reported(worker)
    assert reported(server)["GLOO_SOCKET_IFNAME"] == "lo"
    assert "LD_PRELOAD" not in plan.scheduler.env


def test_clean_env_strips_role_configuration_but_keeps_the_rest():
    inherited = {
        "PATH": "/usr/bin",
        "HOME": "/root",
        "PYTHONPATH": "/src",
        "OMP_NUM_THREADS": "1",  # what Ray puts into every actor
        "OMP_WAIT_POLICY": "ACTIVE",
        "KMP_AFFINITY": "compact",
        "GOMP_SPINCOUNT": "0",
        "DMLC_ROLE": "worker",
        "DMLC_NUM_SERVER": "3",
        "BYTEPS_LOCAL_RANK": "0",
        "MXNET_ENGINE_TYPE": "NaiveEngine",
        "PS_VERBOSE": "2",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "CUDA_VISIBLE_DEVICES": "0",
        "NVIDIA_VISIBLE_DEVICES": "all",
        "MY_OMP_NOTE": "kept: prefix only",
    }
    cleaned = clean_env(inherited)
    assert cleaned == {"PATH": "/usr/bin", "HOME": "/root", "PYTHONPATH": "/src", "MY_OMP_NOTE": "kept: prefix only"}
    assert inherited["OMP_NUM_THREADS"] == "1"  # input untouched


def test_a_childs_pythonpath_puts_its_entries_first_and_keeps_what_was_there():
    from pytest_bpsperf.remote.environ import pythonpath

    assert pythonpath(["/harness", "/tree"], {"PYTHONPATH": "/site"}) == os.pathsep.join(["/harness", "/tree", "/site"])
    assert pythonpath(["/harness"], {}) == pythonpath(["/harness"], {"PYTHONPATH": ""}) == "/harness"


def test_pythonpath_is_made_only_by_that_function():
    # every env["PYTHONPATH"] = ... or {"PYTHONPATH": ...} of the package calls it
    import ast
    import pathlib

    import pytest_bpsperf

    package = pathlib.Path(pytest_bpsperf.__file__).parent
    made = {}
    for path in sorted(package.rglob("*.py")):
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(node, ast.Assign):
                keys = [t.slice for t in node.targets if isinstance(t, ast.Subscript)]
            else:
                keys = node.keys if isinstance(node, ast.Dict) else []
            if any(isinstance(k, ast.Constant) and k.value == "PYTHONPATH" for k in keys):
                made[f"{path.relative_to(package)}:{node.lineno}"] = lines[node.lineno - 1].strip()
    assert made, "no PYTHONPATH found: the scan is broken"
    assert {where: line for where, line in made.items() if "pythonpath(" not in line} == {}
