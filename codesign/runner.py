"""The whole pipeline for one Hydra job: tasks → solve → evaluate → score → track. Deliberately tiny:
each stage lives in its own package and is chosen by config."""

from __future__ import annotations

import contextlib
import contextvars
import copy
import json
import sys
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hydra.utils import get_class
from omegaconf import DictConfig, OmegaConf

from codesign._types import TrialRecord, TrialStatus
from codesign.build import build, families, preflight
from codesign.config import plain_dict
from codesign.errors import ConfigError, NothingRan
from codesign.execute import Budget
from codesign.report.collect import STORE_FILE
from codesign.sandbox import scratch
from codesign.score import (
    adjusted_frame,
    breakdown_frame,
    denominators_frame,
    format_denominators,
    format_errors,
    format_noise,
    format_summary,
    ledger_frame,
    noise_frame,
    summary_frame,
    task_frame,
    verdict_frame,
)
from codesign.solve.attachments import check_media_support
from codesign.store import Store, store_uri
from codesign.tasks.select import select_tasks
from codesign.track.progress import Progress
from codesign.track.report import write_report
from codesign.trial import TrialSpec


@dataclass
class Command:
    """What every cell of one command shares: an id (with ``store.reuse=false`` the cells still share the
    stages this command produced) and one cost budget, charged by all of them."""

    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    budget: Budget | None = None

    def budget_for(self, cfg: DictConfig) -> Budget:
        limit = cfg.budget.max_cost_usd
        if self.budget is None:
            self.budget = Budget(limit)
        elif self.budget.max_cost_usd != limit:
            raise ConfigError(
                f"budget.max_cost_usd differs between cells ({self.budget.max_cost_usd} and {limit})",
                "a budget is one for the whole command: set it once, outside the swept overrides",
            )
        return self.budget


def cell_of(cfg: DictConfig) -> dict[str, str]:
    """The cell a config runs: model, harness (``none`` for a regime without one), regime, evaluator."""
    uses_harness = getattr(get_class(cfg.regime._target_), "uses_harness", True)
    return {
        "model": cfg.model.name,
        "harness": cfg.harness.name if uses_harness else "none",
        "regime": cfg.regime.name,
        "evaluator": cfg.evaluator.name,
    }


def trial_specs(cfg: DictConfig, task_dirs: list[tuple[str, Path]], run_id: str = "") -> list[TrialSpec]:
    uses_harness = getattr(get_class(cfg.regime._target_), "uses_harness", True)
    # Resolved once and copied per trial: resolving a config parses its interpolations (~1 ms a trial, measured).
    model, regime, sandbox, evaluator = (plain_dict(c) for c in (cfg.model, cfg.regime, cfg.sandbox, cfg.evaluator))
    harness = plain_dict(cfg.harness) if uses_harness else {}  # not part of a single-shot solve's key
    cell, named_families = cell_of(cfg), {k: v for k, v in families(cfg).items() if v}
    store_root, reuse = store_uri(cfg.store.root), "stale" if cfg.store.reuse == "stale" else bool(cfg.store.reuse)
    return [
        TrialSpec(
            task_dir=str(path),
            task_id=task_id,
            model=copy.deepcopy(model),
            harness=copy.deepcopy(harness),
            regime=copy.deepcopy(regime),
            sandbox=copy.deepcopy(sandbox),
            evaluator=copy.deepcopy(evaluator),
            seed=int(seed),
            store_root=store_root,
            node_cache=cfg.paths.node_cache,
            scratch_root=cfg.paths.scratch,
            reuse=reuse,
            evaluate=bool(cfg.stages.evaluate),
            attribution_below=cfg.attribution.below,
            run_id=run_id,
            cell={**cell, "seed": str(seed), **named_families},
        )
        for task_id, path in task_dirs
        for seed in cfg.seeds
    ]


@dataclass
class Cell:
    """One cell of a run (one Hydra job): its config, its trials, and where its results go."""

    cfg: DictConfig
    out_dir: Path
    name: str
    group: str | None
    specs: list[TrialSpec]
    task_errors: list[TrialRecord]
    command: Command = field(default_factory=Command)
    tracker: Any = None
    records: list[TrialRecord] = field(default_factory=list)


def prepare(
    cfg: DictConfig, out_dir: Path, name: str = "run", group: str | None = None, command: Command | None = None
) -> Cell:
    """Select the tasks, check what must hold before any trial starts, and build the cell's trial specs."""
    command = command or Command()
    command.budget_for(cfg)  # cells that disagree on the command's budget cannot start
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
    specs = trial_specs(cfg, [(t.id, t.dir) for t in selection.tasks], command.run_id)
    for spec in specs:
        spec.cell["run"] = name  # routes each streamed record back to its cell
    cell_keys = {**cell_of(cfg), "run": name}
    # A task that did not load is one planned trial per seed, each counted in the denominators.
    errors = [
        TrialRecord.unrun(e.task_id, {**cell_keys, "seed": str(seed)}, TrialStatus.TASK_ERROR, str(e))
        for e in selection.errors
        for seed in cfg.seeds
    ]
    for e in selection.errors:
        print(f"task error: {e}", file=sys.stderr)
    return Cell(cfg, out_dir, name, group, specs, errors, command)


