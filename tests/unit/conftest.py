"""Fixtures that tests of more than one module of the package share (tests/unit/<folder>/test_<module>.py).

- ``fake_host``: facts collected from a made-up ``/proc`` (:mod:`helpers.hosts`), for the node's
  hardware (``remote/hardware.py``) and the profile named from it (``store/profile.py``);
- ``two_gpus``: an ``nvidia-smi`` on the PATH that lists two GPUs, for the settings, the profile and
  the embedded Ray node, which must all count the same GPUs;
- ``retabled``: the option table's defaults changed for one test, which every default must follow;
- ``git_repo``: a real git repository of three commits (``vcs/``, ``config/arms.py``).
"""

from __future__ import annotations

import os

import pytest

from helpers.hosts import EPYC, cpuinfo, meminfo
from pytest_bpsperf.config.settings import OPTIONS_BY_NAME
from pytest_bpsperf.remote.hardware import collect_facts


@pytest.fixture
def fake_host(tmp_path):
    """Write fake /proc files; returns a function that collects facts from them."""

    def collect(model=EPYC, total_kib=24684092, free_kib=1000, gpus=(), cluster=None, cpu_mhz=0):
        cpu = tmp_path / "cpuinfo"
        mem = tmp_path / "meminfo"
        text = cpuinfo(model)
        if cpu_mhz:
            text = text.replace("cpu MHz\t\t: 2450.0", f"cpu MHz\t\t: {cpu_mhz}")
        cpu.write_text(text)
        mem.write_text(meminfo(total_kib, free_kib))
        return collect_facts(
            cpuinfo_path=str(cpu),
            meminfo_path=str(mem),
            gpu_lister=lambda: list(gpus),
            cluster=cluster,
        )

    return collect


@pytest.fixture
def two_gpus(tmp_path, monkeypatch):
    """An nvidia-smi that lists two GPUs, and no detection left over from before."""
    from pytest_bpsperf.remote import hardware

    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\nprintf 'NVIDIA A100-SXM4-40GB\\nNVIDIA A100-SXM4-40GB\\n'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    hardware.local_gpus.cache_clear()
    yield
    hardware.local_gpus.cache_clear()


@pytest.fixture
def retabled(monkeypatch):
    """Change the option table's default of some settings for one test: every default must follow."""
    from dataclasses import replace

    def change(**defaults):
        for name, value in defaults.items():
            monkeypatch.setitem(OPTIONS_BY_NAME, name, replace(OPTIONS_BY_NAME[name], default=value))

    return change


@pytest.fixture
def git_repo(tmp_path):
    """A real git repository of three commits (:func:`helpers.repos.three_commits`), clean at the last."""
    from helpers.repos import three_commits

    return three_commits(tmp_path / "repo")
