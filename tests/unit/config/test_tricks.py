"""``config/tricks.py``: built-ins, composition, the registry, user definitions, and what a trick's errors show."""

from __future__ import annotations

import pytest

from pytest_bpsperf.config.settings import SettingsError
from pytest_bpsperf.config.tricks import (
    BUILTIN_TRICKS,
    ROLES,
    Trick,
    TrickError,
    TrickRegistry,
    compose,
    parse_definition,
)
from pytest_bpsperf.remote.environ import HIDDEN

WHERE = "ini key bpsperf_define_tricks in /repo/tox.ini"


@pytest.fixture
def registry():
    return TrickRegistry()


def test_builtins_are_registered(registry):
    assert registry.names() == ["default", "extra-servers", "omp-passive"]
    assert set(BUILTIN_TRICKS) == set(registry.names())
    assert all(origin == "built-in" for _, origin, _ in registry.describe())
    assert all(description for _, _, description in registry.describe())


def test_baseline_changes_nothing(registry):
    t = registry.get("default")
    assert t.name == "default"
    assert dict(t.env) == {}
    assert t.extra_servers_per_node == 0
    assert all(dict(t.env_for(role)) == {} for role in ROLES)


def test_omp_passive_targets_servers_and_workers_only(registry):
    t = registry.get("omp-passive")
    assert dict(t.env_for("server")) == {"OMP_WAIT_POLICY": "PASSIVE"}
    assert dict(t.env_for("worker")) == {"OMP_WAIT_POLICY": "PASSIVE"}
    assert dict(t.env_for("scheduler")) == {}
    assert "scheduler" not in t.env
    assert t.extra_servers_per_node == 0


def test_extra_servers_adds_one_server_per_node(registry):
    t = registry.get("extra-servers")
    assert t.extra_servers_per_node == 1
    assert dict(t.env) == {}


def test_composition_merges_env_and_servers(registry):
    t = registry.get("omp-passive+extra-servers")
    assert t.name == "omp-passive+extra-servers"
    assert t.parts == ("omp-passive", "extra-servers")
    assert t.extra_servers_per_node == 1
    assert dict(t.env_for("server")) == {"OMP_WAIT_POLICY": "PASSIVE"}
    assert dict(t.env_for("worker")) == {"OMP_WAIT_POLICY": "PASSIVE"}
    assert dict(t.env_for("scheduler")) == {}
    assert "omp-passive" in t.description or "OMP_WAIT_POLICY" in t.description


def test_composition_tolerates_spaces_and_agreeing_values(registry):
    registry.add(Trick("passive-too", env={"worker": {"OMP_WAIT_POLICY": "PASSIVE"}}), "test")
    t = registry.get("omp-passive + passive-too")
    assert dict(t.env_for("worker")) == {"OMP_WAIT_POLICY": "PASSIVE"}


def test_extra_servers_add_up():
    t = compose([Trick("a", extra_servers_per_node=1), Trick("b", extra_servers_per_node=2)])
    assert t.extra_servers_per_node == 3


def test_compose_one_is_identity_and_zero_is_an_error():
    t = BUILTIN_TRICKS["omp-passive"]
    assert compose([t]) is t
    with pytest.raises(TrickError):
        compose([])


def test_conflict_names_both_tricks_and_the_variable(registry):
    registry.add(Trick("omp-active", env={"worker": {"OMP_WAIT_POLICY": "ACTIVE"}}), "test")
    with pytest.raises(TrickError) as excinfo:
        registry.get("omp-passive+omp-active")
    msg = str(excinfo.value)
    assert "'omp-passive'" in msg and "'omp-active'" in msg
    assert "OMP_WAIT_POLICY" in msg
    assert "worker" in msg
    assert "'PASSIVE'" in msg and "'ACTIVE'" in msg


