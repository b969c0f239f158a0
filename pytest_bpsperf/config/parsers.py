"""Value parsers of the settings: each takes a raw value (a str from the command line,
environment or ini, anything from a marker) and returns the typed value, or raises
ValueError saying what is accepted. :mod:`pytest_bpsperf.config.settings` names them in its
options and says where a bad value came from.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..remote.environ import hide_in_text, planner_owned
from ..store.profile import validate_profile_id

#: The shipped backends; plugins may register more (``pytest_bpsperf.backends.register``).
BACKENDS = ("auto", "mxnet", "byteps", "torch")


def _int_at_least(low: int) -> Callable[[Any], int]:
    def parse(raw: Any) -> int:
        if isinstance(raw, bool):
            raise ValueError(f"expected an integer >= {low}")
        try:
            value = int(str(raw).strip()) if not isinstance(raw, int) else raw
        except ValueError:
            raise ValueError(f"expected an integer >= {low}") from None
        if value < low:
            raise ValueError(f"expected an integer >= {low}")
        return value

    parse.accepted = f"an integer >= {low}"  # type: ignore[attr-defined]
    return parse


def _positive_float(raw: Any) -> float:
    try:
        value = float(str(raw).strip()) if not isinstance(raw, (int, float)) else float(raw)
    except ValueError:
        raise ValueError("expected a number of seconds > 0") from None
    if not value > 0 or value != value or value == float("inf"):
        raise ValueError("expected a number of seconds > 0")
    return value


def _cores(raw: Any) -> float:
    """A number of cores' worth of CPU (``0.25``: a quarter of one core), > 0."""
    try:
        value = float(str(raw).strip()) if not isinstance(raw, (int, float)) or isinstance(raw, bool) else float(raw)
    except ValueError:
        raise ValueError("expected a number of cores > 0, such as 0.25") from None
    if isinstance(raw, bool) or not value > 0 or value != value or value == float("inf"):
        raise ValueError("expected a number of cores > 0, such as 0.25")
    return value


#: What a percentage setting accepts: one rule, never ambiguous (``1`` is not 1%, nor 100%).
PERCENT_ACCEPTED = "a percentage with % such as 10%, or a bare fraction below 1 such as 0.1"


def _percent(raw: Any) -> float:
    """A percentage: ``10%`` (with the sign) or a bare fraction below 1 (``0.1``); stored as a fraction.

    A bare number is always a fraction, so ``10`` or ``1`` (10 or 1 times the whole) is refused
    with the spelling that was likely meant, rather than read as 10% or 1%.
    """
    text = str(raw).strip()
    try:
        value = float(text[:-1]) / 100.0 if text.endswith("%") else float(text)
    except ValueError:
        raise ValueError(f"expected {PERCENT_ACCEPTED}") from None
    if not text.endswith("%") and value >= 1.0:
        raise ValueError(
            f"a bare number is a fraction of 1, so {text} would be {value * 100:g}%; expected "
            f"{PERCENT_ACCEPTED} (write {text}% for {text} percent)"
        )
    if not 0.0 < value < 1.0:
        raise ValueError(f"expected more than 0% and less than 100%: {PERCENT_ACCEPTED}")
    return value


def _backend(raw: Any) -> str:
    text = str(raw).strip().lower()
    if not text or not all(ch.isalnum() or ch in "_-" for ch in text):
        raise ValueError("expected auto or a backend name such as " + ", ".join(BACKENDS[1:]))
    return text  # a registered name: checked against the registry once the plugins are loaded


def _omp_threads(raw: Any) -> int:
    text = str(raw).strip().lower()
    if text == "auto":
        return 0  # resolved against the hardware in resolve()
    return _int_at_least(1)(raw)


def _workers(raw: Any) -> int:
    if str(raw).strip().lower() == "auto":
        return 0  # resolved against the hardware in resolve()
    return _int_at_least(1)(raw)


