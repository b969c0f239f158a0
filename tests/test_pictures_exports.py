

LIVE_CONFTEST = '''
from pytest_bpsperf.job import worker_records_from
from pytest_bpsperf.measurement import RunOutput


def pytest_bpsperf_run(config, spec):
    runner = config.pluginmanager.get_plugin("bpsperf-RunnerPlugin")
    runner.live(f"{spec.nodeid}: step 5/20, 12.5 img/s")  # what the launcher says while training
    workers = (worker_records_from("worker-0", [{"total_s": 1.0}] * 4, 8),)
    return RunOutput(workers=workers, roles=(), bringup_s=0.1, teardown_s=0.1, wall_s=1.0,
                     log_dir=spec.log_dir, backend="mxnet")
'''


@pytest.mark.parametrize("args, shown", [((), True), (("-q",), False)])
def test_live_lines_reach_the_terminal_while_a_test_runs(pytester, args, shown):
    pytester.makeconftest(LIVE_CONFTEST)
    pytester.makepyfile(test_x=MATRIX_TEST)
    result = run(pytester, *args)
    assert result.ret == 0
    line = "bpsperf: test_x.py::test_x[default]: step 5/20, 12.5 img/s"
    assert (line in result.stdout.lines) is shown
