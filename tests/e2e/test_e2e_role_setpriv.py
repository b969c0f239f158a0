"""Roles that die with their actor: a role process started by the plugin's own RoleProcess.

Under ``setpriv`` (util-linux) a role gets PR_SET_PDEATHSIG; without it the role's
log says that it would outlive its actor. Which roles of a run would, and where,
is checked without a process in ``tests/unit/launch/test_launcher.py``.
"""

from __future__ import annotations

import shutil
import sys

import pytest


def _roles():
    # The module as imported now: in-process pytester runs before may have imported it again.
    import importlib

    return importlib.import_module("pytest_bpsperf.remote.roles")


def _role_ran(tmp_path, name="worker-0"):
    role = _roles().RoleProcess(name, str(tmp_path / "logs"))
    role.start([sys.executable, "-c", "print('trained')"], {})
    try:
        assert role.wait(60) == 0, role.log_tail()
    finally:
        role.stop()
    return role


def test_a_role_without_setpriv_says_in_its_log_that_it_would_outlive_its_actor(tmp_path, monkeypatch):
    monkeypatch.setattr(_roles(), "_SETPRIV", None)
    role = _role_ran(tmp_path)
    log = role.log_tail()
    assert "# bpsperf: setpriv not found: worker-0 does not die with its actor (no PR_SET_PDEATHSIG)" in log
    assert "trained" in log
    assert role.info()["pdeathsig"] is False


@pytest.mark.skipif(not shutil.which("setpriv"), reason="setpriv (util-linux) is not installed here")
def test_a_role_under_setpriv_says_nothing_of_it(tmp_path):
    role = _role_ran(tmp_path)
    assert "setpriv not found" not in role.log_tail() and role.info()["pdeathsig"] is True
