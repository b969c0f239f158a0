"""The contract between a role plan and the process that runs it: placeholders and variables.

One definition, used by the planner (driver), the role actor that scrubs what a
process inherits, the workload that echoes what it got, and the reports.
"""

from __future__ import annotations

import os
import re
from typing import Mapping, Sequence

#: Stands for the Python interpreter of the environment on the role's node; the
#: role actor replaces it there (so no node runs "whatever python3 is on PATH").
PYTHON = "{python}"
#: Stands for the worker's per-step records file, chosen by the role actor.
RECORDS = "{records}"
#: Stands for the root of the arm's source tree on the role's node (base-vs-head runs):
#: the local checkout on this machine, or where Ray unpacked it on a cluster's node.
TREE = "{tree}"
#: Import path entries (``os.pathsep``-separated, may use ``TREE``) that the role actor
#: puts first on a role's PYTHONPATH, after the harness: the code under test.
IMPORT_PATH = "BPSPERF_IMPORT_PATH"
#: Stands for this run's scratch directory on the role's node (``<tmp>/bpsperf-<BPSPERF_RUN_ID>``);
#: the role actor creates every directory an environment value names under it before the role
#: starts (BytePS binds its sockets in ``BYTEPS_SOCKET_PATH`` and creates no directory), and
#: removes the scratch directory after the role stops.
SCRATCH = "{scratch}"
#: Set in every process of a simulated run (a stand-in for BytePS, tests/helpers/standin): what
#: ran instead of the real thing. The workload records it; reports say the run was a simulation,
#: and its figures never become baselines.
SIMULATION = "BPSPERF_SIMULATION"

#: Variables that configure OpenMP, ps-lite, BytePS, MXNet or the GPUs a role
#: sees. A role inherits none of them (Ray puts OMP_NUM_THREADS=1 into every
#: actor's environment; OpenMP reads these once, when it loads): it gets exactly
#: the values its plan sets.
CONFIG_PREFIXES = (
    "OMP_",
    "KMP_",
    "GOMP_",
    "DMLC_",
    "BYTEPS_",
    "PS_",
    "MXNET_",
    "NVIDIA_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
)
#: torch.distributed's rendezvous variables (as ``torchrun`` sets them): whole names, since as
#: prefixes ``RANK`` would take other variables too.
DIST_VARS = ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")
#: What records and reports show of a role's environment: its configuration and
#: the harness's own variables.
#: torch.distributed's own (NCCL_*, GLOO_*, TORCH_*) are the user's to set and to inherit (a runtime_env's
#: NCCL_DEBUG reaches the roles), and shown.
REPORTED_PREFIXES = CONFIG_PREFIXES + ("BPSPERF_", "NCCL_", "GLOO_", "TORCH_")


#: Variables the planner sets from the topology and from where Ray placed each role;
#: a trick or ``role_env`` that sets one of them is a usage error. (Other
#: ``DMLC_*``/``BYTEPS_*`` variables, such as DMLC_INTERFACE, DMLC_ENABLE_RDMA or
#: BYTEPS_SERVER_ENGINE_THREAD, are the user's to set.)
PLANNER_OWNED = (
    "DMLC_ROLE",
    "DMLC_NUM_WORKER",
    "DMLC_NUM_SERVER",
    "DMLC_PS_ROOT_URI",
    "DMLC_PS_ROOT_PORT",
    "DMLC_NODE_HOST",
    "DMLC_WORKER_ID",
    "BYTEPS_LOCAL_RANK",
    "BYTEPS_LOCAL_SIZE",
    "BYTEPS_TRACE_*",
    "NVIDIA_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
    "BPSPERF_RUN_ID",
    "BYTEPS_SOCKET_PATH",
    *DIST_VARS,
)


