"""Hardware profile: a stable name for "the machine this ran on".

Baselines are only comparable on the same hardware, so each baseline file is
named after a profile. The profile is built from facts that do not change
between runs on the same machine (CPU model, core count, memory class, GPU
model and count, cluster shape) and never from clocks, load or free memory,
which would give the same machine a new name on every run.

The CPU is named by what changes throughput and what a model name can hide:
cloud VMs may report only "AMD EPYC" for CPUs about 3x apart, so the profile
holds the vendor, family, model and stepping, and the vector instruction sets
that the math libraries choose their kernels by (SSE4.2, AVX, AVX2, AVX-512
and its extensions, AMX; on ARM NEON, SVE): two machines that differ in any of
them never share baselines. Profiles of this scheme say so
(``profile_scheme``); an older file's id is what :func:`legacy_id` computes,
and :func:`differences` says how two profiles' facts differ (the nearest
recorded profile of a machine that has none, as information).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ..remote.hardware import CPU_KEYS, HOST_KEYS, PROFILE_SCHEME, as_count

__all__ = [
    "Profile",
    "cluster_profile_facts",
    "cpu_text",
    "differences",
    "is_legacy",
    "legacy_id",
    "make_profile",
    "nearest",
    "validate_profile_id",
]


_NAME_MAX = 64
_ID_RE = re.compile(r"[A-Za-z0-9._-]+")
# Words that every CPU/GPU of a vendor line carries and that only make the
# slug longer; the model number is what tells machines apart.
_NOISE_WORDS = {
    "processor",
    "cpu",
    "core",
    "with",
    "radeon",
    "graphics",
    "nvidia",
    "tesla",
    "geforce",
    "corporation",
    "inc",
    "genuine",
    "authentic",
}


def _kind_facts(hosts: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    counts: Dict[str, int] = {}
    for h in hosts:
        key = json.dumps({k: h.get(k) for k in HOST_KEYS}, sort_keys=True)
        counts[key] = counts.get(key, 0) + 1
    return [{**json.loads(k), "count": n} for k, n in sorted(counts.items())]


def cluster_profile_facts(workers: Sequence[Mapping[str, Any]], servers: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """Profile facts of a cluster from the nodes that hosted roles (see :func:`host_facts`), per node kind.

    The top-level facts (and so the profile's name) describe a worker node; the
    ``cluster`` fact lists every distinct kind of worker and server node with its
    count. The machine that runs pytest is no part of it.
    """
    if not workers and not servers:
        raise ValueError("no node hosted a role: a cluster profile needs the nodes that ran")
    first = (list(workers) or list(servers))[0]
    facts: Dict[str, Any] = {k: first.get(k) for k in HOST_KEYS}
    facts["profile_scheme"] = PROFILE_SCHEME
    facts["cluster"] = {
        "nodes": len(workers) + len(servers),
        "worker_nodes": _kind_facts(workers),
        "server_nodes": _kind_facts(servers),
    }
    return facts


def _slug_words(text: str) -> List[str]:
    text = text.lower()
    # "(R)", "(TM)" and the nominal clock ("@ 2.30GHz") say nothing that the
    # model number does not, and would make names long.
    text = re.sub(r"\((r|tm|c)\)", " ", text)
    text = re.sub(r"@.*$", " ", text)
    text = re.sub(r"\b\d+(\.\d+)?\s*[gm]hz\b", " ", text)
    text = re.sub(r"\b\d+-core\b", " ", text)
    words = re.split(r"[^a-z0-9]+", text)
    return [w for w in words if w and w not in _NOISE_WORDS]


def _join_capped(words: Sequence[str], cap: int) -> str:
    out = ""
    for w in words:
        candidate = f"{out}-{w}" if out else w
        if len(candidate) > cap:
            break
        out = candidate
    return out or (words[0][:cap] if words else "")


def _slug(text: str) -> str:
    return "-".join(w for w in re.split(r"[^a-z0-9]+", text.lower()) if w)


def _profile_name(facts: Mapping[str, Any]) -> str:
    parts: List[str] = []
    gpu_count = as_count(facts.get("gpu_count", 0))
    gpu_model = facts.get("gpu_model")
    if gpu_count and gpu_model:
        model = _join_capped(_slug_words(str(gpu_model)), 20) or "gpu"
        parts.append(f"gpu-{gpu_count}x{model}")
    else:
        parts.append("cpu")
    cpu = _join_capped(_slug_words(str(facts.get("cpu_model", ""))), 24)
    if cpu:
        parts.append(cpu)
    family, number = facts.get("cpu_family"), facts.get("cpu_model_number")
    if isinstance(family, int) and isinstance(number, int):
        parts.append(f"f{family}m{number}")  # what the model name may hide (x86)
    isa = set(facts.get("cpu_isa") or ())
    tier = next(
        (
            name
            for name, flag in (("amx", "amx_tile"), ("avx512", "avx512f"), ("avx2", "avx2"), ("sve", "sve"))
            if flag in isa
        ),
        None,
    )
    if tier:
        parts.append(tier)
    if facts.get("cores"):
        parts.append(f"{as_count(facts['cores'])}c")
    if facts.get("memory_gib_class"):
        parts.append(f"{as_count(facts['memory_gib_class'])}g")
    cluster = facts.get("cluster")
    if isinstance(cluster, Mapping) and cluster.get("nodes"):
        parts.append(f"{as_count(cluster['nodes'])}n")
    if facts.get("arch"):
        parts.append(_slug(str(facts["arch"])))
    name = _slug("-".join(parts))
    return name[:_NAME_MAX].rstrip("-") or "profile"


def _facts_hash(facts: Mapping[str, Any]) -> str:
    canonical = json.dumps(facts, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()[:10]


def validate_profile_id(value: str) -> str:
    """Return ``value`` if it can name a baselines file, else raise ValueError."""
    if not isinstance(value, str) or not _ID_RE.fullmatch(value) or value in (".", ".."):
        raise ValueError(
            f"profile id {value!r} is not accepted: use letters, digits, '.', '_' and '-' "
            "only (it names the baselines file), e.g. 'ci-a100-runner', and not '.' or '..'"
        )
    return value


@dataclass(frozen=True)
class Profile:
    """A hardware profile: readable ``name``, ``hash`` of the facts, and the facts.

    ``id`` (``name-hash[:8]``, or the override) names the baselines file.
    """

    name: str
    hash: str
    facts: Dict[str, Any] = field(hash=False)
    override: Optional[str] = None

    @property
    def id(self) -> str:
        """The baselines file stem: the override when given, else ``name-hash[:8]``."""
        return self.override if self.override is not None else f"{self.name}-{self.hash[:8]}"

    def as_dict(self) -> Dict[str, Any]:
        """Return the JSON-ready form stored at the top of a baselines file."""
        return {"id": self.id, "name": self.name, "hash": self.hash, "facts": dict(self.facts)}


def make_profile(facts: Mapping[str, Any], override: Optional[str] = None) -> Profile:
    """Build the :class:`Profile` for ``facts``; ``override`` replaces its id.

    The hash is the first 10 hex digits of the sha256 of the facts as
    canonical JSON (sorted keys, no spaces), so it changes with any fact and
    with nothing else. Facts must be JSON-serializable.
    """
    if override is not None:
        validate_profile_id(override)
    # A JSON round trip both checks serializability and detaches the profile
    # from the caller's (possibly mutable, possibly nested) mapping.
    plain = json.loads(json.dumps(dict(facts), sort_keys=True))
    return Profile(name=_profile_name(plain), hash=_facts_hash(plain), facts=plain, override=override)


def is_legacy(facts: "Mapping[str, Any] | None") -> bool:
    """Whether ``facts`` (a profile's, or a baselines file's ``profile.facts``) come from before
    :data:`PROFILE_SCHEME`: they do not tell CPUs apart by family, model, stepping and vector sets."""
    return not isinstance(facts, Mapping) or int(facts.get("profile_scheme") or 1) < PROFILE_SCHEME


def _without_scheme(facts: Mapping[str, Any]) -> Dict[str, Any]:
    out = {k: v for k, v in facts.items() if k not in CPU_KEYS and k != "profile_scheme"}
    cluster = out.get("cluster")
    if isinstance(cluster, Mapping) and ("worker_nodes" in cluster or "server_nodes" in cluster):
        out["cluster"] = {
            **cluster,
            **{
                kind: [{k: v for k, v in node.items() if k not in CPU_KEYS} for node in cluster.get(kind, [])]
                for kind in ("worker_nodes", "server_nodes")
                if kind in cluster
            },
        }
    return out


def legacy_id(facts: Mapping[str, Any]) -> str:
    """The id the older scheme gave the machine of ``facts``: where its baselines were filed before."""
    return make_profile(_without_scheme(facts)).id


_TIERS = (
    ("AMX", "amx_tile"),
    ("AVX-512", "avx512f"),
    ("AVX2", "avx2"),
    ("AVX", "avx"),
    ("SVE", "sve"),
    ("NEON", "asimd"),
)


def cpu_text(facts: Mapping[str, Any]) -> str:
    """The CPU of ``facts`` in a few words: ``GenuineIntel family 6 model 167 stepping 1, AMX, AVX-512, AVX2``."""
    parts = [str(facts.get("cpu_vendor") or "unknown vendor")]
    parts += [
        f"{word} {facts[key]}"
        for word, key in (("family", "cpu_family"), ("model", "cpu_model_number"), ("stepping", "cpu_stepping"))
        if facts.get(key) is not None
    ]
    isa = set(facts.get("cpu_isa") or ())
    tiers = [name for name, flag in _TIERS if flag in isa]
    return " ".join(parts) + (", " + ", ".join(tiers[:3]) if tiers else ", no vector sets beyond SSE")


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return "+".join(map(str, value)) if value else "none"
    return "unknown" if value is None else str(value)


def differences(recorded: Mapping[str, Any], here: Mapping[str, Any]) -> "list[str]":
    """How the facts of a recorded profile differ from ``here``'s, in words (``cpu_family 25 -> 6``); a
    recorded profile of the older scheme says that it does not know the CPU's identity."""
    out: "list[str]" = []
    legacy = is_legacy(recorded)
    if legacy:
        out.append("recorded before profiles named the CPU's family, model, stepping and vector instruction sets")
    keys = [k for k in HOST_KEYS if not (legacy and k in CPU_KEYS)]
    for key in keys:
        a, b = recorded.get(key), here.get(key)
        if key == "cpu_isa" and a != b:
            gained = [f for f in (b or []) if f not in (a or [])]
            lost = [f for f in (a or []) if f not in (b or [])]
            out.append("cpu_isa " + " ".join([f"+{f}" for f in gained] + [f"-{f}" for f in lost]))
        elif a != b:
            out.append(f"{key} {_shown(a)} -> {_shown(b)}")
    ca, cb = recorded.get("cluster"), here.get("cluster")
    if isinstance(ca, Mapping) and isinstance(cb, Mapping) and ca.get("nodes") != cb.get("nodes"):
        out.append(f"nodes {ca.get('nodes')} -> {cb.get('nodes')}")
    return out


#: How much a differing fact weighs when choosing the nearest profile: the CPU's identity most.
_WEIGHTS = {
    "cpu_vendor": 8,
    "cpu_family": 6,
    "cpu_model_number": 4,
    "cpu_isa": 4,
    "gpu_model": 8,
    "gpu_count": 3,
    "cpu_model": 2,
    "cpu_stepping": 1,
    "cores": 2,
    "memory_gib_class": 1,
    "arch": 10,
}


def nearest(here: Mapping[str, Any], recorded: Mapping[str, Mapping[str, Any]]) -> "tuple[str, list[str]] | None":
    """The recorded profile (id -> its facts) whose facts are closest to ``here``'s, and how they differ;
    None when nothing is recorded. Information for a machine without baselines, never a verdict."""
    best: "tuple[float, str] | None" = None
    for pid, facts in sorted(recorded.items()):
        if not isinstance(facts, Mapping):
            continue
        score = sum(
            w for k, w in _WEIGHTS.items() if facts.get(k) != here.get(k) and not (is_legacy(facts) and k in CPU_KEYS)
        )
        score += 5 if is_legacy(facts) else 0  # unknown CPU identity: nearer only than what plainly differs
        if best is None or score < best[0]:
            best = (score, pid)
    if best is None:
        return None
    return best[1], differences(recorded[best[1]], here)
