import os

# Ray decides at import whether a local cluster stays on loopback; tests that
# start Ray in this process (or in subprocesses, which inherit it) must only
# ever use 127.0.0.1.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

pytest_plugins = ["pytester"]
