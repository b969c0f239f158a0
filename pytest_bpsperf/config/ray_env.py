"""What Ray a session runs under, and what the role actors run in (their Ray ``runtime_env``).

- **A Ray job.** ``ray job submit ... -- pytest ...`` starts pytest with ``RAY_ADDRESS``
  (the cluster's GCS) and ``RAY_JOB_CONFIG_JSON_ENV_VAR`` (the job's runtime_env and
  submission id). Inside one, ``ray_address`` defaults to the job's cluster
  (:func:`ray_job_source`, the lowest source before the default): the session connects
  to it rather than starting a second, embedded Ray beside it on the head node.
- **RAY_ADDRESS or RAY_JOB_ID without a job** are not used: the embedded default stays,
  and :func:`ray_notices` says so.
- **The role actors' runtime_env** is made of layers, merged by :func:`merge`: the job's
  (what ``ray job submit`` gave the job), the ``runtime_env`` setting's, and the plugin's
  own (on an existing cluster: its package and each entry point's module in
  ``py_modules``, each base-vs-head arm's tree as ``working_dir``). ``py_modules``
  (each import name once) and ``excludes`` are joined and ``env_vars`` merged per
  variable; any other field set twice, with different values, is an error naming both
  places, except the job's ``working_dir``, which an arm's tree replaces (said in a note).

Plain Python: Ray is not imported here.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..remote.environ import CONFIG_PREFIXES, planner_owned
from .parsers import EntryPoint
from .settings import Settings, Source

#: Set by Ray's job supervisor for the entrypoint: the job's runtime_env and metadata (JSON).
JOB_CONFIG_VAR = "RAY_JOB_CONFIG_JSON_ENV_VAR"
ADDRESS_VAR = "RAY_ADDRESS"
#: Set in Ray's worker processes (a task or an actor), not in a job's entrypoint.
JOB_ID_VAR = "RAY_JOB_ID"
#: Makes ``ray.init``'s runtime_env win over the job's where both set a field (read by ``ray.init``).
OVERRIDE_VAR = "RAY_OVERRIDE_JOB_RUNTIME_ENV"

JOB, SETTING, PLUGIN = "job", "setting", "plugin"


class RuntimeEnvError(ValueError):
    """The layers of the role actors' runtime_env cannot be merged; the message names the field, both
    values, where each came from and what is accepted."""


@dataclass(frozen=True)
class RayJob:
    """The Ray job this process runs in as the entrypoint (``ray job submit``)."""

    submission_id: "str | None"
    address: "str | None"  # RAY_ADDRESS: the cluster's GCS, as the supervisor set it
    runtime_env_text: str = "{}"  # the job's runtime_env, canonical JSON

    @classmethod
    def detect(cls, environ: Mapping[str, str]) -> "RayJob | None":
        """The job, when ``environ`` is a job entrypoint's (``RAY_JOB_CONFIG_JSON_ENV_VAR`` set)."""
        raw = environ.get(JOB_CONFIG_VAR)
        if raw is None:
            return None
        try:
            config = json.loads(raw)
        except ValueError:
            config = {}
        config = config if isinstance(config, dict) else {}
        env, metadata = config.get("runtime_env"), config.get("metadata")
        env = env if isinstance(env, dict) else {}
        metadata = metadata if isinstance(metadata, dict) else {}
        submission = metadata.get("job_submission_id") or metadata.get("job_name")
        return cls(
            str(submission) if submission else None,
            (environ.get(ADDRESS_VAR) or "").strip() or None,
            json.dumps(env, sort_keys=True),
        )

    def runtime_env(self) -> dict:
        """The job's runtime_env (its local paths are URIs already: the job uploaded them)."""
        return json.loads(self.runtime_env_text)

    @property
    def cluster(self) -> str:
        """The ``ray_address`` of the job's cluster: RAY_ADDRESS when it is HOST:PORT, else ``auto``."""
        address = self.address or ""
        return address if ":" in address and "://" not in address else "auto"

    def describe(self) -> str:
        """``Ray job raysubmit_… (ray job submit; RAY_ADDRESS=127.0.0.1:6379)``."""
        name = f"Ray job {self.submission_id}" if self.submission_id else "a Ray job"
        return f"{name} ({JOB_CONFIG_VAR} set by ray job submit; {ADDRESS_VAR}={self.address or 'unset'})"


def job_origin(job: RayJob) -> str:
    """Where ``ray_address`` came from when the job set it (what the settings' origins say)."""
    return f"the Ray job this session runs in ({job.describe()})"


def ray_job_source(environ: Mapping[str, str]) -> "list[Source]":
    """Inside a Ray job, ``ray_address`` = the job's cluster, as a source below ini and above the default."""
    job = RayJob.detect(environ)
    if job is None:
        return []
    return [Source("job", job_origin(job), {"ray_address": job.cluster})]


