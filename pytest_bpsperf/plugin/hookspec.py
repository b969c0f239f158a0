"""Hook specifications of pytest-bpsperf (registered in ``pytest_addhooks``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

import pytest

if TYPE_CHECKING:  # pragma: no cover
    from ..config.tricks import Trick
    from ..runs.output import RunOutput
    from ..runs.spec import RunSpec


@pytest.hookspec
def pytest_bpsperf_tricks(config: pytest.Config) -> "Mapping[str, Trick] | None":
    """Return extra tricks as a mapping ``name -> Trick`` (``pytest_bpsperf.config.tricks.Trick``).

    Every implementation is called; names must be unique across built-ins, ini
    definitions and all implementations. Composition with ``+`` works across them.

    .. versionadded:: 0.1
    """


@pytest.hookspec(firstresult=True)
def pytest_bpsperf_run(config: pytest.Config, spec: "RunSpec") -> "RunOutput | None":
    """Run one training run (bring-up, train, teardown) and return what its roles produced.

    The plugin's own implementation (``trylast``) brings up the roles on Ray.
    Another implementation may return a finished :class:`~pytest_bpsperf.runs.output.RunOutput`
    (per-worker step records, role outcomes, the backend that ran) to test
    verdicts and reports without a distributed run; the plugin measures it like
    a real one.

    .. versionadded:: 0.1
    """


@pytest.hookspec
def pytest_bpsperf_profile_facts(config: pytest.Config, facts: dict) -> None:
    """Add or change hardware facts before the profile is derived from them.

    Facts must be stable properties of the hardware (never clocks or load):
    the profile's hash, and so which baselines apply, is computed from them.

    .. versionadded:: 0.1
    """
