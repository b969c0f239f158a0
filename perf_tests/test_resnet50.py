"""The perf suite: ResNet-50 v2 throughput on parameter-server roles under Ray.

``pytest -m perf`` runs it: once per trick, on the embedded Ray by default.
Workload and topology come from the settings (defaults suit the hardware:
224x224, batch 64 per GPU on GPUs; small images and few steps on CPUs).
"""

import pytest

pytestmark = pytest.mark.perf


@pytest.mark.bpsperf_tricks("default", "omp-passive", "extra-servers", "omp-passive+extra-servers")
def test_resnet50_throughput(bpsperf_train):
    result = bpsperf_train()  # model, steps, sizes: from the settings (resnet50_v2 by default)
    assert result.img_per_sec > 0
    result.assert_within_baseline()