def ray_notices(environ: Mapping[str, str], settings: Settings) -> "list[str]":
    """What the session does about a Ray job, RAY_ADDRESS or RAY_JOB_ID in ``environ``, in words (or nothing)."""
    origin = settings.origins.get("ray_address", "default")
    job = RayJob.detect(environ)
    if job is not None:
        if settings.ray_address and origin == job_origin(job):
            return [
                f"inside {job.describe()}: the roles run on the job's cluster ({settings.ray_address}), not "
                "on an embedded Ray beside it; --bpsperf-ray-address=local would start one on this node"
            ]
        if settings.ray_address == "auto":
            return [
                f"inside {job.describe()}: the roles run on the job's cluster (ray_address auto, from "
                f"{origin}, is RAY_ADDRESS)"
            ]
        if settings.ray_address:
            return [
                f"inside {job.describe()}: the roles run on {settings.ray_address} (setting 'ray_address' "
                f"from {origin})"
            ]
        return [
            f"inside {job.describe()}, but ray_address is empty (from {origin}): an embedded Ray on this "
            "node runs the roles, not the job's cluster, and the job's runtime_env does not apply to it"
        ]
    if settings.ray_address:
        return []
    if environ.get(ADDRESS_VAR):
        return [
            f"{ADDRESS_VAR}={environ[ADDRESS_VAR]} is set, but ray_address is empty (from {origin}): perf tests "
            "start an embedded Ray on 127.0.0.1 and train on this machine alone; "
            "--bpsperf-ray-address=auto trains on the cluster RAY_ADDRESS names"
        ]
    if environ.get(JOB_ID_VAR):
        return [
            f"{JOB_ID_VAR}={environ[JOB_ID_VAR]} is set (pytest runs in a Ray worker process), but ray_address "
            f"is empty (from {origin}): perf tests start an embedded Ray on 127.0.0.1; "
            "--bpsperf-ray-address=HOST:PORT trains on that cluster"
        ]
    return []


# -- the role actors' runtime_env ----------------------------------------------------------------


@dataclass(frozen=True)
class Layer:
    """One part of the role actors' runtime_env: whose it is (``JOB``, ``SETTING``, ``PLUGIN``), where it
    came from in words, and its fields."""

    kind: str
    origin: str
    env: "Mapping[str, Any]" = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Merged:
    """The merged runtime_env and what the merge replaced (the job's ``working_dir`` by an arm's tree)."""

    env: "dict[str, Any]"
    notes: "tuple[str, ...]" = ()


def module_name(entry: str) -> "str | None":
    """The name ``import`` finds a ``py_modules`` entry under: a directory's or a ``.py`` file's name;
    None for a URI or a wheel (its import names are inside it)."""
    if "://" in entry or entry.endswith(".whl"):
        return None
    base = os.path.basename(entry.rstrip(os.sep))
    return base[:-3] if base.endswith(".py") else base


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 160 else text[:157] + "..."


def _check_env_vars(layer: Layer) -> None:
    for var, value in sorted((layer.env.get("env_vars") or {}).items()):
        if planner_owned(var):
            raise RuntimeEnvError(
                f"runtime_env env_vars {var}={value!r} from {layer.origin}: {var} is set by the planner for each "
                "role (ranks, counts, addresses, GPU ids); accepted: other variables"
            )
        if var.startswith(CONFIG_PREFIXES):
            raise RuntimeEnvError(
                f"runtime_env env_vars {var}={value!r} from {layer.origin} would never reach the roles: each role "
                "gets exactly the OMP_*, KMP_*, DMLC_*, BYTEPS_*, PS_*, MXNET_* and device variables its plan sets "
                f"(inherited ones are removed); accepted: other variables; set {var} with role_env "
                f"(--bpsperf-role-env='all:{var}={value}') or a trick"
            )


def _hint(key: str, first: Layer, second: Layer) -> str:
    if PLUGIN in (first.kind, second.kind) and key == "working_dir":
        return (
            "accepted: no working_dir of your own in a base-vs-head session on a cluster, where each arm's "
            "tree is the role actors' working_dir; ship other code with py_modules"
        )
    return f"accepted: {key} set in one place (Ray takes one {key} per actor)"


