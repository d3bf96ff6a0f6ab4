"""The whole pipeline for one Hydra job: tasks → solve → evaluate → score → track. Deliberately tiny:
each stage lives in its own package and is chosen by config."""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hydra.utils import get_class
from omegaconf import DictConfig, OmegaConf

from codesign._types import TrialRecord, TrialStatus
from codesign.build import build, preflight
from codesign.errors import ConfigError
from codesign.execute import Budget
from codesign.sandbox import scratch
from codesign.score import (
    adjusted_frame,
    breakdown_frame,
    format_errors,
    format_summary,
    summary_frame,
    task_frame,
    verdict_frame,
)
from codesign.solve.attachments import check_media_support
from codesign.tasks.select import select_tasks
from codesign.track.report import write_report
from codesign.trial import TrialSpec


def trial_specs(cfg: DictConfig, task_dirs: list[tuple[str, Path]]) -> list[TrialSpec]:
    plain = lambda key: OmegaConf.to_container(cfg[key], resolve=True)  # noqa: E731
    uses_harness = getattr(get_class(cfg.regime._target_), "uses_harness", True)
    cell = {
        "model": cfg.model.name,
        "harness": cfg.harness.name if uses_harness else "none",
        "regime": cfg.regime.name,
        "evaluator": cfg.evaluator.name,
    }
    return [
        TrialSpec(
            task_dir=str(path),
            task_id=task_id,
            model=plain("model"),
            harness=plain("harness") if uses_harness else {},  # not part of a single-shot solve's key
            regime=plain("regime"),
            sandbox=plain("sandbox"),
            evaluator=plain("evaluator"),
            seed=int(seed),
            store_root=str(Path(cfg.store.root).expanduser().resolve()),
            node_cache=cfg.paths.node_cache,
            scratch_root=cfg.paths.scratch,
            reuse=bool(cfg.store.reuse),
            evaluate=bool(cfg.stages.evaluate),
            attribution_below=cfg.attribution.below,
            cell={**cell, "seed": str(seed)},
        )
        for task_id, path in task_dirs
        for seed in cfg.seeds
    ]


def _progress(total: int, prefix: bool):
    done = 0
    start = time.monotonic()

    def report(record: TrialRecord) -> None:
        nonlocal done
        done += 1
        verdicts = record.evaluation.verdicts if record.evaluation else []
        n_pass = sum(v.verdict == "PASS" for v in verdicts)
        ok = record.status == TrialStatus.OK
        what = f"{n_pass}/{len(verdicts)} PASS" if ok else f"{record.status}: {record.message}"
        reused = "+".join(k for k, v in record.cached.items() if v)
        where = f"{record.cell.get('run')}: " if prefix else ""
        print(f"[{done}/{total} {time.monotonic() - start:5.1f}s] {where}{record.task_id} {what}"
              + (f" (reused {reused})" if reused else ""), flush=True)  # fmt: skip

    return report


@dataclass
class Cell:
    """One cell of a run (one Hydra job): its config, its trials, and where its results go."""

    cfg: DictConfig
    out_dir: Path
    name: str
    group: str | None
    specs: list[TrialSpec]
    task_errors: list[TrialRecord]
    tracker: Any = None
    records: list[TrialRecord] = field(default_factory=list)


def prepare(cfg: DictConfig, out_dir: Path, name: str = "run", group: str | None = None) -> Cell:
    """Select the tasks, check what must hold before any trial starts, and build the cell's trial specs."""
    selection = select_tasks(cfg.tasks)
    if not selection.tasks and not selection.errors:
        raise ConfigError(
            f"no task selected under {selection.root}",
            "check tasks.root, tasks.include and the filters (tracks, modalities, edit types)",
        )
    preflight(cfg)
    # What a killed run left behind on this machine (workspaces, half-done installs) goes first.
    scratch.sweep(cfg.paths.scratch, Path(cfg.paths.node_cache).expanduser())
    needs: dict[str, set[str]] = {}
    for t in selection.tasks:
        for a in t.manifest.attachments:
            needs.setdefault(a.modality, set()).add(t.id)
    check_media_support(needs)
    specs = trial_specs(cfg, [(t.id, t.dir) for t in selection.tasks])
    for spec in specs:
        spec.cell["run"] = name  # routes each streamed record back to its cell
    cell_keys = {**(specs[0].cell if specs else {}), "run": name}
    errors = [TrialRecord.unrun(e.task_id, cell_keys, TrialStatus.TASK_ERROR, str(e)) for e in selection.errors]
    for e in selection.errors:
        print(f"task error: {e}", file=sys.stderr)
    return Cell(cfg, out_dir, name, group, specs, errors)


def run_cells(cells: list[Cell]) -> list[dict[str, Any]]:
    """Run the trials of every cell in one executor pool (the first cell's executor and budget), streaming
    each record to its cell's tracker; then score and write each cell's tables."""
    by_name = {c.name: c for c in cells}
    for c in cells:
        c.tracker = build(c.cfg.tracker)
        c.tracker.start(c.name, c.group, OmegaConf.to_container(c.cfg, resolve=True), c.out_dir)
    try:
        specs = [asdict(s) for c in cells for s in c.specs]
        report = _progress(len(specs), prefix=len(cells) > 1)

        def on_result(record: TrialRecord) -> None:
            report(record)
            cell = by_name[record.cell["run"]]
            cell.records.append(record)
            cell.tracker.log_trial(record)

        budget = Budget(cells[0].cfg.budget.max_cost_usd)
        records = build(cells[0].cfg.executor).run(specs, on_result, budget) if specs else []
        skipped = sum(r.status == TrialStatus.SKIPPED for r in records)
        if skipped:
            print(f"cost budget of ${budget.max_cost_usd:.2f} reached (spent ${budget.spent_usd:.4f}): "
                  f"{skipped} trials were not started", file=sys.stderr)  # fmt: skip
        return [_conclude(c) for c in cells]
    except BaseException as e:
        for c in cells:
            if c.tracker is not None:
                c.tracker.finish(None, e)
        raise


def _conclude(cell: Cell) -> dict[str, Any]:
    records = cell.records + cell.task_errors
    tasks = task_frame(records)
    tables = {"verdicts": verdict_frame(records), "tasks": tasks, "summary": summary_frame(tasks),
              "breakdowns": breakdown_frame(tasks), "adjusted": adjusted_frame(tasks)}  # fmt: skip
    for name, frame in tables.items():
        frame.write_parquet(cell.out_dir / f"{name}.parquet")
    store = Path(cell.cfg.store.root).expanduser().resolve()
    write_report(cell.out_dir, tables, records, store, title=f"codesign · {cell.name}")
    print(format_summary(tables["summary"]))
    left_out = format_errors(tasks)
    if left_out:
        print("left out of the scores:\n" + left_out, file=sys.stderr)
    print(f"results: {cell.out_dir} (report.html)")
    cell.tracker.finish(tables)
    cell.tracker = None
    return tables


def run(cfg: DictConfig, out_dir: Path, run_name: str = "run", group: str | None = None) -> dict[str, Any]:
    """Run one cell over the selected tasks; write parquet tables to ``out_dir``; return the tables."""
    return run_cells([prepare(cfg, out_dir, run_name, group)])[0]
