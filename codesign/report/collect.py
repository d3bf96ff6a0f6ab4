"""Gather the tables of many runs into one set of trials: any mix of run folders and multirun/sweep folders.

A run folder is one with ``tasks.parquet`` (what every codesign run writes); a multirun or sweep folder
holds several. One trial is one cell (model, harness, regime, evaluator) × task × seed: when runs
overlap, the trial is kept once — a finished one before an error or a skip, then the latest run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import yaml

from codesign.errors import ConfigError
from codesign.score.metrics import CELL

TRIAL = [*CELL, "seed", "task_id"]
_STATUS_RANK = {"ok": 0, "solved": 1, "aborted": 2}  # lower wins; errors and skips after


@dataclass
class Run:
    path: Path
    finished: float  # when its tables were written (later runs win ties)

    @property
    def name(self) -> str:
        return str(self.path)

    @property
    def report(self) -> Path | None:
        page = self.path / "report.html"
        return page if page.is_file() else None

    @property
    def store(self) -> str | None:
        """The store the run used (from its Hydra config), where its evidence lives."""
        config = self.path / ".hydra" / "config.yaml"
        try:
            return str(yaml.safe_load(config.read_text())["store"]["root"])
        except (OSError, KeyError, TypeError, yaml.YAMLError):
            return None


@dataclass
class Collection:
    runs: list[Run]
    tasks: pl.DataFrame  # one row per kept trial, with the run it came from (``run``)
    verdicts: pl.DataFrame  # the kept trials' verdicts
    duplicates: int = 0  # trial rows dropped because another run had the same trial
    used: list[Run] = field(default_factory=list)  # the runs at least one kept trial came from


def find_runs(paths: list[Path]) -> list[Run]:
    runs: list[Run] = []
    for path in paths:
        path = Path(path)
        found = [path / "tasks.parquet"] if (path / "tasks.parquet").is_file() else sorted(path.rglob("tasks.parquet"))
        if not found:
            raise ConfigError(f"no codesign run under {path} (no tasks.parquet in it or below it)",
                              "pass run folders (outputs/runs/<date>/<time>) or multirun/sweep folders")  # fmt: skip
        runs += [Run(p.parent.resolve(), p.stat().st_mtime) for p in found]
    unique = {r.path: r for r in runs}
    return sorted(unique.values(), key=lambda r: (r.finished, r.name))


def collect(runs: list[Run]) -> Collection:
    frames = [pl.read_parquet(r.path / "tasks.parquet").with_columns(run=pl.lit(r.name)) for r in runs]
    verdict_frames = [
        pl.read_parquet(r.path / "verdicts.parquet").with_columns(run=pl.lit(r.name))
        for r in runs
        if (r.path / "verdicts.parquet").is_file()
    ]
    order = {r.name: i for i, r in enumerate(runs)}
    every = pl.concat(frames, how="diagonal_relaxed")
    ranked = every.with_columns(
        _rank=pl.col("status").replace_strict(_STATUS_RANK, default=9, return_dtype=pl.Int64),
        _order=pl.col("run").replace_strict(order, return_dtype=pl.Int64),
    )
    kept = (
        ranked.sort(["_rank", "_order"], descending=[False, True])
        .unique(subset=TRIAL, keep="first", maintain_order=True)
        .drop("_rank", "_order")
        .sort([*CELL, "task_id", "seed"])
    )
    verdicts = pl.concat(verdict_frames, how="diagonal_relaxed") if verdict_frames else pl.DataFrame()
    if verdicts.height:
        verdicts = verdicts.join(kept.select([*TRIAL, "run"]), on=[*TRIAL, "run"], how="semi")
    used_names = set(kept["run"])
    return Collection(runs, kept, verdicts, every.height - kept.height, [r for r in runs if r.name in used_names])
