"""A perf test of your own PyTorch code: ``pytest examples/test_custom_torch_model.py -m perf``."""

import pytest

pytestmark = pytest.mark.perf


@pytest.mark.bpsperf_tricks("default", "omp-passive")
@pytest.mark.bpsperf(backend="torch", entry="examples.custom_torch_model:build")
def test_custom_torch_model_throughput(bpsperf_train):
    result = bpsperf_train()
    assert result.img_per_sec > 0
    result.assert_within_baseline()
