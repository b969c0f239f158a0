"""``remote/entry.py``: the entry-point protocol's helpers: gluoncv imported as the roles import it."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_gluoncv_imports_beside_torch_2_and_torch_stays_imported():
    pytest.importorskip("torch")
    code = (
        "import sys, torch; from pytest_bpsperf.remote.entry import import_gluoncv; g = import_gluoncv(); "
        "from gluoncv.model_zoo import get_model_list; assert 'resnet50_v2' in get_model_list(); "
        "assert sys.modules['torch'] is torch; print('ok')"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    if "No module named 'gluoncv'" in proc.stderr or "No module named 'mxnet'" in proc.stderr:
        pytest.skip("gluoncv or MXNet is not installed")
    assert proc.stdout.strip() == "ok", proc.stderr