#: Why a Ray Client address (``ray://``) is refused, and what to do instead.
RAY_CLIENT_REFUSED = (
    "Ray Client (ray://) is not supported: the plugin drives its runs with driver-side Ray APIs (the "
    "runtime_env uploads that ship trees and entry modules, ray._private.state for the node listing) made "
    "for a driver connected to the cluster's GCS, not for a Ray Client proxy, and Ray's documentation "
    "recommends Ray Jobs over Ray Client for ML workloads; run pytest on the cluster as a Ray job instead: "
    "ray job submit --address http://HEAD:8265 --working-dir . -- pytest -m perf --bpsperf-ray-address=auto"
)


def _ray_address(raw: Any) -> str:
    text = str(raw).strip()
    if text in ("", "local", "embedded"):
        return ""
    if text.startswith("ray://"):
        raise ValueError(RAY_CLIENT_REFUSED)
    if text == "auto" or ":" in text:
        return text
    raise ValueError(
        "expected empty/'local' (embedded Ray on this machine), 'auto' (the cluster "
        "'ray start' runs here, or RAY_ADDRESS) or HOST:PORT of a head node (GCS); "
        "for ray://, use Ray Jobs (ray job submit)"
    )


def _tricks(raw: Any) -> tuple:
    if isinstance(raw, (list, tuple)):
        names = [str(n).strip() for n in raw]
    else:
        names = [n.strip() for n in str(raw).split(",")]
    names = [n for n in names if n]
    if not names:
        raise ValueError("expected a comma-separated list of trick names such as default,omp-passive")
    return tuple(names)


