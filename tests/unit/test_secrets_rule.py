"""Which variables look secret, and what records, reports and messages show of them (remote/environ.py).

That no output of a session holds such a value is in ``tests/pytester/test_secrets.py``.
"""

from __future__ import annotations

import pytest

from pytest_bpsperf.config.settings import SettingsError
from pytest_bpsperf.config.tricks import Trick, TrickError, compose
from pytest_bpsperf.remote.environ import HIDDEN, hide_in_text, looks_secret, reported, scrub, shown


@pytest.mark.parametrize("name", ["BPSPERF_PR_TOKEN", "GITHUB_TOKEN", "gh_token", "AWS_SECRET_ACCESS_KEY",
                                  "AWS_ACCESS_KEY_ID", "PGPASSWORD", "MYSQL_PWD", "DB_PASS", "GH_PAT",
                                  "WANDB_API_KEY", "NPM_AUTH", "HTTP_AUTHORIZATION", "SSH_PRIVATE_KEY",
                                  "GOOGLE_APPLICATION_CREDENTIALS", "GPG_PASSPHRASE", "Session_Cookie",
                                  "BPSPERF_CLIENT_SECRET", "MY_PASSWD"])
def test_names_that_look_secret(name):
    assert looks_secret(name)


@pytest.mark.parametrize("name", [
    "OMP_WAIT_POLICY", "DMLC_PS_ROOT_PORT", "PATH", "PWD", "BPSPERF_SESSION_SPREAD", "BPSPERF_BASE",
    # configuration of BytePS 0.2.5.post15 with a secret-looking part: the records must say it
    "BYTEPS_KEY_HASH_FN", "BYTEPS_SERVER_DEBUG_KEY", "PS_KEY_LOG",
    # PASS and PAT only as whole words
    "OMP_PASSIVE_X", "LD_LIBRARY_PATH", "PATCH_LEVEL"])
def test_names_that_do_not(name):
    assert not looks_secret(name)


def test_the_reviews_repro_keeps_the_name_and_hides_the_value():
    assert reported(scrub({"BPSPERF_PR_TOKEN": "ghp_x"})) == {"BPSPERF_PR_TOKEN": HIDDEN}
    env = reported({"BPSPERF_PR_TOKEN": "ghp_x", "OMP_WAIT_POLICY": "PASSIVE", "BYTEPS_KEY_HASH_FN": "djb2"})
    assert env == {"BPSPERF_PR_TOKEN": HIDDEN, "BYTEPS_KEY_HASH_FN": "djb2", "OMP_WAIT_POLICY": "PASSIVE"}


def test_a_password_in_a_url_is_hidden_whatever_the_name():
    assert shown("PIP_INDEX_URL", "https://ci:p4ss@pypi.example/simple") == f"https://ci:{HIDDEN}@pypi.example/simple"
    assert shown("PIP_INDEX_URL", "https://pypi.example/simple") == "https://pypi.example/simple"


@pytest.mark.parametrize("text, expected", [
    ("worker:HF_TOKEN=abc worker:DMLC_INTERFACE=lo", f"worker:HF_TOKEN={HIDDEN} worker:DMLC_INTERFACE=lo"),
    ("'worker:HF_TOKEN=abc'", f"'worker:HF_TOKEN={HIDDEN}'"),
    ("MY_SECRET='a b' X=1", f"MY_SECRET={HIDDEN} X=1"),
    ('{"env_vars": {"HF_TOKEN": "abc", "NCCL_DEBUG": "INFO"}}',
     f'{{"env_vars": {{"HF_TOKEN": "{HIDDEN}", "NCCL_DEBUG": "INFO"}}}}'),
    ("git clone https://x:ghp_1@github.com/o/r", f"git clone https://x:{HIDDEN}@github.com/o/r"),
])
def test_values_in_free_text(text, expected):
    assert hide_in_text(text) == expected


def test_errors_of_settings_and_tricks_hide_values():
    assert "abc" not in str(SettingsError("invalid value 'nosuch:MY_TOKEN=abc' for setting 'role_env'"))
    a = Trick("a", env={"worker": {"MY_TOKEN": "one"}})
    b = Trick("b", env={"worker": {"MY_TOKEN": "two"}})
    with pytest.raises(TrickError) as err:
        compose([a, b])
    assert "one" not in str(err.value) and "two" not in str(err.value) and "MY_TOKEN" in str(err.value)


def test_a_tricks_json_view_hides_values_and_keeps_the_trick():
    trick = Trick("t", env={"worker": {"MY_TOKEN": "one", "OMP_WAIT_POLICY": "PASSIVE"}})
    assert trick.as_dict()["env"]["worker"] == {"MY_TOKEN": HIDDEN, "OMP_WAIT_POLICY": "PASSIVE"}
    assert trick.env_for("worker")["MY_TOKEN"] == "one"  # what the role gets is untouched
