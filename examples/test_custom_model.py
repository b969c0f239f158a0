"""A perf test of your own training code: ``pytest examples -m perf``."""

import pytest

pytestmark = pytest.mark.perf


@pytest.mark.bpsperf_tricks("default", "omp-passive")
@pytest.mark.bpsperf(entry="examples.custom_model:build")
def test_custom_model_throughput(bpsperf_train):
    result = bpsperf_train()
    assert result.img_per_sec > 0
    result.assert_within_baseline()
