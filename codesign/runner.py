"""The whole pipeline for one Hydra job: tasks → solve → evaluate → score → track. Deliberately tiny:
each stage lives in its own package and is chosen by config."""

from __future__ import annotations

import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from hydra.utils import get_class
from omegaconf import DictConfig, OmegaConf

from codesign._types import TrialRecord, TrialStatus
from codesign.build import build, preflight
from codesign.errors import ConfigError
from codesign.execute import Budget
from codesign.score import breakdown_frame, format_summary, summary_frame, task_frame, verdict_frame
from codesign.tasks.select import select_tasks
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
            cell={**cell, "seed": str(seed)},
        )
        for task_id, path in task_dirs
        for seed in cfg.seeds
    ]


def _progress(total: int):
    done = 0
    start = time.monotonic()

    def report(record: TrialRecord) -> None:
        nonlocal done
        done += 1
        verdicts = record.evaluation.verdicts if record.evaluation else []
        n_pass = sum(v.verdict == "PASS" for v in verdicts)
        what = (
            f"{n_pass}/{len(verdicts)} PASS"
            if record.status == TrialStatus.OK
            else f"{record.status}: {record.message}"
        )
        reused = "+".join(k for k, v in record.cached.items() if v)
        print(
            f"[{done}/{total} {time.monotonic() - start:5.1f}s] {record.task_id} {what}"
            + (f" (reused {reused})" if reused else ""),
            flush=True,
        )

    return report


def run(cfg: DictConfig, out_dir: Path, run_name: str = "run", group: str | None = None) -> dict[str, Any]:
    """Run one cell over the selected tasks; write parquet tables to ``out_dir``; return the tables."""
    selection = select_tasks(cfg.tasks)
    if not selection.tasks and not selection.errors:
        raise ConfigError(
            f"no task selected under {selection.root}",
            "check tasks.root, tasks.include and the filters (tracks, modalities, edit types)",
        )
    preflight(cfg)
    specs = trial_specs(cfg, [(t.id, t.dir) for t in selection.tasks])
    task_errors = [
        TrialRecord(
            "", None, e.task_id, "?", specs[0].cell if specs else {}, {}, TrialStatus.TASK_ERROR.value, message=str(e)
        )
        for e in selection.errors
    ]
    for e in selection.errors:
        print(f"task error: {e}", file=sys.stderr)
    tracker = build(cfg.tracker)
    tracker.start(run_name, group, OmegaConf.to_container(cfg, resolve=True), out_dir)
    try:
        report = _progress(len(specs))

        def on_result(record: TrialRecord) -> None:
            report(record)
            tracker.log_trial(record)

        budget = Budget(cfg.budget.max_cost_usd)
        records = build(cfg.executor).run([asdict(s) for s in specs], on_result, budget) if specs else []
        skipped = sum(r.status == TrialStatus.SKIPPED for r in records)
        if skipped:
            print(f"cost budget of ${budget.max_cost_usd:.2f} reached (spent ${budget.spent_usd:.4f}): "
                  f"{skipped} trials were not started", file=sys.stderr)  # fmt: skip
        records = records + task_errors
        tasks = task_frame(records)
        tables = {"verdicts": verdict_frame(records), "tasks": tasks, "summary": summary_frame(tasks),
                  "breakdowns": breakdown_frame(tasks)}  # fmt: skip
        for name, frame in tables.items():
            frame.write_parquet(out_dir / f"{name}.parquet")
        print(format_summary(tables["summary"]))
        print(f"results: {out_dir}")
    except BaseException as e:
        tracker.finish(None, e)
        raise
    tracker.finish(tables)
    return tables
