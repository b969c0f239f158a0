"""``launch/shipping.py``: the entry point's module travels to an existing cluster, and only there."""

from __future__ import annotations

import os

from helpers.settings import CPU, cli
from pytest_bpsperf.config.parsers import EntryPoint
from pytest_bpsperf.config.settings import resolve


def test_a_session_ships_the_entry_module_on_a_cluster_only(tmp_path):
    from pytest_bpsperf.config.arms import Arm
    from pytest_bpsperf.launch.session import PerfSession

    (tmp_path / "single.py").write_text("def build(ctx): pass\n")
    settings = resolve([cli(entry="single:build")], CPU).with_values(entry=EntryPoint("single", "build", str(tmp_path)))
    session = PerfSession(ray_address="10.0.0.1:6379", base_log_dir=str(tmp_path))
    assert session.shipping.entry_module(settings, None) == str(tmp_path / "single.py")
    # the plan's workers import the shipped copy: no --entry-path of the driver's directory
    assert session.shipping.plan_settings(settings, None).entry == EntryPoint("single", "build", None)
    in_tree = Arm("base", str(tmp_path), ("{tree}",), entry_path="{tree}")
    assert session.shipping.entry_module(settings, in_tree) is None  # the arm's tree carries it
    assert session.shipping.plan_settings(settings, in_tree) is settings
    session.cluster.owned = True  # the embedded Ray: read in place
    assert session.shipping.entry_module(settings, None) is None
    assert session.shipping.actor_env(settings, None) is None
    assert os.path.isfile(settings.entry.path + "/single.py")
