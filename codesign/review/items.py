"""What there is to review: one item per graded criterion of a stored evaluation, with its filters.

Items come from run folders, sweep folders or stores (as the report gathers them, each trial once). An item
is *disputed* when the graders of the same solve and criterion disagree (two evaluators, or the verifier
changed the judge's verdict). A stratified sample draws N items spread over kind × verdict in proportion
to their sizes (at least one from each stratum while N allows), reproducibly from a seed.
"""

from __future__ import annotations

import functools
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from codesign.errors import CodesignError
from codesign.report.collect import TRIAL, Collection
from codesign.score.metrics import CELL
from codesign.store import Store
from codesign.tasks.loader import Task, load_task

FILTERS = ("model", "harness", "regime", "evaluator", "task_id", "kind", "verdict", "grader")


def items_of(collection: Collection) -> pl.DataFrame:
    """One row per stored evaluation × criterion, in a stable order (cell, task, criterion), numbered ``item``."""
    verdicts = collection.verdicts
    if verdicts.is_empty():
        return pl.DataFrame()
    where = collection.tasks.select([*TRIAL, "run", "eval_key"]).filter(pl.col("eval_key").is_not_null())
    stores = {r.name: r.store or r.name for r in collection.runs}
    rows = verdicts.join(where, on=[*TRIAL, "run"], how="inner").with_columns(
        store=pl.col("run").replace_strict(stores, return_dtype=pl.String)
    )
    verdict_sets = rows.group_by("trial_key", "criterion_id").agg(
        pl.col("verdict").filter(pl.col("verdict") != "UNGRADED").n_unique().alias("_verdicts")
    )
    rows = rows.join(verdict_sets, on=["trial_key", "criterion_id"]).with_columns(
        disputed=(pl.col("_verdicts") > 1)
        | (pl.col("original_verdict").is_not_null() & (pl.col("original_verdict") != pl.col("verdict")))
    )
    keep = [
        *CELL,
        "seed",
        "task_id",
        "criterion_id",
        "kind",
        "verdict",
        "grader",
        "reason",
        "original_verdict",
        "refutation",
        "evidence_ids",
        "trial_key",
        "eval_key",
        "store",
        "disputed",
    ]
    return rows.select(keep).sort([*CELL, "task_id", "seed", "criterion_id"]).with_row_index("item")


@dataclass
class Query:
    """What the list shows: equality filters, disputed / not-yet-reviewed only, a stratified sample."""

    equals: dict[str, str] = field(default_factory=dict)
    disputed: bool = False
    unreviewed: bool = False
    sample: int | None = None
    seed: int = 0

    @classmethod
    def parse(cls, params: dict[str, str]) -> Query:
        equals = {k: v for k, v in params.items() if k in FILTERS and v}
        sample = params.get("sample", "")
        return cls(
            equals,
            params.get("disputed") == "1",
            params.get("unreviewed") == "1",
            int(sample) if sample.isdigit() and int(sample) > 0 else None,
            int(params["seed"]) if params.get("seed", "").isdigit() else 0,
        )

    def params(self) -> dict[str, str]:
        out = dict(self.equals)
        if self.disputed:
            out["disputed"] = "1"
        if self.unreviewed:
            out["unreviewed"] = "1"
        if self.sample:
            out |= {"sample": str(self.sample), "seed": str(self.seed)}
        return out

    def apply(self, items: pl.DataFrame, reviewed: set[int]) -> pl.DataFrame:
        shown = items
        for key, value in self.equals.items():
            shown = shown.filter(pl.col(key).cast(pl.String) == value)
        if self.disputed:
            shown = shown.filter(pl.col("disputed"))
        if self.sample:  # drawn before "not yet reviewed": the sample stays the same as labels are added
            shown = stratified_sample(shown, self.sample, self.seed)
        if self.unreviewed:
            shown = shown.filter(~pl.col("item").is_in(sorted(reviewed)))
        return shown


def stratified_sample(items: pl.DataFrame, n: int, seed: int) -> pl.DataFrame:
    """``n`` items spread over kind × verdict: proportional shares by largest remainder, at least one per
    stratum while ``n`` allows, each stratum sampled with its own seeded generator; in list order."""
    if n >= items.height:
        return items
    strata = {
        key: group["item"].to_list()
        for key, group in sorted(items.group_by("kind", "verdict"), key=lambda kv: tuple(map(str, kv[0])))
    }
    order = sorted(strata, key=lambda k: -len(strata[k]))
    share = dict.fromkeys(strata, 0)
    for key in order[:n]:  # one each, largest strata first, while n allows
        share[key] = 1
    left = n - sum(share.values())
    exact = {k: left * len(v) / items.height for k, v in strata.items()}
    for k in strata:
        share[k] += min(int(exact[k]), len(strata[k]) - share[k])
    remainder = sorted(strata, key=lambda k: (-(exact[k] - int(exact[k])), str(k)))
    while sum(share.values()) < n:
        for k in remainder:
            if sum(share.values()) < n and share[k] < len(strata[k]):
                share[k] += 1
    chosen: list[int] = []
    for i, (key, members) in enumerate(strata.items()):
        chosen += random.Random(f"{seed}:{i}:{key}").sample(members, share[key])
    return items.filter(pl.col("item").is_in(chosen))


class Evidence:
    """What one stored evaluation kept: its evidence items (by id) and its files, read from the store."""

    def __init__(self, store: Store, trial_key: str, eval_key: str):
        self.store, self.folder = store, f"trials/{trial_key}/evals/{eval_key}"
        stored = json.loads(store.read_bytes(f"{self.folder}/evaluation.json") or b"{}")
        self.items: dict[str, dict[str, Any]] = {e["id"]: e for e in stored.get("evidence", [])}
        solved = json.loads(store.read_bytes(f"trials/{trial_key}/solve.json") or b"{}")
        self.task_dir = (solved.get("spec") or {}).get("task_dir")

    def read(self, path: str) -> bytes | None:
        if not path or ".." in Path(path).parts or path.startswith("/"):
            return None
        return self.store.read_bytes(f"{self.folder}/{path}")

    @functools.cached_property
    def loaded_task(self) -> Task | None:
        """:meth:`task`, loaded once per evaluation (every view of its criteria shows the same task)."""
        return self.task()

    def task(self) -> Task | None:
        """The task as the solver got it, when its folder is on this machine (the request, criteria' text)."""
        if self.task_dir and Path(self.task_dir, "task.yaml").is_file():
            try:
                return load_task(Path(self.task_dir))
            except CodesignError:  # a task folder edited since: the review still shows the verdicts and evidence
                return None
        return None
