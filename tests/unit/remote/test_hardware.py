"""``remote/hardware.py`` with faked ``/proc`` files and GPU lists: a node's CPU, memory class and GPUs.

The profile named from these facts is in ``tests/unit/store/test_profile.py``.
"""

from __future__ import annotations

import pytest

from helpers.hosts import A100, EPYC
from pytest_bpsperf.remote import hardware
from pytest_bpsperf.remote.hardware import collect_facts, list_gpus, memory_class_gib
from pytest_bpsperf.store import profile as profile_mod


def test_facts_from_fake_host(fake_host):
    facts = fake_host(gpus=[A100] * 4)
    assert facts["cpu_model"] == EPYC
    assert facts["memory_gib_class"] == 24
    assert facts["gpu_model"] == A100
    assert facts["gpu_count"] == 4
    assert isinstance(facts["cores"], int) and facts["cores"] >= 1
    assert facts["arch"]
    assert "cluster" not in facts


def test_no_gpu(fake_host):
    facts = fake_host()
    assert facts["gpu_model"] is None and facts["gpu_count"] == 0


def test_mixed_gpus_are_all_named(fake_host):
    facts = fake_host(gpus=["NVIDIA T4", A100, A100])
    assert facts["gpu_count"] == 3
    assert facts["gpu_model"] == f"{A100} + NVIDIA T4"


@pytest.mark.parametrize(
    "kib,expected",
    [
        (24684092, 24),  # 23.5 GiB: a 24 GiB box after kernel reservations
        (24000000, 24),
        (16303412, 16),  # 15.5 GiB
        (16800000, 16),
        (65856000, 64),  # 62.8 GiB
        (131900000, 128),
        (527700000, 512),  # 503 GiB
        (8000000, 8),
        (3900000, 4),
        (2000000, 2),
        (500000, 1),
    ],
)
def test_memory_class(kib, expected):
    assert memory_class_gib(kib) == expected


def test_memory_class_is_stable_under_small_reservation_changes():
    # A few hundred MiB more or less reserved by a new kernel keeps the class.
    base = 24684092
    assert {memory_class_gib(base + d) for d in range(-600000, 600001, 50000)} == {24}


def test_bad_cluster_description(fake_host):
    with pytest.raises(ValueError, match="nodes"):
        fake_host(cluster={"workers": 2})


def test_arm_cpuinfo_without_model_name(tmp_path):
    cpu = tmp_path / "cpuinfo"
    cpu.write_text("processor\t: 0\nBogoMIPS\t: 50.00\n\nHardware\t: BCM2835\n")
    facts = collect_facts(cpuinfo_path=str(cpu), meminfo_path=str(tmp_path / "x"), gpu_lister=list)
    assert facts["cpu_model"] == "BCM2835"


def test_default_gpu_lister_without_nvidia_smi(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert list_gpus() == []


def test_default_gpu_lister_parses_nvidia_smi(monkeypatch, tmp_path):
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\nprintf 'NVIDIA A100-SXM4-40GB\\nNVIDIA  A100-SXM4-40GB\\n'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert list_gpus() == [A100, A100]


def test_default_gpu_lister_survives_failing_driver(monkeypatch, tmp_path):
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert list_gpus() == []


def test_ray_accelerator_type_wins_and_no_gpu_means_no_model():
    local = {"cpu_model": "x", "gpu_model": "Tesla V100-SXM2-32GB", "gpu_count": 8}
    assert hardware.host_facts(local, "V100", 8)["gpu_model"] == "V100"
    assert hardware.host_facts(local, None, 0)["gpu_model"] is None
    with pytest.raises(ValueError, match="no node hosted a role"):
        profile_mod.cluster_profile_facts([], [])
