"""Which GPUs a node's CUDA stack can run on: its GPUs' compute capability against its MXNet build's CUDA.

The known-good GPU stack (``examples/docker/Dockerfile.gpu``) is CUDA 11.2,
cuDNN 8, MXNet 1.9.1 built for it (``mxnet-cu112``, the last CUDA build of
MXNet 1.9 on PyPI) and BytePS 0.2.5.post15 built against that MXNet. A CUDA
toolkit compiles for the GPU generations it knows (:data:`CUDA_NEWEST_GPU`):
CUDA 11.2 for compute capability up to 8.6 (Ampere), so that stack runs on
Maxwell through Ampere (5.0-8.6: P100, V100, T4, A100, A10, A30, A40, RTX 30xx)
and not on Ada (8.9: L4, L40, RTX 40xx) or Hopper (9.0: H100, H200), which need
CUDA 11.8 or later, nor on Blackwell (10.0, 12.0), which needs CUDA 12.8. The
BytePS probe (``backends.byteps``) refuses such a node with :func:`stack_problem`
before anything runs there. Runs on the node; no MXNet import.
"""

from __future__ import annotations

import re
import subprocess
from typing import Callable, Sequence

#: (CUDA version, the newest compute capability it compiles for), oldest first.
CUDA_NEWEST_GPU: "tuple[tuple[tuple[int, int], float], ...]" = (
    ((11, 0), 8.0),  # Ampere A100
    ((11, 1), 8.6),  # Ampere GA10x
    ((11, 8), 9.0),  # Ada 8.9 and Hopper 9.0
    ((12, 8), 12.0),  # Blackwell 10.0 and 12.0
)
#: The oldest compute capability the MXNet 1.9 CUDA builds on PyPI carry code for (Maxwell).
OLDEST_GPU = 5.0
#: The generations by compute capability, for messages.
GENERATIONS: "tuple[tuple[float, str], ...]" = (
    (5.0, "Maxwell"),
    (6.0, "Pascal"),
    (7.0, "Volta"),
    (7.5, "Turing"),
    (8.0, "Ampere"),
    (8.9, "Ada"),
    (9.0, "Hopper"),
    (10.0, "Blackwell"),
)


def generation(capability: float) -> str:
    """The GPU generation of a compute capability (``9.0`` -> ``Hopper``)."""
    name = "older than Maxwell"
    for low, label in GENERATIONS:
        if capability >= low:
            name = label
    return name


def newest_gpu(cuda: "tuple[int, int]") -> "float | None":
    """The newest compute capability CUDA ``cuda`` compiles for; None for a CUDA older than 11.0."""
    found = None
    for version, capability in CUDA_NEWEST_GPU:
        if cuda >= version:
            found = capability
    return found


def cuda_needed(capability: float) -> "tuple[int, int] | None":
    """The oldest CUDA that compiles for ``capability`` (None: none in :data:`CUDA_NEWEST_GPU` does)."""
    return next((version for version, newest in CUDA_NEWEST_GPU if capability <= newest), None)


def mxnet_cuda(distributions: "Sequence[str] | None" = None) -> "tuple[tuple[int, int], str] | None":
    """(CUDA version, distribution) of the installed MXNet's CUDA build (``mxnet-cu112`` -> 11.2); None for a
    CPU build or one whose name does not say (built from source)."""
    if distributions is None:
        from .preflight import distributions_providing

        distributions = [name for name, _version, _where in distributions_providing("mxnet")]
    for name in distributions:
        match = re.fullmatch(r"mxnet-cu(\d+)(\d)", name.lower().replace("_", "-"))
        if match:
            return (int(match.group(1)), int(match.group(2))), name
    return None


def node_gpus(run: "Callable[[list[str]], str] | None" = None) -> "list[tuple[int, str, float]]":
    """(index, name, compute capability) of this node's GPUs, from ``nvidia-smi``; empty where it cannot tell."""
    argv = ["nvidia-smi", "--query-gpu=index,name,compute_cap", "--format=csv,noheader"]
    try:
        out = (
            run(argv)
            if run is not None
            else subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout
        )
    except (OSError, subprocess.SubprocessError):
        return []
    gpus = []
    for line in str(out).splitlines():
        parts = [p.strip() for p in line.split(",")]
        try:
            gpus.append((int(parts[0]), parts[1], float(parts[2])))
        except (IndexError, ValueError):
            continue  # an old driver without compute_cap
    return gpus


def stack_problem(
    gpus: "Sequence[tuple[int, str, float]] | None" = None, cuda: "tuple[tuple[int, int], str] | None" = None
) -> "str | None":
    """Why this node's MXNet build cannot run on its GPUs (None: it can, or it cannot be told).

    ``gpus`` defaults to :func:`node_gpus`, ``cuda`` to :func:`mxnet_cuda`.
    """
    gpus = node_gpus() if gpus is None else gpus
    cuda = mxnet_cuda() if cuda is None else cuda
    if not gpus or cuda is None:
        return None
    (major, minor), build = cuda
    newest = newest_gpu((major, minor))
    too_new = [g for g in gpus if newest is not None and g[2] > newest]
    too_old = [g for g in gpus if g[2] < OLDEST_GPU]
    if too_new and newest is not None:
        index, name, capability = too_new[0]
        needed = cuda_needed(capability)
        return (
            f"GPU {index} ({name}) is compute capability {capability:.1f} ({generation(capability)}), and this "
            f"node's MXNet is {build} (CUDA {major}.{minor}), which runs up to compute capability {newest:.1f} "
            f"({generation(newest)}): {generation(capability)} needs CUDA "
            + (f">= {needed[0]}.{needed[1]}" if needed else "newer than this plugin knows")
            + ", for which PyPI has no MXNet 1.9 build (its last is mxnet-cu112): use GPUs up to Ampere, or "
            "build MXNet and BytePS from source against a newer CUDA"
        )
    if too_old:
        index, name, capability = too_old[0]
        return (
            f"GPU {index} ({name}) is compute capability {capability:.1f}, older than the {OLDEST_GPU:.1f} "
            f"({generation(OLDEST_GPU)}) that MXNet's CUDA builds carry code for"
        )
    return None