def merge(layers: Sequence[Layer]) -> Merged:
    """One runtime_env from ``layers`` (in order); raises :class:`RuntimeEnvError` on a conflict."""
    out: "dict[str, Any]" = {}
    owner: "dict[str, Layer]" = {}  # field (or env_vars.VAR) -> the layer that set it
    names: "dict[str, tuple[str, Layer]]" = {}  # import name -> (py_modules entry, layer)
    notes: "list[str]" = []
    for layer in layers:
        _check_env_vars(layer)
        for key, value in layer.env.items():
            if key == "py_modules":
                _join_modules(out.setdefault("py_modules", []), value, layer, names)
            elif key == "excludes":
                out["excludes"] = list(dict.fromkeys([*out.get("excludes", []), *value]))
            elif key == "env_vars":
                merged_vars = out.setdefault("env_vars", {})
                for var, v in value.items():
                    if var in merged_vars and merged_vars[var] != v:
                        first = owner[f"env_vars.{var}"]
                        raise RuntimeEnvError(
                            f"runtime_env env_vars {var} is set twice: {merged_vars[var]!r} by {first.origin} and "
                            f"{v!r} by {layer.origin}; accepted: one value for each variable"
                        )
                    merged_vars[var] = v
                    owner[f"env_vars.{var}"] = layer
            elif key not in out or out[key] == value:
                out[key], owner[key] = value, owner.get(key, layer)
            elif key == "working_dir" and layer.kind == PLUGIN and owner[key].kind == JOB:
                notes.append(
                    f"working_dir {_short(out[key])} of {owner[key].origin} is replaced for these role "
                    f"actors by {_short(value)}: {layer.origin}"
                )
                out[key], owner[key] = value, layer
            else:
                first = owner[key]
                raise RuntimeEnvError(
                    f"runtime_env field {key!r} is set twice: {_short(out[key])} by {first.origin} and "
                    f"{_short(value)} by {layer.origin}; {_hint(key, first, layer)}"
                )
    if not out.get("py_modules"):
        out.pop("py_modules", None)
    if not out.get("env_vars"):
        out.pop("env_vars", None)
    return Merged(out, tuple(notes))


def _join_modules(joined: list, modules: Sequence[str], layer: Layer, names: "dict[str, tuple[str, Layer]]") -> None:
    for entry in modules:
        if entry in joined:
            continue
        name = module_name(entry)
        if name is not None and name in names:
            other, first = names[name]
            raise RuntimeEnvError(
                f"runtime_env py_modules: {entry} from {layer.origin} and {other} from {first.origin} would both "
                f"import as {name!r}; accepted: py_modules of other names"
                + (
                    " (the plugin ships its own package and each entry point's module itself)"
                    if PLUGIN in (layer.kind, first.kind)
                    else ""
                )
            )
        if name is not None:
            names[name] = (entry, layer)
        joined.append(entry)


def session_layers(
    *, existing: bool, job: "RayJob | None", setting: Any, setting_origin: str, package: str
) -> "list[Layer]":
    """The layers of the driver's own (job-level) runtime_env: what ``ray.init`` gets.

    On an existing cluster: the Ray job's (inside one), the setting's and the plugin's package
    (``package``, its directory). On the embedded Ray only the setting's: the roles read this
    machine's files in place, and a job's runtime_env belongs to the job's cluster.
    ``setting`` is the ``runtime_env`` setting (a :class:`~.parsers.RuntimeEnvSetting`) or None.
    """
    layers = []
    if existing and job is not None:
        layers.append(Layer(JOB, f"the runtime_env of {job.describe()}", job.runtime_env()))
    if setting is not None:
        layers.append(Layer(SETTING, f"setting 'runtime_env' from {setting_origin}", setting.env()))
    if existing:
        layers.append(Layer(PLUGIN, "the plugin, which ships its own package to the nodes", {"py_modules": [package]}))
    return layers


#: What stands for the arms' trees when the merge is checked before anything is shipped.
ARM_TREES = "(each arm's tree)"


def check_session(settings: Settings, environ: Mapping[str, str], package: str) -> None:
    """Check, before Ray starts, that the session's runtime_env layers merge (see :func:`session_layers`),
    with the arms' trees as the role actors' working_dir in a base-vs-head session on a cluster.
    Raises :class:`RuntimeEnvError`."""
    layers = session_layers(
        existing=bool(settings.ray_address),
        job=RayJob.detect(environ),
        setting=settings.runtime_env,
        setting_origin=settings.origins.get("runtime_env", "default"),
        package=package,
    )
    if settings.base and settings.ray_address:
        layers.append(
            Layer(
                PLUGIN,
                "the plugin, which ships each base-vs-head arm's tree as the role actors' working_dir",
                {"working_dir": ARM_TREES},
            )
        )
    merge(layers)


#: Where installed packages live: an entry point imported from one is installed, not shipped.
_INSTALLED = ("site-packages", "dist-packages")


def entry_module_path(entry: EntryPoint) -> "str | None":
    """What ``import`` finds for the entry point's top-level module under its directory: the package
    directory or the ``.py`` file that travels with ``py_modules``. None when there is nothing to ship:
    an installed package (it must be installed on the nodes), or no such file or directory."""
    if not entry.path:
        return None
    root = os.path.abspath(entry.path)
    if any(part in _INSTALLED for part in root.split(os.sep)):
        return None
    package = os.path.join(root, entry.module.split(".")[0])
    if os.path.isdir(package):
        return package
    if os.path.isfile(package + ".py"):
        return package + ".py"
    return None
