"""Environment tricks: named changes to what the roles get.

A trick sets environment variables per role and/or adds servers on each server
node. Tricks compose with ``+`` (``omp-passive+extra-servers``); composing two
that set one variable to different values is an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from ..remote.environ import PLANNER_OWNED, hidden, hide_in_text, planner_owned, shown
from .parsers import ROLE_NAMES, parse_env_item

ROLES = ROLE_NAMES
#: The trick that changes nothing: the reference the trick matrix compares with.
REFERENCE_TRICK = "default"

_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


class TrickError(ValueError):
    """A trick is unknown, malformed, or composes with a conflict.

    The value of a ``NAME=VALUE`` in the message whose name looks secret is hidden
    (:func:`~pytest_bpsperf.remote.environ.hide_in_text`): the message is printed and logged.
    """

    def __init__(self, message: str) -> None:
        super().__init__(hide_in_text(message))


def _freeze_env(env: Mapping[str, Mapping[str, str]]) -> Mapping[str, Mapping[str, str]]:
    return {role: dict(sorted(env.get(role, {}).items())) for role in ROLES if env.get(role)}


@dataclass(frozen=True)
class Trick:
    """A named change: environment per role and extra servers per server node."""

    name: str
    description: str = ""
    env: Mapping[str, Mapping[str, str]] = field(default_factory=dict, hash=False)
    extra_servers_per_node: int = 0

    def __post_init__(self) -> None:
        for role in self.env:
            if role not in ROLES:
                raise TrickError(f"trick {self.name!r}: unknown role {role!r}; roles are {', '.join(ROLES)}")
        object.__setattr__(self, "env", _freeze_env(self.env))
        for role, variables in self.env.items():
            owned = sorted(v for v in variables if planner_owned(v))
            if owned:
                raise TrickError(
                    f"trick {self.name!r} sets {owned[0]} for the {role}: the planner owns it (ranks, counts, "
                    f"addresses and GPU ids come from the topology settings and from where Ray placed each "
                    f"role; planner-owned: {', '.join(PLANNER_OWNED)})"
                )
        if self.extra_servers_per_node < 0:
            raise TrickError(f"trick {self.name!r}: extra servers per node must be >= 0")

    def env_for(self, role: str) -> Mapping[str, str]:
        """Variables this trick sets for ``role`` (empty when none)."""
        return self.env.get(role, {})

    @property
    def parts(self) -> "tuple[str, ...]":
        """The names this trick was composed from (itself when atomic)."""
        return tuple(self.name.split("+"))

    def as_dict(self) -> "dict[str, Any]":
        """Plain JSON-able view (for records and reports: the value of a variable whose name looks secret
        is hidden, :func:`~pytest_bpsperf.remote.environ.shown`)."""
        return {
            "name": self.name,
            "description": self.description,
            "env": {r: hidden(v) for r, v in self.env.items()},
            "extra_servers_per_node": self.extra_servers_per_node,
        }


def compose(tricks: Iterable[Trick]) -> Trick:
    """Combine tricks into one; a variable set to two different values is an error."""
    tricks = list(tricks)
    if not tricks:
        raise TrickError("cannot compose zero tricks")
    if len(tricks) == 1:
        return tricks[0]
    env: "dict[str, dict[str, str]]" = {role: {} for role in ROLES}
    setters: "dict[tuple[str, str], str]" = {}
    extra = 0
    for trick in tricks:
        extra += trick.extra_servers_per_node
        for role, variables in trick.env.items():
            for var, value in variables.items():
                if var in env[role] and env[role][var] != value:
                    raise TrickError(
                        f"tricks {setters[(role, var)]!r} and {trick.name!r} conflict: they set {var} "
                        f"for the {role} to {shown(var, env[role][var])!r} and {shown(var, value)!r}"
                    )
                env[role][var] = value
                setters[(role, var)] = trick.name
    return Trick(
        name="+".join(t.name for t in tricks),
        description=" + ".join(t.description or t.name for t in tricks),
        env=env,
        extra_servers_per_node=extra,
    )


BUILTIN_TRICKS: Mapping[str, Trick] = {
    t.name: t
    for t in (
        Trick(REFERENCE_TRICK, "no change: the roles as configured"),
        Trick(
            "omp-passive",
            "OMP_WAIT_POLICY=PASSIVE on servers and workers: idle OpenMP threads sleep instead of spinning",
            env={"server": {"OMP_WAIT_POLICY": "PASSIVE"}, "worker": {"OMP_WAIT_POLICY": "PASSIVE"}},
        ),
        Trick(
            "extra-servers",
            "one more server process on each server node (DMLC_NUM_SERVER to match)",
            extra_servers_per_node=1,
        ),
    )
}


def parse_definition(line: str, where: str) -> Trick:
    """Parse one user-defined trick from ini/pyproject.

    Syntax: ``NAME: ITEM [ITEM ...] [-- DESCRIPTION]`` where an ITEM is
    ``ROLES:VAR=VALUE`` (ROLES is a comma-separated subset of scheduler, server,
    worker, or ``all``) or ``extra_servers=N``. Example::

        omp-4: server,worker:OMP_NUM_THREADS=4 -- four OpenMP threads
    """
    text = line.strip()
    usage = (
        "expected 'NAME: ITEM [ITEM ...] [-- DESCRIPTION]' with ITEM 'ROLES:VAR=VALUE' "
        "(ROLES from scheduler,server,worker or 'all') or 'extra_servers=N', e.g. "
        "'omp-4: server,worker:OMP_NUM_THREADS=4 -- four OpenMP threads'"
    )
    name, sep, rest = text.partition(":")
    name = name.strip()
    if not sep or not _NAME_RE.match(name) or "+" in name:
        raise TrickError(f"invalid trick definition {line!r} in {where}: {usage} (NAME: lower case, digits, -_.)")
    body, _, description = rest.partition(" -- ")
    env: "dict[str, dict[str, str]]" = {role: {} for role in ROLES}
    extra = 0
    items = body.split()
    if not items:
        raise TrickError(f"invalid trick definition {line!r} in {where}: no items; {usage}")
    for item in items:
        if item.startswith("extra_servers="):
            try:
                extra = int(item.split("=", 1)[1])
                if extra < 0:
                    raise ValueError
            except ValueError:
                raise TrickError(
                    f"invalid item {item!r} in trick {name!r} ({where}): extra_servers needs an integer >= 0"
                ) from None
            continue
        try:
            assignments = parse_env_item(item)
        except ValueError as exc:
            text = str(exc)
            if text.startswith("invalid role"):
                role_part, _, rest = text.partition(" in ")
                raise TrickError(f"{role_part} in trick {name!r} ({where}){rest[rest.index(';') :]}") from None
            raise TrickError(f"invalid item {item!r} in trick {name!r} ({where}): {usage}") from None
        for role, var, value in assignments:
            env[role][var] = value
    return Trick(name, description.strip(), env=env, extra_servers_per_node=extra)


class TrickRegistry:
    """Known tricks by name: built-ins, ini definitions and plugin hooks."""

    def __init__(self, tricks: "Mapping[str, Trick] | None" = None) -> None:
        self._tricks: "dict[str, Trick]" = dict(BUILTIN_TRICKS if tricks is None else tricks)
        self._origin: "dict[str, str]" = {name: "built-in" for name in self._tricks}

    def add(self, trick: Trick, origin: str) -> None:
        """Register ``trick``; a second trick of the same name is an error."""
        if "+" in trick.name or not _NAME_RE.match(trick.name):
            raise TrickError(
                f"invalid trick name {trick.name!r} from {origin}: lower case letters, digits and -_. "
                "('+' composes tricks)"
            )
        if trick.name in self._tricks:
            raise TrickError(f"trick {trick.name!r} from {origin} is already defined ({self._origin[trick.name]})")
        self._tricks[trick.name] = trick
        self._origin[trick.name] = origin

    def names(self) -> "list[str]":
        """Names of every registered (atomic) trick, sorted."""
        return sorted(self._tricks)

    def get(self, name: str, where: str = "") -> Trick:
        """Look up ``name``, composing ``a+b``; unknown names list what exists."""
        parts = [p.strip() for p in name.split("+")]
        unknown = [p for p in parts if p not in self._tricks]
        if unknown or not all(parts):
            src = f" (from {where})" if where else ""
            raise TrickError(
                f"unknown trick {unknown[0] if unknown else name!r}{src}; known tricks: "
                + ", ".join(self.names())
                + " (compose with '+', e.g. omp-passive+extra-servers)"
            )
        if len(parts) > 1 and len(set(parts)) != len(parts):
            raise TrickError(f"trick {name!r} names a part twice")
        return compose(self._tricks[p] for p in parts)

    def describe(self) -> "list[tuple[str, str, str]]":
        """(name, origin, description) rows for help output."""
        return [(n, self._origin[n], self._tricks[n].description) for n in self.names()]


#: Variables whose values name files the dynamic loader must find: a missing one
#: is only a loader warning at start, and the run then measures something else.
LOADER_PATH_VARS = ("LD_PRELOAD",)


def runtime_problems(
    env: "Mapping[str, Mapping[str, str]]", exists: "Callable[[str], bool] | None" = None
) -> "list[str]":
    """What in ``env`` (role -> variables) would break the roles' runtime on this machine, in words.

    ``LD_PRELOAD`` entries (separated by spaces or colons) must be existing files;
    names without a ``/`` are looked up by the loader itself and are not checked.
    """
    import os

    exists = exists or os.path.exists
    problems = []
    for role, variables in sorted(env.items()):
        for var in LOADER_PATH_VARS:
            for path in (variables.get(var) or "").replace(":", " ").split():
                if "/" in path and not exists(path):
                    problems.append(f"{role}:{var}={variables[var]}: {path} does not exist")
    return problems
