"""Unit tests of pytest_bpsperf.store.profile with faked /proc files and GPU lists."""

from __future__ import annotations

import json
import re

import pytest

from helpers.paths import ROOT
from pytest_bpsperf.remote import hardware
from pytest_bpsperf.remote.hardware import collect_facts, list_gpus, memory_class_gib
from pytest_bpsperf.store import profile as profile_mod
from pytest_bpsperf.store.profile import make_profile

EPYC = "AMD EPYC 7B13 64-Core Processor"
XEON = "Intel(R) Xeon(R) CPU E5-2686 v4 @ 2.30GHz"
A100 = "NVIDIA A100-SXM4-40GB"


def _cpuinfo(model: str, cpus: int = 2) -> str:
    blocks = []
    for i in range(cpus):
        blocks.append(
            f"processor\t: {i}\nvendor_id\t: AuthenticAMD\nmodel name\t: {model}\n"
            f"cpu MHz\t\t: {2450.0 + i * 13.7}\nbogomips\t: 4900.00\n"
        )
    return "\n".join(blocks)


def _meminfo(total_kib: int, free_kib: int = 1000) -> str:
    return (
        f"MemTotal:       {total_kib} kB\nMemFree:        {free_kib} kB\n"
        f"MemAvailable:   {free_kib} kB\n"
    )


@pytest.fixture
def fake_host(tmp_path):
    """Write fake /proc files; returns a function that collects facts from them."""

    def collect(model=EPYC, total_kib=24684092, free_kib=1000, gpus=(), cluster=None, cpu_mhz=0):
        cpu = tmp_path / "cpuinfo"
        mem = tmp_path / "meminfo"
        text = _cpuinfo(model)
        if cpu_mhz:
            text = text.replace("cpu MHz\t\t: 2450.0", f"cpu MHz\t\t: {cpu_mhz}")
        cpu.write_text(text)
        mem.write_text(_meminfo(total_kib, free_kib))
        return collect_facts(
            cpuinfo_path=str(cpu),
            meminfo_path=str(mem),
            gpu_lister=lambda: list(gpus),
            cluster=cluster,
        )

    return collect


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
        (24684092, 24),   # 23.5 GiB: a 24 GiB box after kernel reservations
        (24000000, 24),
        (16303412, 16),   # 15.5 GiB
        (16800000, 16),
        (65856000, 64),   # 62.8 GiB
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


def test_profile_is_stable_and_ignores_load_and_clocks(fake_host):
    a = make_profile(fake_host(free_kib=1000, gpus=[A100] * 4))
    b = make_profile(fake_host(free_kib=9999999, gpus=[A100] * 4, cpu_mhz=3312.5))
    assert a == b
    assert a.id == b.id
    assert re.fullmatch(r"[0-9a-f]{10}", a.hash)
    assert a.id == f"{a.name}-{a.hash[:8]}"


@pytest.mark.parametrize(
    "change",
    [
        {"total_kib": 65856000},
        {"model": XEON},
        {"gpus": [A100] * 2},
        {"cluster": {"nodes": [{"gpus": 4, "cpus": 32}, {"gpus": 0, "cpus": 16}]}},
    ],
)
def test_profile_changes_when_a_fact_changes(fake_host, change):
    base = make_profile(fake_host(gpus=[A100] * 4))
    kwargs = {"gpus": [A100] * 4}
    kwargs.update(change)
    other = make_profile(fake_host(**kwargs))
    assert other.hash != base.hash
    assert other.id != base.id


def test_hash_ignores_key_order():
    facts = {"cpu_model": "x", "cores": 2, "arch": "x86_64"}
    reordered = {"arch": "x86_64", "cores": 2, "cpu_model": "x"}
    assert make_profile(facts).hash == make_profile(reordered).hash


def test_cpu_name_slug(fake_host):
    p = make_profile(fake_host())
    cores = p.facts["cores"]
    assert p.name.startswith("cpu-amd-epyc-7b13-")
    assert f"-{cores}c-24g-" in p.name
    assert re.fullmatch(r"[a-z0-9-]+", p.name)
    assert len(p.name) <= 64


def test_gpu_name_slug_drops_vendor_noise_and_clock(fake_host):
    p = make_profile(fake_host(model=XEON, gpus=[A100] * 4))
    assert p.name.startswith("gpu-4xa100-sxm4-40gb-intel-xeon-e5-2686-v4-")
    assert "ghz" not in p.name and "2-30" not in p.name
    assert re.fullmatch(r"[a-z0-9-]+", p.name)


def test_slug_charset_and_length_for_hostile_names(fake_host):
    weird = "Vendor/X ™ Super_Chip (R) " + "Extra-Long-Name " * 20
    p = make_profile(fake_host(model=weird, gpus=["GPU <Ø> " * 10] * 3))
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", p.name)
    assert len(p.name) <= 64


