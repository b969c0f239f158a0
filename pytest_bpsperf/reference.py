"""The scaling reference: the workload in one process on a worker node, with no parameter server."""

from __future__ import annotations

from typing import Mapping, Sequence

from .launcher import RoleFailed, _node_strategy, _remote_role_class
from .measurement import WorkerRecords
from .placement import Node


def run_single_process(node: Node, command: Sequence[str], env: dict, log_dir: str, *, timeout: float,
                       gpus: int = 0, tree: "str | None" = None,
                       runtime_env: "Mapping[str, object] | None" = None) -> WorkerRecords:
    """Run one workload process with no parameter server (reference for scaling efficiency).

    With ``gpus``, its actor asks Ray for them and the process sees exactly the ids Ray assigned.
    ``tree`` and ``runtime_env``: the arm's source tree of a base-vs-head run (see
    :func:`pytest_bpsperf.plan.for_arm`).
    """
    import ray

    shipping = {"runtime_env": dict(runtime_env)} if runtime_env else {}
    actor = _remote_role_class().options(scheduling_strategy=_node_strategy(node), num_gpus=gpus,
                                         **shipping).remote("single", log_dir, tree)
    try:
        if gpus:
            ids = ray.get(actor.where.remote(), timeout=timeout)["gpu_ids"]
            env = {**env, "CUDA_VISIBLE_DEVICES": ",".join(map(str, ids))}
        ray.get(actor.start.remote(list(command), env), timeout=timeout)
        code = ray.get(actor.wait.remote(timeout), timeout=timeout + 30)
        if code != 0:
            tail = ray.get(actor.log_tail.remote(), timeout=30)
            ray.get(actor.stop.remote(), timeout=30)
            raise RoleFailed(f"single-process reference run failed (exit {code}):\n{tail}")
        return WorkerRecords("single", node.name, tuple(ray.get(actor.records.remote(), timeout=30)))
    finally:
        try:
            ray.get(actor.stop.remote(), timeout=30)
        finally:
            ray.kill(actor, no_restart=True)

