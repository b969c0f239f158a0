"""Settings made for a test: a small CPU machine, values given on the command line, the option table's defaults."""

from __future__ import annotations

from pytest_bpsperf.config.settings import OPTIONS_BY_NAME, Hardware, Source

#: A machine of two cores and no GPU.
CPU = Hardware(gpus=0, cores=2)


def cli(**values):
    """A source of settings: these values, given on the command line."""
    return Source("cli", "command line", values)


def table(name: str):
    """The option table's default of setting ``name``."""
    return OPTIONS_BY_NAME[name].default
