"""``plugin/runner.py`` without a session: the profile's facts before Ray are this machine's, and Ray stays down."""

from __future__ import annotations


def test_profile_facts_before_ray_are_this_machines(tmp_path):
    from pytest_bpsperf.launch.session import PerfSession
    from pytest_bpsperf.plugin.runner import RunnerPlugin
    from pytest_bpsperf.remote.hardware import collect_facts

    here = collect_facts(cluster=None)
    session = PerfSession(ray_address="", base_log_dir=str(tmp_path))
    assert not session.cluster.started and session.profile_facts() == here  # never starts Ray
    no_session = type("R", (), {"_session": None})()
    assert RunnerPlugin.profile_facts(no_session) == here
    with_session = type("R", (), {"_session": session})()
    assert RunnerPlugin.profile_facts(with_session) == here
