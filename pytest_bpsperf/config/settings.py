"""Settings: every knob of a perf run, resolved once from ordered sources.

Precedence, first source that sets a value wins::

    marker  >  command line  >  BPSPERF_* environment  >  ini/pyproject  >  default

Each option has one name that derives all its spellings: ``batch_size`` is
``--bpsperf-batch-size``, ``BPSPERF_BATCH_SIZE``, ini key ``bpsperf_batch_size``
and marker keyword ``batch_size``. This module is plain Python; the pytest
layer turns :class:`SettingsError` into ``pytest.UsageError``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from typing import Any, Callable, Mapping, Sequence

from ..remote.environ import hide_in_text, shown
from ..remote.hardware import core_count, local_gpus
from .parsers import (
    BACKENDS,
    PERCENT_ACCEPTED,
    SYNTHETIC,
    EntryPoint,
    RuntimeEnvSetting,
    _backend,
    _base,
    _cores,
    _cpus,
    _gpus_per_worker,
    _head,
    _int_at_least,
    _interpreter,
    _normalize,
    _omp_threads,
    _path,
    _percent,
    _positive_float,
    _profile_id,
    _ray_address,
    _resource,
    _role_env,
    _seed,
    _server_nodes,
    _stall_timeout,
    _switch,
    _trace_window,
    _tricks,
    _workers,
    parse_data,
    parse_dtype,
    parse_entry,
    parse_launch,
    parse_model,
    parse_runtime_env,
    parse_timing,
)


class SettingsError(ValueError):
    """A setting has a value that is not accepted; the message says which and where from.

    The message is printed and logged: the value of a ``NAME=VALUE`` in it whose name looks secret
    is hidden (:func:`~pytest_bpsperf.remote.environ.hide_in_text`).
    """

    def __init__(self, message: str) -> None:
        super().__init__(hide_in_text(message))


def flag(name: str) -> str:
    """Command-line spelling of an option name (``batch_size`` -> ``--bpsperf-batch-size``)."""
    return "--bpsperf-" + name.replace("_", "-")


def no_flag(name: str) -> str:
    """Command-line spelling that turns an on/off option off (``strict`` -> ``--bpsperf-no-strict``)."""
    return "--bpsperf-no-" + name.replace("_", "-")


def env_var(name: str) -> str:
    """Environment spelling of an option name (``batch_size`` -> ``BPSPERF_BATCH_SIZE``)."""
    return "BPSPERF_" + name.upper()


def ini_key(name: str) -> str:
    """Ini/pyproject spelling of an option name (``batch_size`` -> ``bpsperf_batch_size``)."""
    return "bpsperf_" + name


@dataclass(frozen=True)
class Option:
    """One setting: its name, help text, parser and default."""

    name: str
    help: str
    parse: Callable[[Any], Any]
    accepted: str
    default: Any
    #: read from the marker too (workload and topology knobs; not where Ray is)
    per_test: bool = True
    #: the default in words, where its value says nothing (None: :func:`format_value` of the default)
    shown_default: "str | None" = None
    #: an empty value in the environment is a value for the parser to judge, not "unset" (``base``:
    #: a CI expression that came out empty must fail the session, not turn the gate off)
    empty_is_value: bool = False

    @property
    def switch(self) -> bool:
        """Whether the option is on or off: a pair of flags (``--bpsperf-X``, ``--bpsperf-no-X``) on
        the command line; ``on``/``off`` (and the like) in the environment, the ini file and markers."""
        return self.parse is _switch


#: The baselines directory when ``baselines_dir`` is not set: under the rootdir in pytest, under
#: the working directory for the ``bpsperf`` command (see :func:`baselines_directory`).
BASELINES_DIR = "baselines"

OPTIONS: "tuple[Option, ...]" = (
    Option(
        "backend",
        "parameter-server backend",
        _backend,
        "auto or a registered backend: " + ", ".join(BACKENDS[1:]),
        "auto",
        True,
    ),
    Option(
        "workers",
        "worker nodes (DMLC_NUM_WORKER; 'auto': 2 on CPUs, every GPU node on GPUs: one on a single GPU machine)",
        _workers,
        "an integer >= 1 or 'auto'",
        0,
    ),
    Option(
        "server_nodes",
        "server nodes ('auto': one per worker node, as BytePS asks, where the cluster has "
        "that many server nodes; 1 on a single machine)",
        _server_nodes,
        "an integer >= 1 or 'auto'",
        0,
    ),
    Option("servers_per_node", "server processes per server node", _int_at_least(1), "an integer >= 1", 1),
    Option("steps", "training steps per run (warm-up included)", _int_at_least(4), "an integer >= 4", None),
    Option("batch_size", "batch size per worker process (per GPU)", _int_at_least(1), "an integer >= 1", None),
    Option("image_size", "height and width of the synthetic images", _int_at_least(16), "an integer >= 16", None),
    Option(
        "model",
        "model name: gluoncv's zoo (mxnet, byteps), torchvision's (torch: resnet50 by default)",
        parse_model,
        "a model name such as resnet50_v2 (gluoncv) or resnet50 (torchvision)",
        "resnet50_v2",
    ),
    Option(
        "omp_threads",
        "OMP_NUM_THREADS of every role ('auto': 4 on GPU hosts, else min(4, cores))",
        _omp_threads,
        "an integer >= 1 or 'auto'",
        "auto",
    ),
    Option(
        "timeout",
        "hard limit in seconds for one training run, bring-up included",
        _positive_float,
        "a number of seconds > 0",
        600.0,
    ),
    Option(
        "repeats",
        "runs per configuration; runs of different tricks are interleaved",
        _int_at_least(1),
        "an integer >= 1",
        1,
    ),
    Option(
        "tricks",
        "comma-separated tricks to run (overrides the bpsperf_tricks marker)",
        _tricks,
        "a comma-separated list of trick names",
        None,
        shown_default="the bpsperf_tricks marker, else default",
    ),
    Option(
        "confirm",
        "extra runs that must confirm a regression before the test fails",
        _int_at_least(0),
        "an integer >= 0",
        2,
    ),
    Option(
        "tolerance",
        "the slowdown that must fail: a drop of the tolerance passes at most 10% of the time, a "
        "drop of half of it or less fails at most 10% (and only beyond noise at 'confidence'); in between "
        "either",
        _percent,
        PERCENT_ACCEPTED,
        0.10,
    ),
    Option(
        "scaling",
        "also time one process without a parameter server, for scaling efficiency",
        _switch,
        "on or off",
        True,
    ),
    Option(
        "trace",
        "BytePS timeline: trace push/pull of training steps START:END (backend byteps)",
        _trace_window,
        "START:END with 1 <= START < END",
        None,
        shown_default="off",
    ),
    Option(
        "ray_address",
        "Ray cluster to use; empty starts an embedded Ray on this machine (inside a Ray job, "
        "ray job submit: the job's cluster)",
        _ray_address,
        "empty/'local', 'auto' or HOST:PORT (not ray://: use Ray Jobs)",
        "",
        False,
        shown_default="empty: an embedded Ray (inside a Ray job: its cluster)",
    ),
    Option(
        "profile",
        "hardware profile name",
        _profile_id,
        "letters, digits, '.', '_' and '-'",
        None,
        False,
        shown_default="detected from the hardware",
    ),
    Option(
        "baselines_dir",
        "directory of the baseline files",
        _path,
        "a directory path",
        None,
        False,
        shown_default=f"{BASELINES_DIR}/ under the rootdir",
    ),
    Option(
        "strict",
        "fail (rather than skip) tests that have no baseline or an inconclusive verdict",
        _switch,
        "on or off",
        False,
        False,
    ),
    Option(
        "max_spread",
        "largest spread (stdev/mean of the runs) a new baseline may have",
        _percent,
        PERCENT_ACCEPTED,
        0.2,
        False,
    ),
    Option(
        "log_dir",
        "directory for role logs",
        _path,
        "a directory path",
        None,
        False,
        shown_default="under pytest's basetemp",
    ),
    Option(
        "server_resource",
        "custom Ray resource that marks server nodes (when no node has it: CPU-only nodes)",
        _resource,
        "the name of a custom Ray resource",
        "bpsperf_server",
        False,
    ),
    Option(
        "colocate",
        "let servers and the scheduler share nodes with workers on a multi-node cluster",
        _switch,
        "on or off",
        False,
    ),
    Option(
        "gpus_per_worker",
        "GPUs each worker node uses ('auto': all of them, the same count on every node)",
        _gpus_per_worker,
        "an integer >= 1 or 'auto'",
        0,
    ),
    Option(
        "role_env",
        "variables per role kind, e.g. network settings: 'server,scheduler:DMLC_INTERFACE=eth0 "
        "worker:DMLC_ENABLE_RDMA=1'",
        _role_env,
        "space-separated ROLES:VAR=VALUE items",
        None,
        shown_default="none",
    ),
    Option(
        "placement_timeout",
        "seconds to wait for Ray to reserve a run's nodes",
        _positive_float,
        "a number of seconds > 0",
        60.0,
        False,
    ),
    Option(
        "max_repeats",
        "most runs a job may take to decide its verdict (repeats is the minimum)",
        _int_at_least(1),
        "an integer >= 1",
        4,
    ),
    Option(
        "confidence",
        "two-sided confidence of the noise interval: a regression lies beyond it (false alarms on "
        "unchanged code: at most half the rest)",
        _percent,
        PERCENT_ACCEPTED,
        0.99,
    ),
    Option(
        "session_spread",
        "spread between sessions assumed while a baseline has one recorded session",
        _percent,
        PERCENT_ACCEPTED,
        0.25,
    ),
    Option(
        "sessions",
        "recorded sessions a baseline entry keeps (--bpsperf-update-baselines adds one)",
        _int_at_least(1),
        "an integer >= 1",
        10,
        False,
    ),
    Option(
        "lock_timeout",
        "seconds a baselines write waits for another process's lock on the baselines "
        "directory (recording, pruning) before it gives up, naming the holder",
        _positive_float,
        "a number of seconds > 0",
        60.0,
        False,
    ),
    Option(
        "normalize",
        "judge img/s as measured (off) or relative to this session's single-process img/s",
        _normalize,
        "off or single",
        "off",
    ),
    Option(
        "timing",
        "overlapped: one sync per step, as users train; breakdown: serialize each step to split compute from sync",
        parse_timing,
        "overlapped or breakdown",
        "overlapped",
    ),
    Option(
        "breakdown_steps",
        "diagnostic steps after the timed ones, each waiting between input, compute and "
        "push/pull, to say where a step's time goes (never counted as throughput; 0: none)",
        _int_at_least(0),
        "an integer >= 0",
        3,
    ),
    Option(
        "data",
        "training data: synthetic, or an ImageNet-style .rec (with its .idx beside it)",
        parse_data,
        "'synthetic' or the path of a .rec file",
        "synthetic",
    ),
    Option(
        "data_threads",
        "decoding threads of the .rec reader (per worker process)",
        _int_at_least(1),
        "an integer >= 1",
        4,
    ),
    Option(
        "dtype",
        "training precision (float16: GPU workers; bfloat16: backend torch, CPU and GPU)",
        parse_dtype,
        "float32, float16 or bfloat16",
        "float32",
    ),
    Option(
        "entry",
        "your own training code, module:function returning a step callable (instead of model)",
        parse_entry,
        "module:function",
        None,
        shown_default="none: the model",
    ),
    Option(
        "launch",
        "byteps workers: direct (one process per GPU, started here) or bpslaunch (bpslaunch per node)",
        parse_launch,
        "direct or bpslaunch",
        "direct",
    ),
    Option(
        "stall_timeout",
        "seconds a worker may go without a new step before the run fails ('auto': "
        "from the run's own step times, at least 30)",
        _stall_timeout,
        "a number of seconds > 0 or 'auto'",
        0.0,
    ),
    Option(
        "connect_timeout",
        "seconds to reach an existing Ray cluster (ray_address) before the session stops",
        _positive_float,
        "a number of seconds > 0",
        30.0,
        False,
    ),
    Option(
        "sync_every",
        "wait for the device every K training steps and time windows of K steps (1: every "
        "step); on GPUs a step's last push/pulls then overlap the next forward pass, as users train "
        "(the default, at most a third of the steps)",
        _int_at_least(1),
        "an integer >= 1",
        1,
        shown_default="10 on GPU, 1 on CPU (at most a third of the steps)",
    ),
    Option(
        "base",
        "measure the working tree (head) against this base in one session, in pairs of runs: a git "
        "revision of the tests' repository (checked out as a temporary worktree) or a directory of the base's "
        "code",
        _base,
        "a git revision (origin/main, HEAD~1, a commit) or a directory",
        None,
        False,
        shown_default="none: the stored baselines",
        empty_is_value=True,
    ),
    Option(
        "head",
        "with base: measure this instead of the working tree, a git revision (checked out as a "
        "temporary worktree, as base is) or a directory; any two commits as the arms (what bpsperf bisect does)",
        _head,
        "a git revision (HEAD~3, a commit) or a directory",
        None,
        False,
        shown_default="none: the working tree",
        empty_is_value=True,
    ),
    Option(
        "base_python",
        "interpreter of the base arm's roles (a venv with other builds of MXNet, BytePS, gluoncv)",
        _interpreter,
        "the path of a Python interpreter",
        None,
        False,
        shown_default="the nodes' own",
    ),
    Option(
        "max_pairs",
        "most pairs of base and head runs a job takes to decide (it stops once decided)",
        _int_at_least(3),
        "an integer >= 3",
        20,
    ),
    Option(
        "seed",
        "seed of the order of the arms in each job's pairs ('random': a new one per session; the results record it)",
        _seed,
        "an integer >= 0 or 'random'",
        None,
        False,
    ),
    Option(
        "foreign_load",
        "cores' worth of CPU that processes outside a run's roles may use on its nodes while it is "
        "timed: a run beyond it is named in its verdict; base vs head runs a pair again whose runs differ by more",
        _cores,
        "a number of cores > 0, such as 0.25",
        0.25,
    ),
    Option(
        "cpus_per_worker",
        "CPUs Ray holds for each worker process while it trains ('auto': the run's share "
        "of its node, split among the run's processes there)",
        _cpus,
        "a number of CPUs > 0 or 'auto'",
        0.0,
    ),
    Option(
        "cpus_per_server",
        "CPUs Ray holds for each server process ('auto': its node's CPUs, split among the run's processes there)",
        _cpus,
        "a number of CPUs > 0 or 'auto'",
        0.0,
    ),
    Option(
        "runtime_env",
        "Ray runtime_env of the role actors, merged with the Ray job's and the plugin's own "
        "(py_modules lists joined; a key set twice is an error)",
        parse_runtime_env,
        "a JSON object or the path of a JSON or YAML file",
        None,
        False,
    ),
)

OPTIONS_BY_NAME: Mapping[str, Option] = {o.name: o for o in OPTIONS}

#: The settings by what they are about, in ``--help``'s order: (group, title, option names).
#: Every option is in one group.
OPTION_GROUPS: "tuple[tuple[str, str, tuple[str, ...]], ...]" = (
    (
        "workload",
        "what the workers train, under which tricks",
        (
            "backend",
            "model",
            "entry",
            "steps",
            "batch_size",
            "image_size",
            "dtype",
            "data",
            "data_threads",
            "omp_threads",
            "timing",
            "sync_every",
            "breakdown_steps",
            "trace",
            "launch",
            "tricks",
            "scaling",
        ),
    ),
    (
        "topology",
        "how many roles, and where they run",
        (
            "workers",
            "server_nodes",
            "servers_per_node",
            "gpus_per_worker",
            "colocate",
            "role_env",
            "server_resource",
            "cpus_per_worker",
            "cpus_per_server",
        ),
    ),
    (
        "gate",
        "verdicts, baselines, base against head",
        (
            "tolerance",
            "confidence",
            "repeats",
            "max_repeats",
            "confirm",
            "session_spread",
            "normalize",
            "strict",
            "profile",
            "baselines_dir",
            "sessions",
            "max_spread",
            "lock_timeout",
            "base",
            "head",
            "base_python",
            "max_pairs",
            "seed",
            "foreign_load",
        ),
    ),
    (
        "cluster",
        "Ray, the runs and their limits",
        ("ray_address", "runtime_env", "connect_timeout", "placement_timeout", "timeout", "stall_timeout", "log_dir"),
    ),
)


def format_value(opt: Option, value: Any) -> str:
    """A value of ``opt`` as it would be written (``15%``, ``on``, ``auto``, ``default,omp-passive``):
    what ``--help``, the reference page, ``--bpsperf-show-settings`` and the report header show."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, (int, float)) and value == 0 and "'auto'" in opt.accepted:
        return "auto"
    if value is None:
        return "random" if "'random'" in opt.accepted else "not set"
    if value == "":
        return "empty"
    if isinstance(value, float) and opt.parse is _percent:
        return f"{value * 100:g}%"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if opt.name == "trace":
        return f"{value[0]}:{value[1]}"
    if opt.name == "role_env":
        return " ".join(f"{role}:{var}={shown(var, val)}" for role, var, val in value)
    if isinstance(value, (tuple, list)):
        return ",".join(map(str, value))
    return str(value)


