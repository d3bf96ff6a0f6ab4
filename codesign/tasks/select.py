"""Pick the tasks of a run from a task root, by id list and labels (the ``tasks`` config group)."""

from __future__ import annotations

from typing import Any

from codesign.errors import ConfigError
from codesign.tasks.loader import Suite, load_suite


def select_tasks(cfg: Any) -> Suite:
    """``cfg`` has ``root`` and optional filters ``include``, ``tracks``, ``modalities``,
    ``min_edit_types`` and ``max_edit_types``; tasks that fail to load are kept as errors."""
    include = list(cfg.include) if cfg.get("include") else None
    suite = load_suite(cfg.root, include=include)
    if (
        include
        and not suite.tasks
        and len(suite.errors) == len(include)
        and all(e.problem == "no such task folder" for e in suite.errors)
    ):
        raise ConfigError(
            f"none of the {len(include)} tasks in tasks.include is under {suite.root}",
            "to run every task of your own suite use tasks=all tasks.root=DIR (tasks=sample lists bundled tasks), "
            "or name tasks that exist in tasks.include",
        )
    tracks = set(cfg.get("tracks") or [])
    modalities = set(cfg.get("modalities") or [])
    lo, hi = cfg.get("min_edit_types"), cfg.get("max_edit_types")

    def keep(task: Any) -> bool:
        m = task.manifest
        n = len(m.labels.edit_types)
        return (
            (not tracks or m.track in tracks)
            and (not modalities or m.modality in modalities)
            and (lo is None or n >= lo)
            and (hi is None or n <= hi)
        )

    suite.tasks = [t for t in suite.tasks if keep(t)]
    return suite
