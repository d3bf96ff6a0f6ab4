"""Paired comparison of two cells over the tasks both scored: per task, each cell's score averaged over its
repeats; the mean paired difference A − B in Strict, Graded and Full-Pass with a paired bootstrap 95 % interval
(tasks resampled with replacement), an exact two-sided sign test and a two-sided paired permutation test
(every sign flip enumerated up to 2^20 differences, else 20,000 random flips with a fixed seed), per track and
combined; and the tasks where the two differ most. Tasks only one cell scored are counted and named, never
compared."""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections.abc import Sequence

import polars as pl

from codesign._types import TrialStatus
from codesign.errors import ConfigError
from codesign.score.metrics import CELL

METRICS = ("strict", "graded", "full_pass")
BOOTSTRAP_RESAMPLES, PERMUTATIONS, SEED = 10_000, 20_000, 0
EXACT_UP_TO = 20  # nonzero differences whose 2^n sign flips are all enumerated


def parse_cell(text: str) -> dict[str, str]:
    """``model=kimi-k3,harness=native`` (any of the cell's columns) → {column: value}."""
    pairs = [part.split("=", 1) for part in text.split(",") if part]
    if not pairs or any(len(p) != 2 or p[0] not in CELL for p in pairs):
        raise ConfigError(f"--compare cell {text!r} is not KEY=VALUE[,KEY=VALUE] over {', '.join(CELL)}",
                          "e.g. --compare model=kimi-k3 model=glm-5")  # fmt: skip
    return {k: v for k, v in pairs}


def _one_cell(tasks: pl.DataFrame, wanted: dict[str, str]) -> tuple[dict[str, str], pl.DataFrame]:
    rows = tasks.filter(pl.all_horizontal([pl.col(k) == v for k, v in wanted.items()]))
    cells = rows.select(CELL).unique().sort(CELL)
    if cells.height != 1:
        found = "; ".join(" ".join(f"{c}={r[c]}" for c in CELL) for r in cells.iter_rows(named=True)) or "none"
        raise ConfigError(f"--compare {wanted} matches {cells.height} cells ({found})",
                          "name more of the cell (model, harness, regime, evaluator) so it matches one")  # fmt: skip
    return cells.row(0, named=True), rows


def per_task(rows: pl.DataFrame) -> pl.DataFrame:
    """Each scored task's metrics, averaged over its repeats."""
    scored = rows.filter(pl.col("status") == TrialStatus.OK.value)
    return scored.group_by("task_id", "track").agg(
        strict=pl.col("strict").mean(), graded=pl.col("graded").mean(),
        full_pass=pl.col("full_pass").cast(pl.Float64).mean(), repeats=pl.len(),
    )  # fmt: skip


def sign_test(differences: Sequence[float]) -> float | None:
    """Exact two-sided sign test (ties left out); None without a nonzero difference."""
    plus = sum(d > 0 for d in differences)
    n = plus + sum(d < 0 for d in differences)
    if n == 0:
        return None
    k = min(plus, n - plus)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def permutation_test(differences: Sequence[float], seed: int = SEED) -> float | None:
    """Two-sided paired permutation test of the mean difference (random sign flips); None without a nonzero
    difference. Exact (every flip) up to ``EXACT_UP_TO`` nonzero differences."""
    nonzero = [d for d in differences if d != 0]
    if not nonzero:
        return None
    observed = abs(sum(nonzero)) - 1e-12  # flips as extreme as the data, floating error aside
    if len(nonzero) <= EXACT_UP_TO:
        flips = itertools.product((1, -1), repeat=len(nonzero))
        hits = sum(abs(sum(s * d for s, d in zip(signs, nonzero, strict=True))) >= observed for signs in flips)
        return hits / 2 ** len(nonzero)
    rng = random.Random(seed)
    hits = sum(abs(sum(d if rng.random() < 0.5 else -d for d in nonzero)) >= observed for _ in range(PERMUTATIONS))
    return (hits + 1) / (PERMUTATIONS + 1)


def bootstrap(differences: Sequence[float], seed: int = SEED) -> tuple[float, float]:
    """Percentile 95 % interval of the mean difference, tasks resampled with replacement."""
    rng = random.Random(seed)
    n = len(differences)
    means = sorted(statistics.fmean(rng.choices(differences, k=n)) for _ in range(BOOTSTRAP_RESAMPLES))
    return means[int(0.025 * BOOTSTRAP_RESAMPLES)], means[int(0.975 * BOOTSTRAP_RESAMPLES) - 1]


def compare(
    tasks: pl.DataFrame, a: dict[str, str], b: dict[str, str], top: int = 10
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the comparison per track and metric, the tasks that differ most in strict)."""
    cell_a, rows_a = _one_cell(tasks, a)
    cell_b, rows_b = _one_cell(tasks, b)
    if cell_a == cell_b:
        raise ConfigError("--compare names the same cell twice", "name two different cells")
    ta, tb = per_task(rows_a), per_task(rows_b)
    both = ta.join(tb, on=["task_id", "track"], suffix="_b")
    only_a = sorted(set(ta["task_id"]) - set(tb["task_id"]))
    only_b = sorted(set(tb["task_id"]) - set(ta["task_id"]))
    label = lambda c: " · ".join(c[k] for k in CELL)  # noqa: E731
    rows = []
    for track in ("ME", "RE", "ALL"):
        part = both if track == "ALL" else both.filter(pl.col("track") == track)
        for metric in METRICS:
            d = (part[metric] - part[f"{metric}_b"]).to_list() if part.height else []
            lo, hi = bootstrap(d) if d else (None, None)
            rows.append({
                "a": label(cell_a), "b": label(cell_b), "track": track, "metric": metric, "tasks": len(d),
                "mean_a": part[metric].mean() if d else None, "mean_b": part[f"{metric}_b"].mean() if d else None,
                "difference": statistics.fmean(d) if d else None, "ci_lo": lo, "ci_hi": hi,
                "a_better": sum(x > 0 for x in d), "b_better": sum(x < 0 for x in d), "ties": sum(x == 0 for x in d),
                "sign_p": sign_test(d), "permutation_p": permutation_test(d),
                "only_a": len(only_a) if track == "ALL" else None, "only_b": len(only_b) if track == "ALL" else None,
            })  # fmt: skip
    summary = pl.DataFrame(rows, infer_schema_length=None)
    most = (
        both.with_columns(difference=pl.col("strict") - pl.col("strict_b"))
        .filter(pl.col("difference") != 0)
        .with_columns(size=pl.col("difference").abs())
        .sort(["size", "task_id"], descending=[True, False])
        .head(top)
        .select("task_id", "track", pl.col("strict").alias("strict_a"), "strict_b", "difference")
    )
    unpaired = pl.DataFrame({"task_id": only_a + only_b, "track": None, "strict_a": None, "strict_b": None,
                             "difference": None, "scored_by": ["a only"] * len(only_a) + ["b only"] * len(only_b)},
                            schema_overrides={"track": pl.String, "strict_a": pl.Float64, "strict_b": pl.Float64,
                                              "difference": pl.Float64})  # fmt: skip
    return summary, pl.concat([most.with_columns(scored_by=pl.lit("both")), unpaired], how="vertical_relaxed")