def default_text(opt: Option) -> str:
    """How ``opt``'s default reads: in words where set, the device kinds' sizes, else its value."""
    if opt.shown_default is not None:
        return opt.shown_default
    if opt.default is None and opt.name in DEVICE_DEFAULTS["cpu"]:
        return ", ".join(f"{DEVICE_DEFAULTS[kind][opt.name]} on {kind.upper()}" for kind in ("cpu", "gpu"))
    return format_value(opt, opt.default)


def baselines_directory(setting: "str | None", root: str) -> str:
    """The baselines directory: the ``baselines_dir`` setting, else :data:`BASELINES_DIR` under ``root``."""
    return setting or os.path.join(root, BASELINES_DIR)


@dataclass(frozen=True)
class Hardware:
    """What the defaults depend on: this machine's GPUs and cores."""

    gpus: int
    cores: int
    #: nodes with GPUs (what ``workers=auto`` plans on GPUs); this machine alone: 1 when it has GPUs
    gpu_nodes: int = -1
    #: nodes that can host servers (what ``server_nodes=auto`` may use); -1: this machine alone
    server_nodes: int = -1

    def __post_init__(self) -> None:
        if self.gpu_nodes < 0:
            object.__setattr__(self, "gpu_nodes", 1 if self.gpus > 0 else 0)

    @classmethod
    def detect(cls) -> "Hardware":
        """This machine as its hardware profile counts it (:func:`pytest_bpsperf.remote.hardware.local_gpus`,
        :func:`~pytest_bpsperf.remote.hardware.core_count`): no CUDA, no Ray; ``nvidia-smi`` once per process
        where it exists."""
        return cls(gpus=len(local_gpus()), cores=core_count())

    @property
    def device(self) -> str:
        """The device kind workers train on: ``gpu`` or ``cpu``."""
        return "gpu" if self.gpus > 0 else "cpu"


