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
from omegaconf import OmegaConf

from codesign.errors import ConfigError
from codesign.score import labels as stored_labels
from codesign.score.labels import SCHEMA as LABEL_SCHEMA
from codesign.score.metrics import CELL, task_frame

TRIAL = [*CELL, "seed", "task_id"]
STORE_FILE = "store.txt"  # in a run folder: the store it used, resolved (the runner writes it)
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
        """The store the run used, where its evidence lives: as the run resolved it (``store.txt``), else from
        its Hydra config, whose ``${oc.env:CODESIGN_STORE,…}`` Hydra keeps unresolved (resolved here, now)."""
        recorded = self.path / STORE_FILE
        if recorded.is_file():
            return recorded.read_text().strip() or None
        try:
            config = OmegaConf.load(self.path / ".hydra" / "config.yaml")
            root = OmegaConf.select(config, "store.root", throw_on_resolution_failure=False)
        except (OSError, ValueError, yaml.YAMLError):
            return None
        return None if root is None else str(root)


@dataclass
class Collection:
    runs: list[Run]
    tasks: pl.DataFrame  # one row per kept trial, with the run it came from (``run``)
    verdicts: pl.DataFrame  # the kept trials' verdicts
    duplicates: int = 0  # trial rows dropped because another run had the same trial
    used: list[Run] = field(default_factory=list)  # the runs at least one kept trial came from
    labels: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=LABEL_SCHEMA))  # people's verdicts

    def __post_init__(self) -> None:
        if self.labels.height and self.tasks.height:  # only labels on the kept trials' solves count
            self.labels = self.labels.join(self.tasks.select("trial_key").unique(), on="trial_key", how="semi")


def find_runs(paths: list[Path]) -> list[Run]:
    runs: list[Run] = []
    for path in paths:
        path = Path(path)
        found = [path / "tasks.parquet"] if (path / "tasks.parquet").is_file() else sorted(path.rglob("tasks.parquet"))
        if not found:
            raise ConfigError(
                f"no codesign run under {path} (no tasks.parquet in it or below it)",
                "pass run folders (outputs/runs/<date>/<time>) or multirun/sweep folders",
            )
        runs += [Run(p.parent.resolve(), p.stat().st_mtime) for p in found]
    unique = {r.path: r for r in runs}
    return sorted(unique.values(), key=lambda r: (r.finished, r.name))


def _tasks_of(run: Run) -> pl.DataFrame:
    """A run's trials, refused with the run's name when another codesign version wrote them."""
    frame = pl.read_parquet(run.path / "tasks.parquet")
    missing = sorted(set(task_frame([]).columns) - set(frame.columns))
    if missing:
        raise ConfigError(
            f"{run.path / 'tasks.parquet'} was written by another version of codesign: it lacks {', '.join(missing)}",
            "run the same command again with this version (finished solves are reused from the store), "
            "or leave that run out of the report",
        )
    return frame.with_columns(run=pl.lit(run.name))


def collect(runs: list[Run]) -> Collection:
    frames = [_tasks_of(r) for r in runs]
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
    used = [r for r in runs if r.name in set(kept["run"])]
    return Collection(runs, kept, verdicts, every.height - kept.height, used, labels_of(used))


def labels_of(runs: list[Run]) -> pl.DataFrame:
    """The labels in the stores the runs used (each store read once; a store that is gone has none)."""
    from codesign.store import Store, is_remote, local_path

    stores = dict.fromkeys(r.store for r in runs if r.store)
    frames = [
        stored_labels.load(Store(uri))
        for uri in stores
        if uri and (is_remote(uri) or (local_path(uri) / "labels").is_dir())
    ]
    return pl.concat(frames).unique() if frames else pl.DataFrame(schema=LABEL_SCHEMA)


