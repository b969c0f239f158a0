"""``remote/provenance.py``: what produced a measurement: the working tree's state, its commit, the software.

What changed since a baseline, in the verdict, is in ``tests/unit/judge/test_verdict.py``.
"""

from __future__ import annotations

import shutil

import pytest

from helpers.repos import git, init
from pytest_bpsperf.remote import provenance
from pytest_bpsperf.remote.provenance import current_commit, software_versions, working_tree_dirty


@pytest.fixture
def repo(tmp_path):
    init(tmp_path)
    (tmp_path / "bench.py").write_text("x = 1\n")
    git(tmp_path, "add", "bench.py")
    git(tmp_path, "commit", "-q", "-m", "one")
    return tmp_path


def test_a_changed_tracked_file_makes_the_tree_dirty_and_an_untracked_one_does_not(repo, tmp_path_factory):
    assert current_commit(repo) and working_tree_dirty(repo) is False
    (repo / "notes.txt").write_text("untracked\n")
    assert working_tree_dirty(repo) is False
    (repo / "bench.py").write_text("x = 2\n")
    assert working_tree_dirty(repo) is True
    assert working_tree_dirty(tmp_path_factory.mktemp("not-a-repo")) is None


def test_software_versions_reads_metadata_without_importing(monkeypatch):
    import sys

    monkeypatch.delitem(sys.modules, "mxnet", raising=False)
    versions = software_versions()
    assert set(versions) == {"python", "mxnet", "byteps", "ray", "gluoncv", "torch", "torchvision"}
    assert versions["python"].count(".") == 2
    assert all(isinstance(v, str) and v for v in versions.values())
    assert "mxnet" not in sys.modules


def test_software_versions_not_installed(monkeypatch):
    def missing(name):
        raise provenance.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(provenance.metadata, "version", missing)
    versions = software_versions()
    assert versions["mxnet"] == versions["byteps"] == versions["ray"] == "not installed"


def test_current_commit_outside_a_repo(tmp_path):
    assert current_commit(tmp_path) is None


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_current_commit_in_a_repo(tmp_path):
    init(tmp_path)
    (tmp_path / "f").write_text("x")
    git(tmp_path, "add", "f")
    git(tmp_path, "commit", "-q", "-m", "c")
    assert current_commit(tmp_path) == git(tmp_path, "rev-parse", "HEAD")


def test_current_commit_without_git(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert current_commit(tmp_path) is None


def test_shown_versions_leave_out_torch_where_it_is_not_installed():
    from pytest_bpsperf.remote.provenance import describe_versions

    mxnet_only = {"python": "3.11.7", "mxnet": "1.9.1", "torch": "not installed", "torchvision": "not installed"}
    assert describe_versions({**mxnet_only, "ray": "2.60.0"}) == "python 3.11.7, mxnet 1.9.1, ray 2.60.0"
    assert describe_versions({"python": "3.12.3", "mxnet": "not installed", "torch": "2.11.0"}) == (
        "python 3.12.3, mxnet not installed, torch 2.11.0"
    )
