"""The perf suite: ResNet-50 throughput under Ray, once per trick.

``pytest -m perf`` runs it: on the embedded Ray by default, with MXNet's own
parameter server (gluoncv's ResNet-50 v2) on CPUs; ``--bpsperf-backend=torch``
trains torchvision's ResNet-50 (v1.5) with PyTorch DDP instead, where the
tricks that add servers are skipped (DDP has none) and say so. Workload and
topology come from the settings (defaults suit the hardware: 224x224, batch
64 per GPU on GPUs; small images and few steps on CPUs).
"""

import pytest

pytestmark = pytest.mark.perf


@pytest.mark.bpsperf_tricks(
    "default", "omp-passive", "extra-servers", "omp-passive+extra-servers", servers_optional=True
)
def test_resnet50_throughput(bpsperf_train):
    result = bpsperf_train()  # model, steps, sizes: from the settings (the backend's ResNet-50 by default)
    assert result.img_per_sec > 0
    result.assert_within_baseline()
