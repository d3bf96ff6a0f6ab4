"""Suite statistics: ``python -m codesign.stats [tasks=all] [tasks.root=...]``.

Tasks per track, modality and edit-type count; criteria per task; probe coverage; criterion kinds.
"""

from __future__ import annotations

import sys

import polars as pl

from codesign.config import compose_cli
from codesign.score.metrics import whole_tables
from codesign.tasks.loader import Task
from codesign.tasks.select import select_tasks


def task_rows(tasks: list[Task]) -> pl.DataFrame:
    rows = []
    for t in tasks:
        m = t.manifest
        files = [p for p in t.app_dir.rglob("*") if p.is_file() and "node_modules" not in p.parts]
        rows.append(
            {
                "task_id": t.id,
                "track": m.track,
                "modality": m.modality,
                "n_edit_types": len(m.labels.edit_types),
                "app": "single-page" if len(files) == 1 else f"multi-file ({m.environment.kind})",
                "criteria": len(t.criteria),
                "probed": sum(c.deterministic for c in t.criteria),
                "preserve": sum(c.preserve for c in t.criteria),
                "difficulty": m.labels.difficulty,
            }
        )
    return pl.DataFrame(rows)


def kind_rows(tasks: list[Task]) -> pl.DataFrame:
    return pl.DataFrame(
        [{"track": t.track, "kind": c.kind, "probed": c.deterministic} for t in tasks for c in t.criteria]
    )


def report(tasks: list[Task]) -> str:
    df = task_rows(tasks)
    out = []
    with whole_tables(width=200):
        per_track = (
            df.group_by("track")
            .agg(
                tasks=pl.len(),
                criteria=pl.col("criteria").sum(),
                criteria_per_task=pl.col("criteria").mean().round(1),
                min_criteria=pl.col("criteria").min(),
                max_criteria=pl.col("criteria").max(),
                probe_coverage=(pl.col("probed").sum() / pl.col("criteria").sum()).round(3),
                tasks_with_preserve=(pl.col("preserve") > 0).sum(),
            )
            .sort("track")
        )
        total = df.select(
            tasks=pl.len(),
            criteria=pl.col("criteria").sum(),
            probe_coverage=(pl.col("probed").sum() / pl.col("criteria").sum()).round(3),
        )
        out += ["Per track", str(per_track), "", "All tasks", str(total), ""]
        me, re_ = df.filter(pl.col("track") == "ME"), df.filter(pl.col("track") == "RE")
        if me.height:
            out += ["ME by primary modality", str(me.group_by("modality").len().sort("modality")), ""]
            out += ["ME by app shape", str(me.group_by("app").len().sort("app")), ""]
        if re_.height:
            out += ["RE by edit-type count", str(re_.group_by("n_edit_types").len().sort("n_edit_types")), ""]
        kinds = kind_rows(tasks).group_by("kind").agg(criteria=pl.len(), probed=pl.col("probed").sum()).sort("kind")
        out += ["Criteria by kind", str(kinds), "", "Tasks", str(df.sort("track", "task_id"))]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    cfg = compose_cli(argv if argv is not None else sys.argv[1:], default_overrides=["tasks=all"])
    selection = select_tasks(cfg.tasks)
    for e in selection.errors:
        print(f"task error: {e}", file=sys.stderr)
    if not selection.tasks:
        print("no tasks selected", file=sys.stderr)
        return 1
    print(report(selection.tasks))
    return 1 if selection.errors else 0


if __name__ == "__main__":
    sys.exit(main())
