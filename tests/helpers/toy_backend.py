"""The example backend of docs/writing-a-backend.md (``examples/toy_backend.py``) in a test project.

``EXAMPLE`` is that module's source, as a user's project would hold it beside its
conftest; ``CONFTEST`` imports it (which registers the backend ``toy``). ``PERF_TEST``
asks for that backend's run.
"""

from .paths import ROOT

EXAMPLE = (ROOT / "examples" / "toy_backend.py").read_text()

CONFTEST = "import toy_backend  # examples/toy_backend.py: registers the backend 'toy'\n"

PERF_TEST = """
import pytest

pytestmark = pytest.mark.perf


def test_toy(bpsperf_train):
    result = bpsperf_train()
    assert result.backend == "toy"
    assert result.img_per_sec > 0
"""
