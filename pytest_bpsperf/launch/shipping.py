"""What travels to the nodes of an existing Ray cluster: an arm's source tree, the entry point's module.

On the embedded Ray the roles read both in place. On an existing cluster each
arm's tree is packed and uploaded once per session as the role actors'
``working_dir`` (Ray's own packaging: ``.gitignore`` and ``.rayignore``
honoured, ``.git`` left out), and an entry point's module outside the trees as
``py_modules``; :meth:`TreeShipping.actor_env` joins that with the driver's own
``runtime_env``, field by field. Driver-side.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from typing import Any

from ..config.arms import Arm
from ..config.ray_env import JOB, PLUGIN, Layer, entry_module_path, merge
from ..config.settings import Settings
from ..planning.planner import for_arm
from ..runs.plan import Plan
from .cluster import ClusterError, RayCluster

__all__ = ["TreeShipping", "shipped_plan"]


class TreeShipping:
    """The uploads of one session to its cluster, each made once, and the role actors' ``runtime_env``."""

    def __init__(self, cluster: RayCluster) -> None:
        self.cluster = cluster
        self._shipped: "dict[str, dict]" = {}  # arm -> the runtime_env that ships its tree (existing cluster)
        self._modules: "dict[str, str]" = {}  # entry point module (path here) -> its URI on the cluster
        self._noted: "set[str]" = set()  # what the runtime_env merges replaced, said once each

    @property
    def ships_trees(self) -> bool:
        """Whether an arm's source tree travels to the nodes (an existing cluster) or is read in place."""
        return not self.cluster.owned

    def shipped(self, arm: Arm) -> "dict | None":
        """The role actors' ``runtime_env`` that brings ``arm``'s tree to the nodes (None on the embedded Ray).

        The tree is packed and uploaded to the cluster once per session, as
        ``ray.init`` ships the plugin: Ray's own packaging (``.gitignore`` and
        ``.rayignore`` honoured, ``.git`` left out), unpacked on each node as
        the actors' working directory.
        """
        if not self.ships_trees:
            return None
        if arm.name not in self._shipped:
            try:
                from ray._private.runtime_env.working_dir import upload_working_dir_if_needed
            except ImportError as exc:  # pragma: no cover - other Ray versions
                raise ClusterError(f"this Ray cannot ship the {arm.name} arm's tree to the nodes: {exc}") from None
            try:
                env = upload_working_dir_if_needed(
                    {"working_dir": arm.tree}, include_gitignore=True, scratch_dir=tempfile.gettempdir()
                )
            except Exception as exc:  # noqa: BLE001 - Ray raises many kinds (too large, unreadable)
                raise ClusterError(f"cannot ship the {arm.name} arm's tree {arm.tree} to the cluster: {exc}") from None
            self._shipped[arm.name] = {"working_dir": env["working_dir"]}
        return dict(self._shipped[arm.name])

    def entry_module(self, settings: Settings, arm: "Arm | None") -> "str | None":
        """The entry point's module (its path here) that travels to the nodes with ``py_modules``, or None:
        on the embedded Ray (roles import it in place), without an entry point, when an arm's tree holds
        it (the arm's working_dir carries it) or when it is an installed package."""
        entry = settings.entry
        if not self.ships_trees or entry is None or (arm is not None and arm.entry_path is not None):
            return None
        return entry_module_path(entry)

    def _upload_module(self, path: str) -> str:
        """``path`` packed and uploaded to the cluster once per session (as ``ray.init`` ships the plugin);
        its URI."""
        if path not in self._modules:
            try:
                from ray._private.runtime_env.py_modules import upload_py_modules_if_needed
            except ImportError as exc:  # pragma: no cover - other Ray versions
                raise ClusterError(f"this Ray cannot ship the entry point's module {path}: {exc}") from None
            import inspect

            # .gitignore honoured where this Ray can (older ones have no such parameter)
            ignore: "dict[str, Any]" = (
                {"include_gitignore": True}
                if "include_gitignore" in inspect.signature(upload_py_modules_if_needed).parameters
                else {}
            )
            try:
                env = upload_py_modules_if_needed({"py_modules": [path]}, scratch_dir=tempfile.gettempdir(), **ignore)
            except Exception as exc:  # noqa: BLE001 - Ray raises many kinds (too large, unreadable)
                raise ClusterError(f"cannot ship the entry point's module {path} to the cluster: {exc}") from None
            self._modules[path] = env["py_modules"][0]
        return self._modules[path]

    def actor_env(self, settings: Settings, arm: "Arm | None") -> "dict | None":
        """The runtime_env of a run's role actors on an existing cluster: the driver's own (the job-level
        one every actor inherits, :func:`ray.get_runtime_context`) plus what this run ships (the arm's
        tree as working_dir, the entry point's module in py_modules). None when the run ships nothing:
        the actors inherit the driver's as it is.

        An actor's runtime_env replaces the inherited one field by field, so the driver's py_modules
        (the plugin's package, the job's and the setting's modules) are joined here, never dropped.
        A conflict with the job's or the setting's fields is a
        :class:`~pytest_bpsperf.config.ray_env.RuntimeEnvError` naming both.
        """
        extra = []
        if arm is not None and self.ships_trees:
            extra.append(
                Layer(
                    PLUGIN,
                    f"the plugin, which ships the {arm.name} arm's tree as the role actors' working_dir",
                    self.shipped(arm) or {},
                )
            )
        module = self.entry_module(settings, arm)
        if module is not None:
            origin = settings.origins.get("entry", "?")
            extra.append(
                Layer(
                    PLUGIN,
                    f"the plugin, which ships the module of entry point {settings.entry} "
                    f"(setting 'entry' from {origin})",
                    {"py_modules": [module]},
                )
            )
        if not extra:
            return None
        import ray

        merge(self.cluster.layers() + extra)  # what the user and the job set, against what this run ships
        driver = dict(ray.get_runtime_context().runtime_env or {})
        merged = merge([Layer(JOB, "this driver's runtime_env", driver), *(self._uploaded(x) for x in extra)])
        for note in merged.notes:
            if note not in self._noted:
                self._noted.add(note)
                self.cluster.say(note)
        return merged.env

    def _uploaded(self, layer: Layer) -> Layer:
        """``layer`` with its local py_modules uploaded (an actor's runtime_env takes URIs only)."""
        if "py_modules" not in layer.env:
            return layer
        return Layer(
            layer.kind,
            layer.origin,
            {**layer.env, "py_modules": [self._upload_module(m) for m in layer.env["py_modules"]]},
        )

    def plan_settings(self, settings: Settings, arm: "Arm | None") -> Settings:
        """``settings`` as the plan gets them: with the entry point shipped, no ``--entry-path`` (the
        driver's directory, which the nodes do not have): the workers import the shipped module."""
        if settings.entry is None or self.entry_module(settings, arm) is None:
            return settings
        return settings.with_values(entry=replace(settings.entry, path=None))


def shipped_plan(plan: Plan, arm: "Arm | None", runtime_env: "dict | None") -> Plan:
    """``plan`` for ``arm`` (base-vs-head) and with the role actors' ``runtime_env`` (an existing cluster)."""
    if arm is not None:
        return for_arm(plan, arm, runtime_env=runtime_env)
    return replace(plan, runtime_env=runtime_env) if runtime_env else plan
