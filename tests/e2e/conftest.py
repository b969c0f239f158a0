"""Every test in tests/e2e is marked ``e2e``: it starts Ray, MXNet, BytePS or role processes (minutes).

``pytest -m "not e2e"`` runs the rest (tests/unit and tests/pytester); ``pytest tests/e2e`` only these.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: "list[pytest.Item]") -> None:
    # A conftest's hook sees every item of the session: mark only those collected from this folder.
    for item in items:
        if HERE in item.path.resolve().parents:
            item.add_marker(pytest.mark.e2e)