#: Workload sizes per device kind. On GPUs: the workload of the BytePS report
#: (224x224, batch 64 per GPU). On CPUs: small images and few steps so that the
#: default suite finishes in minutes. A backend may specialize them
#: (``Backend.workload_defaults``).
DEVICE_DEFAULTS: Mapping[str, Mapping[str, int]] = {
    # sync_every: on GPUs a sync per step stops a step's last push/pulls from overlapping the next
    # forward pass (what BytePS's priority scheduling is for); CPU workers compute synchronously
    "gpu": {"steps": 100, "batch_size": 64, "image_size": 224, "sync_every": 10},
    "cpu": {"steps": 20, "batch_size": 8, "image_size": 32, "sync_every": 1},
}

#: ``workers`` of a backend's defaults: one worker node per GPU node of the cluster.
PER_GPU_NODE = "per-gpu-node"

#: ``defaults_for(backend, device)``: the workload defaults of a backend on a device kind
#: (steps, batch size, image size; optionally ``workers``: a number or :data:`PER_GPU_NODE`).
DefaultsFor = Callable[[str, str], Mapping[str, int]]


def hardware_defaults(
    hw: Hardware, defaults_for: "DefaultsFor | None" = None, backend: str = "auto"
) -> "dict[str, Any]":
    """Defaults that depend on the hardware: workload sizes for its device kind, OpenMP threads."""
    sizes = dict(defaults_for(backend, hw.device) if defaults_for is not None else DEVICE_DEFAULTS[hw.device])
    omp = 4 if hw.device == "gpu" else max(1, min(4, hw.cores))
    # Workers: what the backend says, else on GPUs one worker node per GPU node (a single
    # GPU machine: one, with all its GPUs), and on CPUs two, so that the default run is distributed.
    workers = sizes.pop("workers", PER_GPU_NODE if hw.device == "gpu" else 2)
    if workers == PER_GPU_NODE:
        workers = max(1, hw.gpu_nodes)
    return {**sizes, "omp_threads": omp, "workers": workers}