def test_cluster_facts_from_ray_nodes(fake_host):
    ray_nodes = [
        {"Alive": True, "Resources": {"GPU": 4.0, "CPU": 32.0}},
        {"Alive": True, "Resources": {"GPU": 4.0, "CPU": 32.0}},
        {"Alive": True, "Resources": {"CPU": 16.0}},
        {"Alive": False, "Resources": {"CPU": 16.0}},  # dead nodes hold no work
        {"Alive": True, "Resources": {"CPU": 16.0}},
    ]
    facts = fake_host(cluster={"nodes": ray_nodes})
    assert facts["cluster"] == {
        "nodes": 4,
        "gpu_nodes": 2,
        "cpu_nodes": 2,
        "gpus_per_node": [4],
        "topology": "2x4gpu-32cpu+2xcpu-16cpu",
    }
    assert "-4n-" in make_profile(facts).name


def test_bad_cluster_description(fake_host):
    with pytest.raises(ValueError, match="nodes"):
        fake_host(cluster={"workers": 2})


def test_missing_proc_files_fall_back(tmp_path, monkeypatch):
    monkeypatch.setattr(hardware.platform, "processor", lambda: "fallback-chip")
    facts = collect_facts(
        cpuinfo_path=str(tmp_path / "nope"),
        meminfo_path=str(tmp_path / "nope2"),
        gpu_lister=lambda: [],
    )
    assert facts["cpu_model"] == "fallback-chip"
    assert facts["memory_gib_class"] is None
    assert make_profile(facts).name.startswith("cpu-fallback-chip-")


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


def test_override_replaces_id():
    p = make_profile({"cpu_model": "x"}, override="ci-a100.runner_1")
    assert p.id == "ci-a100.runner_1"
    assert p.as_dict()["id"] == "ci-a100.runner_1"
    assert p.name != p.id


@pytest.mark.parametrize("bad", ["", "a/b", "..", "x y", "café", "a\\b"])
def test_override_is_validated(bad):
    with pytest.raises(ValueError) as info:
        make_profile({"cpu_model": "x"}, override=bad)
    message = str(info.value)
    assert repr(bad) in message
    assert "letters, digits" in message


def test_profile_detaches_from_callers_facts():
    facts = {"cpu_model": "x", "cluster": {"nodes": 1}}
    p = make_profile(facts)
    facts["cluster"]["nodes"] = 2
    assert p.facts["cluster"]["nodes"] == 1
    assert make_profile(p.facts).hash == p.hash


def test_real_host_facts_are_stable():
    # On whatever machine runs the tests: two collections give one id.
    a = make_profile(collect_facts(gpu_lister=list))
    b = make_profile(collect_facts(gpu_lister=list))
    assert a.id == b.id


# --- profiles of the nodes that hosted roles (existing clusters) -------------------------

def _host(gpu_model, gpus, cpu="Intel Xeon Gold 6148", cores=64):
    local = {"cpu_model": cpu, "arch": "x86_64", "cores": cores, "memory_gib_class": 256,
             "gpu_model": None, "gpu_count": 0}
    return hardware.host_facts(local, gpu_model, gpus)


def test_cluster_profile_follows_the_worker_nodes_gpu_model():
    servers = [_host(None, 0, cores=32)] * 4
    v100 = make_profile(profile_mod.cluster_profile_facts([_host("V100", 8)] * 4, servers))
    a100 = make_profile(profile_mod.cluster_profile_facts([_host("A100", 8)] * 4, servers))
    assert v100.id != a100.id
    assert v100.id.startswith("gpu-8xv100-") and a100.id.startswith("gpu-8xa100-")
    assert v100.facts["cluster"]["worker_nodes"] == [{**_host("V100", 8), "count": 4}]
    assert v100.facts["cluster"]["server_nodes"][0]["count"] == 4
    assert v100.facts["cluster"]["nodes"] == 8


def test_cluster_profile_does_not_depend_on_the_driver_machine(monkeypatch):
    hosts = ([_host("V100", 8)] * 2, [_host(None, 0)])
    before = make_profile(profile_mod.cluster_profile_facts(*hosts)).id
    # another machine runs pytest: nothing of it is read
    monkeypatch.setattr(hardware, "collect_facts", lambda **kw: {"cpu_model": "other laptop"})
    assert make_profile(profile_mod.cluster_profile_facts(*hosts)).id == before


def test_ray_accelerator_type_wins_and_no_gpu_means_no_model():
    local = {"cpu_model": "x", "gpu_model": "Tesla V100-SXM2-32GB", "gpu_count": 8}
    assert hardware.host_facts(local, "V100", 8)["gpu_model"] == "V100"
    assert hardware.host_facts(local, None, 0)["gpu_model"] is None
    with pytest.raises(ValueError, match="no node hosted a role"):
        profile_mod.cluster_profile_facts([], [])


# --- what a model name can hide: the CPU's identity and vector sets ------------------------------

EPYC_MILAN = ("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\nmodel name\t: AMD EPYC\n"
              "stepping\t: 1\nflags\t\t: fpu sse sse4_1 sse4_2 avx avx2 fma f16c\n\n"
              "processor\t: 1\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\nmodel name\t: AMD EPYC\n")
