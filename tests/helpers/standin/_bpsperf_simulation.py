"""The simulation's process-wide part: GPU contexts on the CPU, and the mark that this run is a simulation.

Imported by ``sitecustomize`` (this folder) in every Python process that has the
stand-in first on its path: role processes, the processes bpslaunch spawns, Ray's
workers. It sets ``BPSPERF_SIMULATION`` (which the workload copies into its start
record, so reports say the run was a simulation and baselines refuse it), and maps
``mx.gpu(i)`` to the CPU once MXNet is imported, with CUDA's own rule for the
device: an ordinal beyond the devices ``CUDA_VISIBLE_DEVICES`` lists fails, as
``cudaSetDevice`` does ("invalid device ordinal").
"""

from __future__ import annotations

import importlib.util
import os
import sys

#: The variable the plugin reads (``pytest_bpsperf.remote.environ.SIMULATION``), and what it says.
SIMULATION_ENV = "BPSPERF_SIMULATION"
SIMULATION = (
    "BytePS stand-in (tests/helpers/standin): BytePS's MXNet plugin simulated on CPU MXNet, "
    "its push_pulls carried by MXNet's dist_sync servers; GPUs are simulated"
)


def visible_gpus() -> "int | None":
    """How many GPUs ``CUDA_VISIBLE_DEVICES`` lets this process see; None when it is unset (all of them)."""
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None
    return len([d for d in value.split(",") if d.strip()])


def map_gpu(mx: object) -> None:
    """``mx.gpu(i)`` is the CPU from now on, for the ordinals CUDA would accept (idempotent)."""
    if getattr(mx, "_bpsperf_gpu_mapped", False):
        return
    cpu = mx.cpu  # type: ignore[attr-defined]

    def gpu(device_id: int = 0) -> object:
        visible = visible_gpus()
        if device_id < 0 or (visible is not None and device_id >= visible):
            raise mx.base.MXNetError(  # type: ignore[attr-defined]
                f"[simulated CUDA] cudaSetDevice({device_id}) failed: invalid device ordinal "
                f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r})"
            )
        return cpu(0)

    mx.gpu = gpu  # type: ignore[attr-defined]
    mx.context.gpu = gpu  # type: ignore[attr-defined]
    mx._bpsperf_gpu_mapped = True  # type: ignore[attr-defined]


class _MapGpuOnImport:
    """A meta path finder that lets MXNet import as usual, then maps its ``gpu`` (once)."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> object:
        if name != "mxnet":
            return None
        sys.meta_path.remove(self)  # the real finders find MXNet; this one has done its part
        spec = importlib.util.find_spec(name)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        real_exec = loader.exec_module

        def exec_module(module: object) -> None:
            real_exec(module)
            map_gpu(module)

        loader.exec_module = exec_module
        return spec


def install() -> None:
    """Mark this process (and its children) as a simulation, and map MXNet's GPUs when it is imported."""
    os.environ.setdefault(SIMULATION_ENV, SIMULATION)
    mx = sys.modules.get("mxnet")
    if mx is not None:
        map_gpu(mx)
    elif not any(isinstance(f, _MapGpuOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _MapGpuOnImport())
