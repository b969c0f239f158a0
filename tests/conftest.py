"""The plugin's own tests: tests/unit (seconds), tests/pytester (inner sessions, no Ray), tests/e2e (real runs).

Fixtures that tests of two folders share:

- ``cpu_backend``: a backend of another plugin whose workers train on CPUs, registered for one test;
- ``two_mxnets``: a site directory where two distributions provide ``mxnet`` (:mod:`helpers.dists`);
- ``chromium``: one headless browser for a module's pages (:mod:`helpers.browser`).

Every test, inner session and git command runs in the environment :mod:`helpers.isolation` makes,
applied once before collection (test modules import Ray, which reads its settings then): the
developer's ``BPSPERF_*``, ``GITHUB_*``, ``RAY_*`` and git config are left outside.
"""

import shutil
import tempfile
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
# the checks in tests/helpers (helpers.browser.check_page, helpers.markdown_check) assert as test modules
# do: pytest rewrites them too, so that a failure shows the values compared
pytest.register_assert_rewrite("helpers")


#: The environment of the tests (:func:`helpers.isolation.isolate`), undone when the session ends.
isolation_key = pytest.StashKey["tuple[pytest.MonkeyPatch, str]"]()


def pytest_configure(config):
    # tests/e2e/conftest.py marks every test of its folder (-m "not e2e" leaves them out)
    config.addinivalue_line("markers", "e2e: starts Ray, MXNet, BytePS or role processes (tests/e2e; minutes)")
    from helpers.isolation import isolate

    patch, directory = pytest.MonkeyPatch(), tempfile.mkdtemp(prefix="bpsperf-tests-")
    # git finds no repository above the temporary directories: a TMPDIR or --basetemp inside a checkout
    ceilings = [tempfile.gettempdir(), *([config.option.basetemp] if config.option.basetemp else [])]
    isolate(patch, Path(directory), ceilings)
    config.stash[isolation_key] = (patch, directory)


def pytest_unconfigure(config):
    patch, directory = config.stash.get(isolation_key, (None, None))
    if patch is not None:
        patch.undo()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def cpu_backend():
    """A backend of another plugin whose workers train on CPUs (registered for one test)."""
    from pytest_bpsperf import backends
    from pytest_bpsperf.backends import BackendBase, WorkerProcess

    class CPUWorkers(BackendBase):
        name = "cpu-workers"
        needs_gpu_workers = False

        def server_command(self):
            return ("true",)

        def worker_processes(self, settings, worker_id, node, gpus):
            return (WorkerProcess(""),)

        def workload_defaults(self, device):
            return {"steps": 14, "batch_size": 3, "image_size": 48}

    backends.register(CPUWorkers())
    yield CPUWorkers.name
    backends.unregister(CPUWorkers.name)


@pytest.fixture
def two_mxnets(tmp_path: Path) -> Path:
    """The CPU mxnet (top_level.txt) and mxnet-cu112 (only a RECORD) side by side, as pip leaves them."""
    from helpers.dists import dist

    site = tmp_path / "site"
    dist(site, "mxnet", "1.9.1", top_level="dmlc_tracker\nmxnet")
    dist(site, "mxnet-cu112", "1.9.1", files=("mxnet/__init__.py", "mxnet/libmxnet.so", "../../bin/im2rec.py"))
    dist(site, "gluoncv", "0.10.5", top_level="gluoncv")
    return site


@pytest.fixture(scope="module")
def chromium():
    """One headless browser for the module's pages."""
    from helpers.browser import Chromium, chromium_or_skip

    browser = Chromium(chromium_or_skip())
    yield browser
    browser.close()