def _switch(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("1", "on", "yes", "true"):
        return True
    if text in ("0", "off", "no", "false"):
        return False
    raise ValueError("expected on or off")


def _trace_window(raw: Any) -> tuple:
    accepted = "expected START:END training steps with 1 <= START < END, such as 10:20"
    text = str(raw).strip()
    start, sep, end = text.partition(":")
    if not sep or not start.strip().isdigit() or not end.strip().isdigit():
        raise ValueError(accepted)
    window = (int(start), int(end))
    if not 1 <= window[0] < window[1]:
        raise ValueError(accepted)
    return window


#: How the verdict judges throughput: as measured, or relative to this session's single-process img/s.
NORMALIZE = ("off", "single")


def _normalize(raw: Any) -> str:
    text = str(raw).strip().lower()
    if text not in NORMALIZE:
        raise ValueError("expected off or single")
    return text


def _profile_id(raw: Any) -> str:
    return validate_profile_id(str(raw).strip())


#: The roles an environment item can name (``all`` is every one of them).
ROLE_NAMES = ("scheduler", "server", "worker")
_VAR_CHARS = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def parse_env_item(item: str) -> "list[tuple[str, str, str]]":
    """``ROLES:VAR=VALUE`` -> [(role, VAR, VALUE), ...]; ROLES is a comma list of roles or ``all``.

    Raises ValueError saying what is accepted (shared by tricks and the ``role_env`` setting).
    """
    roles_text, colon, assignment = item.partition(":")
    var, eq, value = assignment.partition("=")
    if not colon or not eq or not var or var[0].isdigit() or not set(var) <= _VAR_CHARS:
        raise ValueError(hide_in_text(f"{item!r} is not ROLES:VAR=VALUE (ROLES from {','.join(ROLE_NAMES)} or 'all')"))
    roles = ROLE_NAMES if roles_text == "all" else tuple(r for r in roles_text.split(",") if r)
    unknown = [r for r in roles if r not in ROLE_NAMES]
    if unknown or not roles:
        raise ValueError(
            hide_in_text(
                f"invalid role {unknown[0] if unknown else roles_text!r} in {item!r}; roles "
                f"are {', '.join(ROLE_NAMES)} or 'all'"
            )
        )
    return [(role, var, value) for role in roles]


def _role_env(raw: Any) -> tuple:
    items = raw if isinstance(raw, (list, tuple)) else str(raw).split()
    out = []
    for item in items:
        out.extend(parse_env_item(str(item).strip()))
    owned = sorted({var for _role, var, _value in out if planner_owned(var)})
    if owned:
        raise ValueError(
            f"{owned[0]} is set by the planner (ranks, counts, addresses, GPU ids); expected other "
            "variables, such as DMLC_INTERFACE, DMLC_ENABLE_RDMA or BYTEPS_ENABLE_IPC"
        )
    if not out:
        raise ValueError("expected ROLES:VAR=VALUE items such as 'server,scheduler:DMLC_INTERFACE=eth0'")
    return tuple(out)


def _resource(raw: Any) -> str:
    text = str(raw).strip()
    if not text or any(ch.isspace() for ch in text) or text in ("CPU", "GPU", "memory"):
        raise ValueError("expected the name of a custom Ray resource, such as bpsperf_server")
    return text


def _stall_timeout(raw: Any) -> float:
    if str(raw).strip().lower() == "auto":
        return 0.0  # derived from the run's own step times (see pytest_bpsperf.launch.watchdog)
    return _positive_float(raw)


def _server_nodes(raw: Any) -> int:
    if str(raw).strip().lower() == "auto":
        return 0  # as many as the worker nodes, where the cluster has the nodes (see config.settings)
    return _int_at_least(1)(raw)


def _cpus(raw: Any) -> float:
    if str(raw).strip().lower() == "auto":
        return 0.0  # the run's share of each node's CPUs, split among its processes there (planning.plan)
    try:
        value = float(str(raw).strip()) if not isinstance(raw, (int, float)) or isinstance(raw, bool) else float(raw)
    except ValueError:
        raise ValueError("expected a number of CPUs > 0 or 'auto'") from None
    if not value > 0 or value != value or value == float("inf") or isinstance(raw, bool):
        raise ValueError("expected a number of CPUs > 0 or 'auto'")
    return value


def _gpus_per_worker(raw: Any) -> int:
    if str(raw).strip().lower() == "auto":
        return 0  # every worker node's GPUs, which must then be the same count everywhere
    return _int_at_least(1)(raw)


def _path(raw: Any) -> str:
    text = str(raw).strip()
    if not text:
        raise ValueError("expected a directory path")
    return text


def _base(raw: Any) -> str:
    """A git revision or a directory (which one is decided against the repository, in :mod:`.arms`).

    An empty value (or ``none``) is an error, never "no base": a pull-request gate whose base came
    out empty (a failed ``git merge-base`` in a CI expression) would otherwise gate against stored
    baselines, skip every test where there are none, and pass without having measured a base.
    """
    text = str(raw).strip()
    if not text or text.lower() == "none":
        raise ValueError(
            "the base is empty, so nothing would be measured against the change (a CI step that "
            "computes the base failed?); to gate against the stored baselines instead, leave "
            "setting 'base' unset; accepted: a git revision (origin/main, HEAD~1, a commit) or a "
            "directory of the base's code"
        )
    if any(ch.isspace() for ch in text) and not os.path.isdir(os.path.expanduser(text)):
        raise ValueError("expected a git revision (origin/main, HEAD~1, a commit) or a directory of the base's code")
    return text


def _head(raw: Any) -> str:
    """A git revision or a directory for the head arm (instead of the working tree); never empty.

    An empty value is an error for the same reason as an empty base: a bisect step or a CI
    expression that came out empty must not measure the working tree in its place.
    """
    text = str(raw).strip()
    if not text or text.lower() == "none":
        raise ValueError(
            "the head is empty, so the working tree would be measured in its place (a CI step that "
            "computes it failed?); to measure the working tree, leave setting 'head' unset; accepted: "
            "a git revision (HEAD~3, a commit) or a directory of the head's code"
        )
    if any(ch.isspace() for ch in text) and not os.path.isdir(os.path.expanduser(text)):
        raise ValueError("expected a git revision (HEAD~3, a commit) or a directory of the head's code")
    return text


def _interpreter(raw: Any) -> "str | None":
    """The path of a Python interpreter (made absolute: roles start elsewhere); empty for none."""
    text = str(raw).strip()
    if not text:
        return None
    if text.endswith(os.sep) or os.path.isdir(os.path.expanduser(text)):
        raise ValueError("expected the path of a Python interpreter (e.g. .venv-base/bin/python), not a directory")
    return os.path.abspath(os.path.expanduser(text)) if os.sep in text or text.startswith(".") else text


def _seed(raw: Any) -> "int | None":
    """An integer >= 0, or ``random`` (a new seed per session, recorded in the results)."""
    if str(raw).strip().lower() in ("random", ""):
        return None
    return _int_at_least(0)(raw)


#: Timing modes: ``overlapped`` (what users measure) and ``breakdown`` (serialized diagnostic).
TIMINGS = ("overlapped", "breakdown")


#: Training precisions: ``bfloat16`` is the torch backend's alone (MXNet 1.9 has no bfloat16 training).
DTYPES = ("float32", "float16", "bfloat16")


LAUNCHES = ("direct", "bpslaunch")


SYNTHETIC = "synthetic"


@dataclass(frozen=True)
class EntryPoint:
    """A user's ``module:function`` that builds the training step (see :mod:`.remote.entry`).

    ``path`` is the directory the module imports from (put on the workers'
    ``sys.path``); None until :func:`resolve_entry` found it.
    """

    module: str
    function: str
    path: "str | None" = None

    @property
    def spec(self) -> str:
        """``module:function``, as the user wrote it (what keys and reports show)."""
        return f"{self.module}:{self.function}"

    def __str__(self) -> str:
        return self.spec


def _choice(choices: Sequence[str]) -> Any:
    def parse(raw: Any) -> str:
        text = str(raw).strip().lower()
        if text not in choices:
            raise ValueError("expected one of " + ", ".join(choices))
        return text

    return parse


parse_timing = _choice(TIMINGS)


parse_dtype = _choice(DTYPES)


parse_launch = _choice(LAUNCHES)


def parse_model(raw: Any) -> str:
    """A model name: gluoncv's zoo (mxnet, byteps) or torchvision's (torch), checked by :func:`check_model`."""
    text = str(raw).strip()
    if not text or any(ch.isspace() for ch in text):
        raise ValueError("expected a model name such as resnet50_v2 (gluoncv) or resnet50 (torchvision)")
    return text


def parse_data(raw: Any) -> str:
    """``synthetic`` or the path of an ImageNet-style ``.rec`` (made absolute: roles run elsewhere)."""
    text = str(raw).strip()
    if not text:
        raise ValueError("expected 'synthetic' or the path of a .rec file (with its .idx beside it)")
    if text.lower() == SYNTHETIC:
        return SYNTHETIC
    if not text.endswith(".rec"):
        raise ValueError("expected 'synthetic' or the path of a .rec file (with its .idx beside it)")
    return os.path.abspath(os.path.expanduser(text))


def parse_entry(raw: Any) -> "EntryPoint | None":
    """``module:function`` (dotted module, one function name); empty means the model-zoo workload."""
    if isinstance(raw, EntryPoint):
        return raw
    text = str(raw).strip()
    if not text or text.lower() in ("none", "model"):
        return None
    module, sep, function = text.partition(":")
    parts = module.split(".")
    if not sep or not function.isidentifier() or not all(p.isidentifier() for p in parts):
        raise ValueError("expected module:function, e.g. examples.custom_model:build")
    return EntryPoint(module, function)


#: runtime_env keys whose value names local paths (made absolute here: Ray resolves them against the
#: driver's working directory, and the merge compares them).
_PATH_KEYS = ("working_dir", "py_modules")


@dataclass(frozen=True)
class RuntimeEnvSetting:
    """The ``runtime_env`` setting: a Ray runtime_env (a JSON object) and where its text was read.

    ``text`` is the object as canonical JSON (sorted keys), so that two settings
    compare and hash by content; :meth:`env` gives it back as a dict. Local
    paths in ``working_dir`` and ``py_modules`` are absolute.
    """

    text: str
    path: "str | None" = None  # the JSON or YAML file it came from; None for inline JSON

    def env(self) -> dict:
        """The runtime_env as Ray takes it (a new dict each time)."""
        import json

        return json.loads(self.text)

    def as_dict(self) -> dict:
        """JSON view for the results: where it came from and its keys; of ``env_vars`` only the names
        (a runtime_env may carry credentials, and the results are uploaded as CI artifacts)."""
        env = self.env()
        if "env_vars" in env:
            env["env_vars"] = sorted(env["env_vars"])
        return {"from": self.path or "inline", "env": env}


def _uri(text: str) -> bool:
    return "://" in text


def _check_runtime_env(env: Any) -> dict:
    """The shape of a runtime_env that the merge relies on; Ray checks the rest when it connects."""
    if not isinstance(env, dict) or not all(isinstance(k, str) for k in env):
        raise ValueError(
            "expected a JSON object of runtime_env fields, such as "
            '{"pip": ["gluoncv==0.10.5"], "env_vars": {"NCCL_DEBUG": "INFO"}}'
        )
    if "py_modules" in env and not (
        isinstance(env["py_modules"], list) and all(isinstance(m, str) and m for m in env["py_modules"])
    ):
        raise ValueError("py_modules must be a list of local paths (directories, .py or .whl files) or URIs")
    if "working_dir" in env and not (isinstance(env["working_dir"], str) and env["working_dir"]):
        raise ValueError("working_dir must be a local directory or a URI")
    env_vars = env.get("env_vars", {})
    if not isinstance(env_vars, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in env_vars.items()
    ):
        raise ValueError('env_vars must map variable names to strings, such as {"NCCL_DEBUG": "INFO"}')
    out = dict(env)
    for key in _PATH_KEYS:
        values = out.get(key)
        if values is None:
            continue
        paths = []
        for value in values if isinstance(values, list) else [values]:
            if not _uri(value):
                value = os.path.abspath(os.path.expanduser(value))
                if not os.path.exists(value):
                    raise ValueError(
                        f"{key} names {value}, which does not exist here (local paths are read "
                        "on this machine and uploaded; use a URI for code already on the cluster)"
                    )
            paths.append(value)
        out[key] = paths if isinstance(values, list) else paths[0]
    return out


def parse_runtime_env(raw: Any) -> "RuntimeEnvSetting | None":
    """Inline JSON (``{...}``) or the path of a JSON or YAML file holding one object; empty for none."""
    import json

    if isinstance(raw, RuntimeEnvSetting):
        return raw
    if isinstance(raw, dict):
        return RuntimeEnvSetting(json.dumps(_check_runtime_env(raw), sort_keys=True))
    text = str(raw).strip()
    if not text or text.lower() == "none":
        return None
    path = None
    if text.startswith(("{", "[")):  # inline JSON (a list is refused below, by what it is)
        try:
            env = json.loads(text)
        except ValueError as exc:
            raise ValueError(
                f"not valid JSON ({exc}); expected a JSON object or the path of a JSON or YAML file"
            ) from None
    else:
        path = os.path.abspath(os.path.expanduser(text))
        try:
            with open(path, encoding="utf-8") as fh:
                content = fh.read()
        except OSError as exc:
            raise ValueError(
                f"cannot read {path} ({exc.strerror or exc}); expected a JSON object or the path of a JSON or YAML file"
            ) from None
        env = _load_file(path, content)
    return RuntimeEnvSetting(json.dumps(_check_runtime_env(env), sort_keys=True), path)


def _load_file(path: str, content: str) -> Any:
    import json

    if path.endswith((".yaml", ".yml")):
        try:
            import yaml
        except ImportError:  # pragma: no cover - PyYAML comes with Ray
            raise ValueError(f"{path} is YAML, and PyYAML is not installed here; use a .json file") from None
        try:
            return yaml.safe_load(content)
        except yaml.YAMLError as exc:
            raise ValueError(f"{path} is not valid YAML ({str(exc).splitlines()[0]})") from None
    try:
        return json.loads(content)
    except ValueError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}); expected a .json file, or .yaml/.yml for YAML") from None