def test_same_variable_on_different_roles_is_no_conflict():
    t = compose([Trick("a", env={"server": {"X": "1"}}), Trick("b", env={"worker": {"X": "2"}})])
    assert dict(t.env_for("server")) == {"X": "1"}
    assert dict(t.env_for("worker")) == {"X": "2"}


@pytest.mark.parametrize("name", ["omp-pasive", "default+nope", "nope+default"])
def test_unknown_name_lists_known_tricks(registry, name):
    with pytest.raises(TrickError) as excinfo:
        registry.get(name, where="command line option --bpsperf-tricks")
    msg = str(excinfo.value)
    bad = "omp-pasive" if name == "omp-pasive" else "nope"
    assert repr(bad) in msg
    assert "command line option --bpsperf-tricks" in msg
    for known in ("default", "omp-passive", "extra-servers"):
        assert known in msg


@pytest.mark.parametrize("name", ["default+", "+omp-passive"])
def test_empty_part_is_an_error(registry, name):
    with pytest.raises(TrickError, match="known tricks"):
        registry.get(name)


def test_part_named_twice_is_an_error(registry):
    with pytest.raises(TrickError, match="twice"):
        registry.get("omp-passive+omp-passive")


def test_user_tricks_are_listed_in_unknown_errors(registry):
    registry.add(Trick("omp-4", "four threads", env={"worker": {"OMP_NUM_THREADS": "4"}}), "hook")
    assert "omp-4" in registry.names()
    with pytest.raises(TrickError, match="omp-4"):
        registry.get("missing")
    assert ("omp-4", "hook", "four threads") in registry.describe()


def test_duplicate_registration_names_both_origins(registry):
    registry.add(Trick("mine"), "hook pytest_bpsperf_tricks")
    with pytest.raises(TrickError) as excinfo:
        registry.add(Trick("mine"), WHERE)
    msg = str(excinfo.value)
    assert "'mine'" in msg and "already defined" in msg
    assert WHERE in msg and "hook pytest_bpsperf_tricks" in msg


def test_builtin_cannot_be_redefined(registry):
    with pytest.raises(TrickError, match="built-in"):
        registry.add(Trick("omp-passive"), WHERE)


@pytest.mark.parametrize("name", ["a+b", "Upper", "-lead", "has space", ""])
def test_registry_rejects_bad_names(registry, name):
    with pytest.raises(TrickError, match="invalid trick name"):
        registry.add(Trick(name), "test")


def test_trick_rejects_unknown_role_and_negative_servers():
    with pytest.raises(TrickError, match="unknown role 'ps'"):
        Trick("x", env={"ps": {"A": "1"}})
    with pytest.raises(TrickError, match=">= 0"):
        Trick("x", extra_servers_per_node=-1)


def test_trick_as_dict_is_plain():
    d = BUILTIN_TRICKS["omp-passive"].as_dict()
    assert d["name"] == "omp-passive"
    assert d["env"] == {"server": {"OMP_WAIT_POLICY": "PASSIVE"}, "worker": {"OMP_WAIT_POLICY": "PASSIVE"}}
    assert d["extra_servers_per_node"] == 0


# --- user definitions ------------------------------------------------------------------


def test_parse_definition_roles_and_description():
    t = parse_definition("omp-4: server,worker:OMP_NUM_THREADS=4 -- four OpenMP threads", WHERE)
    assert t.name == "omp-4"
    assert t.description == "four OpenMP threads"
    assert dict(t.env_for("server")) == {"OMP_NUM_THREADS": "4"}
    assert dict(t.env_for("worker")) == {"OMP_NUM_THREADS": "4"}
    assert dict(t.env_for("scheduler")) == {}
    assert t.extra_servers_per_node == 0


