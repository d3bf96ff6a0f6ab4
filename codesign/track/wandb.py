"""Weights & Biases: one run per Hydra job (cell), grouped by sweep; offline when there is no key.

Offline runs land under ``<run dir>/wandb`` and can be uploaded later with ``wandb sync``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codesign._types import TrialRecord


def _table(frame: Any) -> Any:
    import wandb

    # W&B tables take scalars: lists (evidence ids) become comma-separated text.
    rows = [[", ".join(v) if isinstance(v, list) else v for v in row] for row in frame.rows()]
    return wandb.Table(columns=frame.columns, data=rows)


@dataclass
class WandbTracker:
    project: str = "codesign"
    entity: str | None = None
    mode: str = "auto"  # auto: online when WANDB_API_KEY is set, else offline; or online / offline
    job_type: str = "solve+evaluate"
    tags: list[str] = field(default_factory=list)
    _run: Any = None
    _out: Path | None = None
    _done: int = 0

    def start(self, run_name: str, group: str | None, config: dict[str, Any], out_dir: Path) -> None:
        import wandb

        mode = self.mode if self.mode != "auto" else ("online" if os.environ.get("WANDB_API_KEY") else "offline")
        wandb_dir = self._out = Path(out_dir).resolve()  # the W&B service process has its own cwd
        os.environ.setdefault("WANDB_CACHE_DIR", str(wandb_dir / "wandb" / ".cache"))
        os.environ.setdefault("WANDB_SILENT", "true")
        self._run = wandb.init(
            project=self.project,
            entity=self.entity,
            name=run_name,
            group=group,
            job_type=self.job_type,
            config=config,
            dir=str(wandb_dir),
            mode=mode,
            tags=self.tags,
            settings=wandb.Settings(console="off", x_disable_stats=True),
            reinit="create_new",  # a pooled sweep keeps one run per cell open at once
        )

    def log_trial(self, record: TrialRecord) -> None:
        self._done += 1
        t = record.telemetry
        row: dict[str, Any] = {"trials/done": self._done}
        if t is not None:
            row |= {
                "trial/turns": t.turns,
                "trial/tool_calls": sum(t.tool_calls.values()),
                "trial/input_tokens": t.input_tokens,
                "trial/output_tokens": t.output_tokens,
                "trial/cost_usd": t.cost_usd,
                "trial/solve_s": t.wall_s,
            }
        if record.evaluation is not None:  # judge and verifier effort, like the solver's
            row |= {f"eval/{k}": v for k, v in record.evaluation.telemetry.items() if isinstance(v, int | float)}
        self._run.log(row)

    def finish(self, tables: dict[str, Any] | None, error: BaseException | None = None) -> None:
        if self._run is None:
            return
        try:
            if tables is not None:
                for row in tables["summary"].iter_rows(named=True):
                    prefix = f"{row['track']}"
                    for metric in ("strict", "graded", "full_pass", "zero_pass"):
                        if row[metric] is not None:
                            self._run.summary[f"{prefix}/{metric}"] = row[metric]
                    self._run.summary[f"{prefix}/tasks"] = row["tasks"]
                    self._run.summary[f"{prefix}/errors"] = row["errors"]
                self._run.log(
                    {
                        "tasks": _table(tables["tasks"]),
                        "verdicts": _table(tables["verdicts"]),
                        "summary": _table(tables["summary"]),
                        "breakdowns": _table(tables["breakdowns"]),
                        "adjusted": _table(tables["adjusted"]),
                    }
                )
                self._log_results()
        finally:
            self._run.finish(exit_code=1 if error is not None else 0)
            self._run = None

    def _log_results(self) -> None:
        """The run's parquet tables as one artifact, so a W&B run carries everything needed to re-score."""
        import wandb

        names = (
            "verdicts.parquet",
            "tasks.parquet",
            "summary.parquet",
            "breakdowns.parquet",
            "adjusted.parquet",
            "report.html",
        )
        files = [self._out / name for name in names] if self._out else []
        files = [f for f in files if f.is_file()]
        if files:
            artifact = wandb.Artifact(f"results-{self._run.id}", type="results")
            for f in files:
                artifact.add_file(str(f))
            self._run.log_artifact(artifact)
