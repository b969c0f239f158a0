"""Ray Client addresses (``ray://``) are refused, with why and what to run instead (Ray Jobs)."""

from __future__ import annotations

import pytest

from pytest_bpsperf.config.settings import Hardware, SettingsError, Source, env_source, resolve

CPU = Hardware(gpus=0, cores=2)


@pytest.mark.parametrize("source, where", [
    (Source("cli", "command line", {"ray_address": "ray://10.0.0.1:10001"}), "command line option --bpsperf-ray-address"),
    (env_source({"BPSPERF_RAY_ADDRESS": "ray://head:10001"}), "environment variable BPSPERF_RAY_ADDRESS"),
    (Source("ini", "/repo/pytest.ini", {"ray_address": " ray://head:10001 "}), "ini key bpsperf_ray_address in /repo/pytest.ini"),
])
def test_a_ray_client_address_is_a_usage_error_pointing_at_ray_jobs(source, where):
    with pytest.raises(SettingsError) as excinfo:
        resolve([source], CPU)
    msg = str(excinfo.value)
    assert "for setting 'ray_address'" in msg and where in msg and "ray://" in msg
    assert "Ray Client (ray://) is not supported" in msg
    # why, and what to run instead
    assert "runtime_env uploads" in msg and "ray._private.state" in msg
    assert "ray job submit --address http://HEAD:8265 --working-dir . -- pytest -m perf --bpsperf-ray-address=auto" in msg


@pytest.mark.parametrize("raw", ["auto", "127.0.0.1:6379", "head.example:6379"])
def test_gcs_addresses_are_still_accepted(raw):
    assert resolve([Source("cli", "command line", {"ray_address": raw})], CPU).ray_address == raw
