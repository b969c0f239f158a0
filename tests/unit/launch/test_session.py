"""``launch/session.py``: the stall limit of a run's first step, and the embedded Ray node the settings saw."""

from __future__ import annotations


def test_a_gpu_workload_gets_longer_to_its_first_step():
    from pytest_bpsperf.launch.session import first_step_allowance
    from pytest_bpsperf.launch.watchdog import FIRST_STEP_GPU_S, FIRST_STEP_S, StallWatch

    assert first_step_allowance("byteps") == FIRST_STEP_GPU_S > first_step_allowance("mxnet") == FIRST_STEP_S
    watch = StallWatch(0.0, "default", first_step_s=FIRST_STEP_GPU_S)
    status = {"worker-0": {"code": None, "steps": 0}}
    assert watch.check(status, ["worker-0"], 0.0) is None
    assert watch.check(status, ["worker-0"], FIRST_STEP_S + 10) is None  # a CPU run would be stalled by now
    stall = watch.check(status, ["worker-0"], FIRST_STEP_GPU_S + 1)
    assert stall is not None and "worker-0 made no new step" in stall.message


def test_the_embedded_ray_node_is_the_machine_the_settings_saw(two_gpus):
    from pytest_bpsperf.config.settings import Hardware
    from pytest_bpsperf.launch.session import _local_node

    node, hardware = _local_node(), Hardware.detect()
    assert (node.gpus, node.cpus) == (hardware.gpus, hardware.cores)