EPYC_GENOA = EPYC_MILAN.replace("model\t\t: 1\n", "model\t\t: 17\n", 1).replace(
    "f16c", "f16c avx512f avx512bw avx512vl avx512_bf16")


def _facts(tmp_path, text, name="cpuinfo"):
    cpu = tmp_path / name
    cpu.write_text(text)
    mem = tmp_path / "meminfo"
    mem.write_text(_meminfo(24684092))
    return collect_facts(cpuinfo_path=str(cpu), meminfo_path=str(mem), gpu_lister=list,
                         cluster={"nodes": [{"gpus": 0, "cpus": 2}]})


def test_the_profile_names_vendor_family_model_stepping_and_vector_sets(tmp_path):
    facts = _facts(tmp_path, EPYC_MILAN)
    assert (facts["cpu_vendor"], facts["cpu_family"], facts["cpu_model_number"], facts["cpu_stepping"]) == \
        ("AuthenticAMD", 25, 1, 1)
    assert facts["cpu_isa"] == ["sse4_2", "avx", "avx2", "fma", "f16c"]  # sse/fpu: no kernel picks by them
    assert facts["profile_scheme"] == hardware.PROFILE_SCHEME
    assert make_profile(facts).name.startswith("cpu-amd-epyc-f25m1-avx2-")
    arm = _facts(tmp_path, "processor\t: 0\nFeatures\t: fp asimd asimddp sve\nCPU implementer\t: 0x41\n"
                           "CPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: 0xd0c\n", "arm")
    assert (arm["cpu_vendor"], arm["cpu_family"], arm["cpu_model_number"], arm["cpu_isa"]) == \
        ("0x41", 8, "0xd0c", ["asimd", "asimddp", "sve"])


def test_one_model_name_two_cpus_two_profiles(tmp_path):
    # "AMD EPYC" on both: another model or other vector sets is another machine, never the same baselines
    milan, genoa = _facts(tmp_path, EPYC_MILAN), _facts(tmp_path, EPYC_GENOA, "genoa")
    assert milan["cpu_model"] == genoa["cpu_model"] == "AMD EPYC"
    assert make_profile(milan).id != make_profile(genoa).id
    stepping = _facts(tmp_path, EPYC_MILAN.replace("stepping\t: 1", "stepping\t: 2"), "stepping")
    assert make_profile(stepping).id != make_profile(milan).id


def test_the_older_schemes_id_is_what_it_was(tmp_path):
    # the committed file was written by the older scheme: its facts give its id, and a machine with those
    # facts and a CPU identity of its own finds it under legacy_id
    committed = json.loads((ROOT / "baselines" / "cpu-amd-epyc-2c-24g-1n-x86-64-994d8926.json").read_text())
    old = committed["profile"]["facts"]
    assert make_profile(old).id == committed["profile"]["id"] and profile_mod.is_legacy(old)
    now = _facts(tmp_path, EPYC_MILAN)
    assert not profile_mod.is_legacy(now) and profile_mod.legacy_id(now) == committed["profile"]["id"]
    # clusters too: each node kind loses what the older scheme did not record
    hosts = [hardware.host_facts(now, None, 0)] * 2
    cluster = profile_mod.cluster_profile_facts(hosts, hosts[:1])
    node = {k: now[k] for k in ("cpu_model", "arch", "cores", "memory_gib_class", "gpu_model", "gpu_count")}
    older = {**node, "cluster": {"nodes": 3, "worker_nodes": [{**node, "count": 2}],
                                 "server_nodes": [{**node, "count": 1}]}}  # as the older scheme wrote it
    assert profile_mod.legacy_id(cluster) == make_profile(older).id


def test_the_nearest_recorded_profile_and_how_it_differs(tmp_path):
    milan, genoa = _facts(tmp_path, EPYC_MILAN), _facts(tmp_path, EPYC_GENOA, "genoa")
    xeon = _facts(tmp_path, EPYC_MILAN.replace("AuthenticAMD", "GenuineIntel").replace("cpu family\t: 25",
                                                                                      "cpu family\t: 6"), "xeon")
    found = profile_mod.nearest(milan, {"genoa": genoa, "xeon": xeon})
    assert found[0] == "genoa"
    assert found[1] == ["cpu_model_number 17 -> 1", "cpu_isa -avx512f -avx512bw -avx512vl -avx512_bf16"]
    older = {k: v for k, v in milan.items() if k not in ("cpu_vendor", "cpu_family", "cpu_model_number",
                                                         "cpu_stepping", "cpu_isa", "profile_scheme")}
    pid, said = profile_mod.nearest(milan, {"older": older})
    assert pid == "older" and said[0].startswith("recorded before profiles named the CPU's family")
    assert profile_mod.nearest(milan, {}) is None
    assert profile_mod.cpu_text(genoa) == "AuthenticAMD family 25 model 17 stepping 1, AVX-512, AVX2, AVX"