def test_parse_definition_all_roles_several_items_and_extra_servers():
    t = parse_definition(
        "  big.v2: all:KMP_BLOCKTIME=0 worker:MXNET_ENGINE_TYPE=ThreadedEngine extra_servers=2 ", WHERE
    )
    assert t.name == "big.v2"
    for role in ROLES:
        assert t.env_for(role)["KMP_BLOCKTIME"] == "0"
    assert t.env_for("worker")["MXNET_ENGINE_TYPE"] == "ThreadedEngine"
    assert "MXNET_ENGINE_TYPE" not in t.env_for("server")
    assert t.extra_servers_per_node == 2
    assert t.description == ""


def test_parse_definition_value_may_contain_equals_and_empty():
    t = parse_definition("flags: worker:OPTS=a=b server:EMPTY=", WHERE)
    assert t.env_for("worker")["OPTS"] == "a=b"
    assert t.env_for("server")["EMPTY"] == ""


def test_parsed_trick_composes_with_builtins(registry):
    registry.add(parse_definition("omp-4: server,worker:OMP_NUM_THREADS=4", WHERE), WHERE)
    t = registry.get("omp-passive+omp-4+extra-servers")
    assert dict(t.env_for("worker")) == {"OMP_NUM_THREADS": "4", "OMP_WAIT_POLICY": "PASSIVE"}
    assert t.extra_servers_per_node == 1


@pytest.mark.parametrize(
    "line, expected",
    [
        ("no colon here", "invalid trick definition 'no colon here'"),
        ("Bad: worker:A=1", "invalid trick definition 'Bad: worker:A=1'"),
        ("a+b: worker:A=1", "invalid trick definition 'a+b: worker:A=1'"),
        (": worker:A=1", "invalid trick definition ': worker:A=1'"),
        ("empty:", "no items"),
        ("empty: -- only a description", "no items"),
        ("x: worker:A", "invalid item 'worker:A' in trick 'x'"),
        ("x: A=1", "invalid item 'A=1' in trick 'x'"),
        ("x: worker:1A=1", "invalid item 'worker:1A=1' in trick 'x'"),
        ("x: ps:A=1", "invalid role 'ps' in trick 'x'"),
        ("x: server,gpu:A=1", "invalid role 'gpu' in trick 'x'"),
        ("x: extra_servers=-1", "invalid item 'extra_servers=-1' in trick 'x'"),
        ("x: extra_servers=two", "invalid item 'extra_servers=two' in trick 'x'"),
    ],
)
def test_parse_definition_errors_name_the_line_and_where(line, expected):
    with pytest.raises(TrickError) as excinfo:
        parse_definition(line, WHERE)
    msg = str(excinfo.value)
    assert expected in msg
    assert WHERE in msg


@pytest.mark.parametrize("role", ["scheduler", "server", "worker"])
def test_trick_setting_a_planner_owned_variable_is_an_error(role):
    with pytest.raises(TrickError) as excinfo:
        Trick("bad", env={role: {"DMLC_NUM_SERVER": "9"}})
    msg = str(excinfo.value)
    assert "'bad'" in msg and "DMLC_NUM_SERVER" in msg and role in msg and "planner owns it" in msg


def test_errors_of_settings_and_tricks_hide_values():
    assert "abc" not in str(SettingsError("invalid value 'nosuch:MY_TOKEN=abc' for setting 'role_env'"))
    a = Trick("a", env={"worker": {"MY_TOKEN": "one"}})
    b = Trick("b", env={"worker": {"MY_TOKEN": "two"}})
    with pytest.raises(TrickError) as err:
        compose([a, b])
    assert "one" not in str(err.value) and "two" not in str(err.value) and "MY_TOKEN" in str(err.value)


def test_a_tricks_json_view_hides_values_and_keeps_the_trick():
    trick = Trick("t", env={"worker": {"MY_TOKEN": "one", "OMP_WAIT_POLICY": "PASSIVE"}})
    assert trick.as_dict()["env"]["worker"] == {"MY_TOKEN": HIDDEN, "OMP_WAIT_POLICY": "PASSIVE"}
    assert trick.env_for("worker")["MY_TOKEN"] == "one"  # what the role gets is untouched
