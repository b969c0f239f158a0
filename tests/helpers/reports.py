"""The report options, listed here apart from the package's table so that a test can hold the table to them."""

from __future__ import annotations

#: every option that names a file or directory the session writes at its end
REPORTS = [
    "--bpsperf-json",
    "--bpsperf-markdown",
    "--bpsperf-benchmark-json",
    "--bpsperf-bmf",
    "--bpsperf-github-benchmark",
    "--bpsperf-plots",
    "--bpsperf-history",
]
