"""``store/profile.py`` with faked /proc files and GPU lists: the hardware profile's name and id.

The facts it is named from (``remote/hardware.py``) are in ``tests/unit/remote/test_hardware.py``.
"""

from __future__ import annotations

import json
import re

import pytest

from helpers.hosts import A100, XEON, meminfo
from helpers.paths import ROOT
from pytest_bpsperf.remote import hardware
from pytest_bpsperf.remote.hardware import collect_facts
from pytest_bpsperf.store import profile as profile_mod
from pytest_bpsperf.store.profile import make_profile


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
    local = {
        "cpu_model": cpu,
        "arch": "x86_64",
        "cores": cores,
        "memory_gib_class": 256,
        "gpu_model": None,
        "gpu_count": 0,
    }
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


# --- what a model name can hide: the CPU's identity and vector sets ------------------------------

EPYC_MILAN = (
    "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\nmodel name\t: AMD EPYC\n"
    "stepping\t: 1\nflags\t\t: fpu sse sse4_1 sse4_2 avx avx2 fma f16c\n\n"
    "processor\t: 1\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\nmodel name\t: AMD EPYC\n"
)
EPYC_GENOA = EPYC_MILAN.replace("model\t\t: 1\n", "model\t\t: 17\n", 1).replace(
    "f16c", "f16c avx512f avx512bw avx512vl avx512_bf16"
)


def _facts(tmp_path, text, name="cpuinfo"):
    cpu = tmp_path / name
    cpu.write_text(text)
    mem = tmp_path / "meminfo"
    mem.write_text(meminfo(24684092))
    return collect_facts(
        cpuinfo_path=str(cpu), meminfo_path=str(mem), gpu_lister=list, cluster={"nodes": [{"gpus": 0, "cpus": 2}]}
    )


def test_the_profile_names_vendor_family_model_stepping_and_vector_sets(tmp_path):
    facts = _facts(tmp_path, EPYC_MILAN)
    assert (facts["cpu_vendor"], facts["cpu_family"], facts["cpu_model_number"], facts["cpu_stepping"]) == (
        "AuthenticAMD",
        25,
        1,
        1,
    )
    assert facts["cpu_isa"] == ["sse4_2", "avx", "avx2", "fma", "f16c"]  # sse/fpu: no kernel picks by them
    assert facts["profile_scheme"] == hardware.PROFILE_SCHEME
    assert make_profile(facts).name.startswith("cpu-amd-epyc-f25m1-avx2-")
    arm = _facts(
        tmp_path,
        "processor\t: 0\nFeatures\t: fp asimd asimddp sve\nCPU implementer\t: 0x41\n"
        "CPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: 0xd0c\n",
        "arm",
    )
    assert (arm["cpu_vendor"], arm["cpu_family"], arm["cpu_model_number"], arm["cpu_isa"]) == (
        "0x41",
        8,
        "0xd0c",
        ["asimd", "asimddp", "sve"],
    )


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
    older = {
        **node,
        "cluster": {"nodes": 3, "worker_nodes": [{**node, "count": 2}], "server_nodes": [{**node, "count": 1}]},
    }  # as the older scheme wrote it
    assert profile_mod.legacy_id(cluster) == make_profile(older).id


def test_the_nearest_recorded_profile_and_how_it_differs(tmp_path):
    milan, genoa = _facts(tmp_path, EPYC_MILAN), _facts(tmp_path, EPYC_GENOA, "genoa")
    xeon = _facts(
        tmp_path,
        EPYC_MILAN.replace("AuthenticAMD", "GenuineIntel").replace("cpu family\t: 25", "cpu family\t: 6"),
        "xeon",
    )
    found = profile_mod.nearest(milan, {"genoa": genoa, "xeon": xeon})
    assert found[0] == "genoa"
    assert found[1] == ["cpu_model_number 17 -> 1", "cpu_isa -avx512f -avx512bw -avx512vl -avx512_bf16"]
    older = {
        k: v
        for k, v in milan.items()
        if k not in ("cpu_vendor", "cpu_family", "cpu_model_number", "cpu_stepping", "cpu_isa", "profile_scheme")
    }
    pid, said = profile_mod.nearest(milan, {"older": older})
    assert pid == "older" and said[0].startswith("recorded before profiles named the CPU's family")
    assert profile_mod.nearest(milan, {}) is None
    assert profile_mod.cpu_text(genoa) == "AuthenticAMD family 25 model 17 stepping 1, AVX-512, AVX2, AVX"
