"""The plugin's own tests: tests/unit (seconds), tests/pytester (inner sessions, no Ray), tests/e2e (real runs)."""

import os

# Ray decides at import whether a local cluster stays on loopback; tests that
# start Ray in this process (or in subprocesses, which inherit it) must only
# ever use 127.0.0.1.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
# Every Ray the tests start is a throw-away cluster on loopback, without token
# authentication. Ray reads the mode once per process, so all of them (embedded,
# simulated clusters, the subprocess sessions) must agree on it.
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

pytest_plugins = ["pytester"]


def pytest_configure(config):
    # tests/e2e/conftest.py marks every test of its folder (-m "not e2e" leaves them out)
    config.addinivalue_line("markers", "e2e: starts Ray, MXNet, BytePS or role processes (tests/e2e; minutes)")