def package_dir() -> str:
    """The directory of this package (``pytest_bpsperf``) as this process imported it."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pythonpath(first: Sequence[str], inherited: Mapping[str, str]) -> str:
    """The ``PYTHONPATH`` of a process this one starts: ``first``, then what ``inherited`` had.

    Empty entries are left out (an empty entry would put the child's working directory on its path).
    """
    return os.pathsep.join([p for p in first if p] + [p for p in [inherited.get("PYTHONPATH", "")] if p])


def planner_owned(name: str) -> bool:
    """Whether the planner sets variable ``name`` itself."""
    return any(name == p or (p.endswith("*") and name.startswith(p[:-1])) for p in PLANNER_OWNED)


def scrub(inherited: Mapping[str, str]) -> "dict[str, str]":
    """``inherited`` minus every variable that configures a role."""
    return {k: v for k, v in inherited.items() if not (k.startswith(CONFIG_PREFIXES) or k in DIST_VARS)}


#: Names of the variables a trick or ``role_env`` set for a role (comma-separated): reported
#: whatever their prefix (e.g. LD_PRELOAD), so the records show everything a trick changed.
CHOSEN_VARS = "BPSPERF_CHOSEN_VARS"


def reported(environ: Mapping[str, str], extra: "tuple[str, ...]" = ()) -> "dict[str, str]":
    """The variables of ``environ`` that records and reports show, sorted: configuration, the
    harness's own, every variable named in ``CHOSEN_VARS`` and the names in ``extra``; the value of
    each whose name looks secret replaced (:func:`shown`)."""
    chosen = set(filter(None, environ.get(CHOSEN_VARS, "").split(","))) | set(extra)
    return hidden(
        {k: v for k, v in sorted(environ.items()) if k.startswith(REPORTED_PREFIXES) or k in DIST_VARS or k in chosen}
    )


#: What stands in a record, report or message for the value of a variable whose name looks secret
#: (GitHub's own mask, so a reader of either knows it).
HIDDEN = "***"
#: Parts of a name that make it look secret, anywhere in it and in any case: GITHUB_TOKEN,
#: BPSPERF_PR_TOKEN, AWS_SECRET_ACCESS_KEY, PGPASSWORD, WANDB_API_KEY, NPM_AUTH, SSH_PRIVATE...
SECRET_PARTS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "AUTH", "KEY", "PRIVATE", "COOKIE")
#: Words that make a name look secret only as a whole ``_``-separated word (as parts they hit
#: PASSIVE, PATH, ...): DB_PASS, MYSQL_PWD, GH_PAT.
SECRET_WORDS = ("PASS", "PWD", "PAT")
#: Names with a secret-looking part that configure a role and hold no secret: their values stay in
#: the records, which must say what the role ran with. BytePS 0.2.5.post15 reads
#: BYTEPS_KEY_HASH_FN (a hash function's name, byteps/common/global.cc:160), BYTEPS_SERVER_DEBUG_KEY
#: (a tensor key to log, byteps/server/server.cc:423) and PS_KEY_LOG (a switch,
#: byteps/server/server.cc:409); PWD is the working directory.
NOT_SECRET = ("BYTEPS_KEY_HASH_FN", "BYTEPS_SERVER_DEBUG_KEY", "PS_KEY_LOG", "PWD")
#: ``user:password@`` in a URL's authority: the password is hidden whatever the variable's name.
_URL_PASSWORD = re.compile(r"(?<=://)([^/@\s:]*):([^/@\s]+)@")
#: ``NAME=VALUE`` in free text (a setting's raw value, an error message, a command line).
_ASSIGNMENT = re.compile(r"(?<![A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_]*)=('[^']*'|\"[^\"]*\"|[^\s'\",]*)")
#: ``"NAME": "VALUE"`` in free text (a JSON or YAML mapping in a setting's raw value).
_KEY_VALUE = re.compile(r"([\"'])([A-Za-z_][A-Za-z0-9_]*)\1(\s*:\s*)([\"'])((?:\\.|(?!\4).)*)\4")


def looks_secret(name: str) -> bool:
    """Whether variable ``name`` looks like it holds a secret (:data:`SECRET_PARTS`, :data:`SECRET_WORDS`),
    unless it is one of :data:`NOT_SECRET`."""
    upper = name.upper()
    if upper in NOT_SECRET:
        return False
    return any(part in upper for part in SECRET_PARTS) or any(w in SECRET_WORDS for w in upper.split("_"))


def shown(name: str, value: str) -> str:
    """What records and reports show of variable ``name``'s ``value``: :data:`HIDDEN` when the name
    looks secret, else the value with any password of a URL in it hidden."""
    if looks_secret(name):
        return HIDDEN
    return _URL_PASSWORD.sub(lambda m: f"{m.group(1)}:{HIDDEN}@", str(value))


def hidden(environ: Mapping[str, str]) -> "dict[str, str]":
    """A copy of ``environ`` with each value as :func:`shown` gives it (the names are kept)."""
    return {k: shown(k, v) for k, v in environ.items()}


def hide_in_text(text: str) -> str:
    """``text`` with the value of each ``NAME=VALUE`` (or ``"NAME": "VALUE"``) whose name looks secret,
    and each password of a URL, replaced by :data:`HIDDEN`: for a setting's raw value in a message."""
    text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}:{HIDDEN}@", str(text))
    text = _KEY_VALUE.sub(
        lambda m: (
            f"{m.group(1)}{m.group(2)}{m.group(1)}{m.group(3)}{m.group(4)}{HIDDEN}{m.group(4)}"
            if looks_secret(m.group(2))
            else m.group(0)
        ),
        text,
    )
    return _ASSIGNMENT.sub(lambda m: f"{m.group(1)}={HIDDEN}" if looks_secret(m.group(1)) else m.group(0), text)


def rank_records_path(records: str, local_rank: "str | int") -> str:
    """The records file of local rank ``local_rank`` of a role that runs several workers (bpslaunch)."""
    base, ext = os.path.splitext(records)
    return f"{base}.rank{local_rank}{ext}"