def from_store(uri: str) -> Collection:
    """Every stored trial of a store (local or object storage), one row per solve × evaluation, as a
    collection of one pseudo-run named by the store's URI (a solve not graded yet is ``solved``)."""
    import json

    from codesign._types import CriterionVerdict, Evaluation, EvidenceItem, Telemetry, TrialRecord
    from codesign.score.metrics import task_frame, verdict_frame
    from codesign.store import Store, store_uri

    store = Store(store_uri(uri))
    records: list[TrialRecord] = []
    for solve_path in store.glob("trials/*/solve.json"):
        solved = json.loads(store.read_bytes(solve_path) or b"{}")
        key = solve_path.split("/")[1]
        spec, task = solved.get("spec", {}), solved.get("task") or {}
        base = {k: str(v) for k, v in (spec.get("cell") or {}).items() if k != "run"}
        telemetry = Telemetry(**solved["telemetry"]) if solved.get("telemetry") else None
        labels, track = task.get("labels") or {}, task.get("track") or "?"
        evaluations = store.glob(f"trials/{key}/evals/*/evaluation.json")
        if not evaluations:
            records.append(
                TrialRecord(key, None, spec.get("task_id", "?"), track, base, labels, "solved", telemetry=telemetry)
            )
        for eval_path in evaluations:
            stored = json.loads(store.read_bytes(eval_path) or b"{}")
            evaluation = Evaluation(
                stored["status"],
                [CriterionVerdict(**v) for v in stored["verdicts"]],
                [EvidenceItem(**e) for e in stored["evidence"]],
                stored.get("message", ""),
                stored.get("wall_s", 0.0),
                stored.get("telemetry", {}),
            )
            cell = {**base, "evaluator": str((stored.get("evaluator") or {}).get("name", base.get("evaluator")))}
            records.append(
                TrialRecord(
                    key,
                    eval_path.split("/")[3],
                    spec.get("task_id", "?"),
                    track,
                    cell,
                    labels,
                    evaluation.status,
                    telemetry=telemetry,
                    evaluation=evaluation,
                )
            )
    if not records:
        raise ConfigError(f"no stored trials in {uri}", "check the store's URI (store.root / $CODESIGN_STORE)")
    run = Run(Path(uri) if not store.remote else Path(uri.replace("://", "/")), 0.0)
    tasks = task_frame(records).with_columns(run=pl.lit(run.name))
    verdicts = verdict_frame(records).with_columns(run=pl.lit(run.name))
    return Collection([run], tasks, verdicts, 0, [run], stored_labels.load(store))


def keep_only(collection: Collection, filters: list[str]) -> Collection:
    """``key=value`` filters on the trials' columns (model, harness, regime, evaluator, seed, task_id, track,
    modality, …); several values of one key as ``key=a,b``."""
    tasks, verdicts = collection.tasks, collection.verdicts
    for f in filters:
        key, sep, value = f.partition("=")
        if not sep or key not in tasks.columns:
            raise ConfigError(
                f"filter {f!r}: expected key=value with key one of the trial columns",
                "e.g. --filter model=kimi-k3 --filter track=RE (columns: "
                + ", ".join(c for c in (*TRIAL, "track", "modality", "status"))
                + ")",
            )
        tasks = tasks.filter(pl.col(key).cast(pl.String).is_in(value.split(",")))
    if verdicts.height:
        verdicts = verdicts.join(tasks.select([*TRIAL, "run"]), on=[*TRIAL, "run"], how="semi")
    used = [r for r in collection.runs if r.name in set(tasks["run"])]
    return Collection(collection.runs, tasks, verdicts, collection.duplicates, used, collection.labels)


def merge(collections: list[Collection]) -> Collection:
    """Several collections as one (runs and stores together), each trial still kept once."""
    if len(collections) == 1:
        return collections[0]
    runs = [r for c in collections for r in c.runs]
    tasks = pl.concat([c.tasks for c in collections], how="diagonal_relaxed")
    kept = tasks.unique(subset=TRIAL, keep="first", maintain_order=True)
    frames = [c.verdicts for c in collections if c.verdicts.height]
    verdicts = pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()
    if verdicts.height:
        verdicts = verdicts.join(kept.select([*TRIAL, "run"]), on=[*TRIAL, "run"], how="semi")
    dropped = sum(c.duplicates for c in collections) + tasks.height - kept.height
    labels = pl.concat([c.labels for c in collections]).unique()
    return Collection(runs, kept, verdicts, dropped, [r for r in runs if r.name in set(kept["run"])], labels)