def run_cells(cells: list[Cell]) -> list[dict[str, Any]]:
    """Run the trials of every cell in one executor pool, charged to the command's one budget, streaming
    each record to its cell's tracker; then score and write each cell's tables."""
    executors = {json.dumps(OmegaConf.to_container(c.cfg.executor, resolve=True), sort_keys=True) for c in cells}
    if len(executors) > 1:
        raise ConfigError(
            "executor settings differ between the cells of one pool",
            "set executor.* outside the swept overrides, or run the cells one after another with hydra/launcher=basic",
        )
    by_name = {c.name: c for c in cells}
    for c in cells:
        c.tracker = build(c.cfg.tracker)
        c.tracker.start(c.name, c.group, OmegaConf.to_container(c.cfg, resolve=True), c.out_dir)
    try:
        specs = [asdict(s) for c in cells for s in c.specs]
        progress = Progress({c.name: len(c.specs) for c in cells})

        def on_result(record: TrialRecord) -> None:
            progress.finished(record)
            cell = by_name[record.cell["run"]]
            cell.records.append(record)
            cell.tracker.log_trial(record)

        budget = cells[0].command.budget_for(cells[0].cfg)
        try:
            records = build(cells[0].cfg.executor).run(specs, on_result, budget, progress.started) if specs else []
        finally:
            progress.close()
        skipped = sum(r.status == TrialStatus.SKIPPED for r in records)
        if skipped:
            print(
                f"cost budget of ${budget.max_cost_usd:.2f} reached (spent ${budget.spent_usd:.4f}): "
                f"{skipped} trials were not started",
                file=sys.stderr,
            )
        return [_conclude(c) for c in cells]
    except BaseException as e:
        for c in cells:
            if c.tracker is not None:
                c.tracker.finish(None, e)
        raise


def _conclude(cell: Cell) -> dict[str, Any]:
    records = cell.records + cell.task_errors
    tasks, ledger = task_frame(records), ledger_frame(records)
    tables = {
        "verdicts": verdict_frame(records),
        "tasks": tasks,
        "summary": summary_frame(tasks),
        "breakdowns": breakdown_frame(tasks),
        "adjusted": adjusted_frame(tasks),
        "ledger": ledger,
        "denominators": denominators_frame(tasks, ledger),
    }
    tables["noise"] = noise_frame(tables["verdicts"])  # empty unless evaluator.judge_samples > 1
    for name, frame in tables.items():
        frame.write_parquet(cell.out_dir / f"{name}.parquet")
    store = Store(store_uri(cell.cfg.store.root))
    (cell.out_dir / STORE_FILE).write_text(store.uri + "\n")  # Hydra's saved config keeps ${oc.env:…} unresolved
    write_report(cell.out_dir, tables, records, store, title=f"codesign · {cell.name}")
    print(format_summary(tables["summary"]))
    print(format_denominators(tables["denominators"]))
    if tables["noise"].height:
        print(format_noise(tables["noise"]))
    left_out = format_errors(tasks)
    if left_out:
        print("left out of the scores:\n" + left_out, file=sys.stderr)
    print(f"results: {cell.out_dir} (report.html)")
    cell.tracker.finish(tables)
    cell.tracker = None
    return tables


# While the pooled launcher (hydra_plugins/codesign_launcher) prepares a grid, each Hydra job hands its
# prepared cell back instead of running it; the launcher then runs every cell's trials in one pool.
_POOLING: contextvars.ContextVar[Command | None] = contextvars.ContextVar("codesign_pooling", default=None)
# Under a launcher that runs cells one after another, the cells of one sweep still share one Command.
_COMMANDS: dict[str, Command] = {}


@contextlib.contextmanager
def pooling(command: Command) -> Iterator[None]:
    token = _POOLING.set(command)
    try:
        yield
    finally:
        _POOLING.reset(token)


def job(cfg: DictConfig, out_dir: Path, name: str, group: str | None, sweep: str | None) -> Any:
    """One Hydra job: prepare its cell, then run it — or, inside :func:`pooling`, return it to the launcher."""
    pooled = _POOLING.get()
    command = pooled or (_COMMANDS.setdefault(sweep, Command()) if sweep else Command())
    cell = prepare(cfg, out_dir, name, group, command)
    if pooled is not None:
        return cell
    tables = run_cells([cell])[0]
    check_something_ran([tables])
    return tables


def check_something_ran(tables: list[dict[str, Any]]) -> None:
    """Raise :class:`NothingRan` when no trial of these cells was solved (``ok`` or ``solved``)."""
    statuses = [s for t in tables for s in t["tasks"]["status"].to_list()]
    if not any(s in (TrialStatus.OK, TrialStatus.SOLVED) for s in statuses):
        counts = ", ".join(f"{statuses.count(s)} {s}" for s in sorted(set(statuses))) or "no trials"
        raise NothingRan(
            f"no trial could run ({counts})", "the reasons are listed above, under 'left out of the scores'"
        )


def run(
    cfg: DictConfig, out_dir: Path, run_name: str = "run", group: str | None = None, command: Command | None = None
) -> dict[str, Any]:
    """Run one cell over the selected tasks; write parquet tables to ``out_dir``; return the tables."""
    return run_cells([prepare(cfg, out_dir, run_name, group, command)])[0]