@dataclass(frozen=True)
class Settings:
    """Resolved settings of one test (or of the session, without a marker)."""

    backend: str
    workers: int
    server_nodes: int
    servers_per_node: int
    steps: int
    batch_size: int
    image_size: int
    model: str
    omp_threads: int
    timeout: float
    repeats: int
    tricks: "tuple[str, ...] | None"
    confirm: int
    tolerance: float
    scaling: bool
    trace: "tuple[int, int] | None"
    ray_address: str
    profile: "str | None"
    baselines_dir: "str | None"
    strict: bool
    max_spread: float
    log_dir: "str | None"
    server_resource: str
    colocate: bool
    gpus_per_worker: int  # 0: every GPU of each worker node
    role_env: "tuple[tuple[str, str, str], ...] | None"  # ((role, VAR, VALUE), ...)
    placement_timeout: float
    max_repeats: int
    confidence: float
    session_spread: float
    sessions: int
    normalize: str
    timing: str
    data: str
    data_threads: int
    dtype: str
    entry: "EntryPoint | None"
    launch: str
    #: where each value came from, e.g. {"steps": "command line option --bpsperf-steps"}
    origins: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False, repr=False)
    # The settings added after ``origins`` need a default here: the option table's.
    stall_timeout: float = OPTIONS_BY_NAME["stall_timeout"].default  # 0: from the run's step times (watchdog)
    connect_timeout: float = OPTIONS_BY_NAME["connect_timeout"].default
    sync_every: int = OPTIONS_BY_NAME["sync_every"].default  # training steps per timed window (one sync each)
    #: base-vs-head: a revision or a directory (see pytest_bpsperf.config.arms)
    base: "str | None" = OPTIONS_BY_NAME["base"].default
    base_python: "str | None" = OPTIONS_BY_NAME["base_python"].default
    #: with base: the head arm's revision or directory (None: the working tree)
    head: "str | None" = OPTIONS_BY_NAME["head"].default
    max_pairs: int = OPTIONS_BY_NAME["max_pairs"].default
    seed: "int | None" = OPTIONS_BY_NAME["seed"].default  # None: random per session
    runtime_env: "RuntimeEnvSetting | None" = OPTIONS_BY_NAME["runtime_env"].default
    foreign_load: float = OPTIONS_BY_NAME["foreign_load"].default  # cores (see judge.records.NodeLoad)
    cpus_per_worker: float = OPTIONS_BY_NAME["cpus_per_worker"].default  # 0: auto (planning.plan)
    cpus_per_server: float = OPTIONS_BY_NAME["cpus_per_server"].default
    lock_timeout: float = OPTIONS_BY_NAME["lock_timeout"].default  # of the baselines directory's lock
    #: diagnostic steps after the timed ones (where a step's time goes; never throughput)
    breakdown_steps: int = OPTIONS_BY_NAME["breakdown_steps"].default

    def workload(self, backend: "str | None" = None) -> "dict[str, Any]":
        """The parameters that define the training workload (for keys and reports).

        ``backend`` is the backend that ran (``auto`` resolved); keys and reports
        always pass it. See :func:`~pytest_bpsperf.config.settings.workload_params`.
        """
        return workload_params(self, backend or self.backend)

    def topology(self) -> "dict[str, Any]":
        """The role counts (before tricks change them)."""
        out = {
            "workers": self.workers,
            "server_nodes": self.server_nodes,
            "servers_per_node": self.servers_per_node,
        }
        if self.gpus_per_worker:
            out["gpus_per_worker"] = self.gpus_per_worker
        if self.colocate:
            out["colocate"] = True
        return out

    def as_dict(self) -> "dict[str, Any]":
        """Plain JSON-able view of every setting."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "origins"}
        if out["tricks"] is not None:
            out["tricks"] = list(out["tricks"])
        if out["entry"] is not None:
            out["entry"] = out["entry"].spec
        if out["runtime_env"] is not None:
            out["runtime_env"] = out["runtime_env"].as_dict()
        if out["role_env"] is not None:  # what the results say: a value whose name looks secret is hidden
            out["role_env"] = [[role, var, shown(var, value)] for role, var, value in out["role_env"]]
        return out

    def with_values(self, **values: Any) -> "Settings":
        """A copy with some values replaced (already validated by the caller)."""
        return replace(self, **values)


@dataclass(frozen=True)
class Source:
    """One place values come from: a description for messages and the raw values."""

    kind: str  # "marker", "cli", "env", "ini"
    where: str  # e.g. "ini file /repo/pyproject.toml" or "marker bpsperf on test_x"
    values: Mapping[str, Any]

    def describe(self, name: str) -> str:
        """Where option ``name`` came from, in the spelling the user wrote."""
        if self.kind == "cli":
            option = OPTIONS_BY_NAME.get(name)
            off = self.values.get(name) is False and option is not None and option.switch
            return f"command line option {no_flag(name) if off else flag(name)}"
        if self.kind == "env":
            return f"environment variable {env_var(name)}"
        if self.kind == "ini":
            return f"ini key {ini_key(name)} in {self.where}"
        if self.kind == "marker":
            return f"{name}= of {self.where}"
        return self.where


def env_source(environ: Mapping[str, str]) -> Source:
    """The ``BPSPERF_*`` environment as a source (empty values count as unset, except for an option
    whose empty value is an error: :attr:`Option.empty_is_value`)."""
    values = {}
    for opt in OPTIONS:
        raw = environ.get(env_var(opt.name))
        if raw is not None and (raw.strip() != "" or opt.empty_is_value):
            values[opt.name] = raw
    return Source("env", "environment", values)


def resolve_value(opt: Option, sources: Sequence[Source]) -> "tuple[Any, str] | None":
    """``opt``'s value from the first of ``sources`` (highest precedence first) that sets it, with
    where it came from; None when none sets it (the caller knows the default).

    Raises :class:`SettingsError` naming the option, the value, where it came from and what is
    accepted.
    """
    for source in sources:
        raw = source.values.get(opt.name)
        if raw is None:
            continue
        try:
            value = opt.parse(raw)
        except ValueError as exc:
            raise SettingsError(
                f"invalid value {raw!r} for setting {opt.name!r} from {source.describe(opt.name)}: {exc}"
            ) from None
        return value, source.describe(opt.name)
    return None


def resolve(sources: Sequence[Source], hardware: Hardware, defaults_for: "DefaultsFor | None" = None) -> Settings:
    """Resolve every option from ``sources`` (highest precedence first), then defaults.

    Workload sizes default to what ``defaults_for`` says for the backend and
    the hardware's device kind (:data:`DEVICE_DEFAULTS` without it).

    Raises :class:`SettingsError` naming the option, the value, where it came from
    and what is accepted.
    """
    for source in sources:
        for key in source.values:
            if key not in OPTIONS_BY_NAME:
                raise SettingsError(
                    f"unknown setting {key!r} in {source.where}; accepted: "
                    + ", ".join(sorted(o.name for o in OPTIONS if source.kind != "marker" or o.per_test))
                )
            if source.kind == "marker" and not OPTIONS_BY_NAME[key].per_test:
                raise SettingsError(
                    f"setting {key!r} cannot be set per test ({source.where}); set it with "
                    f"{flag(key)}, {env_var(key)} or ini key {ini_key(key)}"
                )
    values: "dict[str, Any]" = {}
    origins: "dict[str, str]" = {}
    hw_defaults: "dict[str, Any]" = {}
    for opt in OPTIONS:  # backend comes first: the workload defaults depend on it
        found = resolve_value(opt, sources)
        if found is not None:
            values[opt.name], origins[opt.name] = found
        else:
            if not hw_defaults and "backend" in values:
                hw_defaults = hardware_defaults(hardware, defaults_for, values["backend"])
            values[opt.name] = hw_defaults.get(opt.name, opt.default)
            origins[opt.name] = "default"
    for name in ("omp_threads", "workers"):
        if values[name] == 0:  # 'auto'
            values[name] = hardware_defaults(hardware, defaults_for, values["backend"])[name]
    if values["server_nodes"] == 0:  # 'auto'
        values["server_nodes"] = auto_server_nodes(hardware, values["workers"], values["colocate"])
    if origins["sync_every"] == "default":
        values["sync_every"] = auto_sync_every(values["sync_every"], values["steps"], values["timing"])
    check_limits(values, origins)
    return Settings(origins=origins, **values)


def auto_server_nodes(hardware: Hardware, workers: int, colocate: bool) -> int:
    """``server_nodes=auto``: one server node per worker node, as BytePS asks ("at least equal to the
    number of workers", its docs/step-by-step-tutorial.md:74), as far as the cluster has server nodes;
    with ``colocate``, one per worker node anyway (they share the workers' nodes); on a single machine 1."""
    if hardware.server_nodes < 0:
        return 1
    if hardware.server_nodes == 0:
        return workers if colocate else 1
    return max(1, min(workers, hardware.server_nodes))


def auto_sync_every(default: "int | None", steps: "int | None", timing: str) -> int:
    """The default ``sync_every``: the device kind's (10 on GPUs, 1 on CPUs), at most a third of the
    steps (every run keeps three windows or more), 1 with ``timing=breakdown`` (it syncs in every step)."""
    if timing == "breakdown" or not default:
        return 1
    return max(1, min(int(default), int(steps or 0) // 3))


#: No training step is faster than this: a step count that needs more steps per
#: second to finish within ``timeout`` can never pass.
MAX_STEPS_PER_SECOND = 1000


def check_limits(values: Mapping[str, Any], origins: Mapping[str, str]) -> None:
    """Values that parse but cannot work together: steps that cannot fit the timeout."""
    steps, timeout = values.get("steps"), values.get("timeout")
    if steps and timeout and steps > timeout * MAX_STEPS_PER_SECOND:
        raise SettingsError(
            f"invalid value {steps!r} for setting 'steps' from {origins.get('steps')}: "
            f"{steps} steps cannot finish within the timeout of {timeout:g}s (from {origins.get('timeout')}) "
            f"even at {MAX_STEPS_PER_SECOND} steps/s; expected at most {int(timeout * MAX_STEPS_PER_SECOND)} "
            "steps or a longer timeout"
        )


def workload_params(settings: "Settings", backend: str) -> "dict[str, Any]":
    """The parameters that define the training workload: what baseline keys and reports say.

    Always: backend, what trains (``model``, or ``entry`` for the user's own
    code), steps, batch and image size, OpenMP threads, ``timing`` (runs of one
    timing mode are never compared with the other), ``dtype`` and ``data``
    (``synthetic`` or ``rec:<file name>``; the directory differs between
    machines). The .rec reader's threads only with record data, ``launch``
    only when it is not ``direct``, ``sync_every`` only when it is not 1, ``trace`` (the traced
    steps) only when set.
    """
    out: "dict[str, Any]" = {"backend": backend}
    if settings.entry is not None:
        out["entry"] = settings.entry.spec
    else:
        out["model"] = settings.model
    out.update(
        steps=settings.steps,
        batch_size=settings.batch_size,
        image_size=settings.image_size,
        omp_threads=settings.omp_threads,
        timing=settings.timing,
        dtype=settings.dtype,
    )
    if settings.data == SYNTHETIC:
        out["data"] = SYNTHETIC
    else:
        out["data"] = "rec:" + os.path.basename(settings.data)
        out["data_threads"] = settings.data_threads
    if settings.launch != "direct":
        out["launch"] = settings.launch
    if settings.sync_every != 1:
        out["sync_every"] = settings.sync_every
    if settings.trace is not None:
        # tracing costs BytePS time: traced runs are a workload of their own, never gated on untraced ones
        out["trace"] = f"{settings.trace[0]}:{settings.trace[1]}"
    return out
