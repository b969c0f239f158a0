"""A project whose conftest registers a backend of its own: tiny Python processes, no training.

Its scheduler and servers exit at once; its workers (two processes per worker node)
write the records format. ``PERF_TEST`` asks for that backend's run.
"""

CONFTEST = '''
from pytest_bpsperf import backends
from pytest_bpsperf.backends import BackendBase, WorkerProcess
from pytest_bpsperf.remote.environ import PYTHON, RECORDS

WORKER = """
import json, os, sys, time
out = open(sys.argv[1], "a")
def write(**record):
    out.write(json.dumps(record) + "\\\\n")
    out.flush()
write(event="start", batch_size=4, env={k: v for k, v in os.environ.items() if k.startswith(("DMLC_", "TOY_"))})
for step in range(int(sys.argv[2])):
    time.sleep(0.02)
    write(event="step", step=step, total_s=0.02, images=4)
write(event="end")
"""


class ToyBackend(BackendBase):
    name = "toy"
    needs_gpu_workers = False

    def server_command(self):
        return (PYTHON, "-c", "import os; print('toy', os.environ['DMLC_ROLE'], 'up')")

    def worker_command(self, settings):
        return (PYTHON, "-c", WORKER, RECORDS, str(settings.steps))

    def worker_processes(self, settings, worker_id, node, gpus):
        return tuple(WorkerProcess(f".{rank}", {"TOY_RANK": str(rank)}) for rank in range(2))


backends.register(ToyBackend())
'''

PERF_TEST = '''
import pytest

pytestmark = pytest.mark.perf


def test_toy(bpsperf_train):
    result = bpsperf_train()
    assert result.backend == "toy"
    assert result.img_per_sec > 0
'''
