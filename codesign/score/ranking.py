"""Ranking stability across a grid (the paper's appendices C and H), by Spearman's ρ.

Given the summaries of several cells, for a factor such as ``harness`` or ``evaluator``:
- ``models``: are the models ranked the same way under two levels of the factor? (one ρ per pair of
  levels: the evaluator-sensitivity question);
- ``levels``: do two models order the factor's levels the same way? (one ρ per pair of models: the
  harness-sensitivity question; −1 means the orderings reverse).
"""

from __future__ import annotations

from itertools import combinations

import polars as pl

FACTORS = ("harness", "evaluator", "regime")
CELL_FACTORS = ("model", "harness", "regime", "evaluator")


def spearman(a: list[float], b: list[float]) -> float | None:
    """Spearman's ρ (average ranks for ties); None for fewer than two items or a constant side."""
    if len(a) < 2:
        return None
    frame = pl.DataFrame({"a": a, "b": b}).select(pl.corr("a", "b", method="spearman"))
    rho = frame.item()
    return None if rho is None or rho != rho else float(rho)  # NaN: one side is constant


def rank_stability(summaries: pl.DataFrame, metric: str = "strict") -> pl.DataFrame:
    """``summaries``: rows of ``summary_frame`` for several cells. One row per comparison.

    Orderings are compared only between cells that agree on every other factor: in a model × harness ×
    evaluator grid, harnesses are compared once per evaluator (the ``context`` column names it), never with
    scores of different evaluators mixed in."""
    rows = []
    for factor in FACTORS:
        others = [f for f in CELL_FACTORS if f not in (factor, "model") and f in summaries.columns]
        frame = _single_shot_in_every_harness(summaries) if factor == "regime" else summaries
        for (track, *fixed), table in frame.group_by(["track", *others], maintain_order=True):
            levels, models = sorted(set(table[factor])), sorted(set(table["model"]))
            if len(levels) < 2 or len(models) < 2:
                continue
            context = ",".join(f"{k}={v}" for k, v in zip(others, fixed, strict=True))
            score = {(r["model"], r[factor]): r[metric] for r in table.iter_rows(named=True) if r[metric] is not None}
            for x, y in combinations(levels, 2):  # model rankings under two levels
                common = [m for m in models if (m, x) in score and (m, y) in score]
                rows.append(
                    {
                        "factor": factor,
                        "compare": "models",
                        "a": x,
                        "b": y,
                        "track": track,
                        "context": context,
                        "n": len(common),
                        "rho": spearman([score[m, x] for m in common], [score[m, y] for m in common]),
                    }
                )
            for m1, m2 in combinations(models, 2):  # level orderings of two models
                common = [lv for lv in levels if (m1, lv) in score and (m2, lv) in score]
                rows.append(
                    {
                        "factor": factor,
                        "compare": "levels",
                        "a": m1,
                        "b": m2,
                        "track": track,
                        "context": context,
                        "n": len(common),
                        "rho": spearman([score[m1, lv] for lv in common], [score[m2, lv] for lv in common]),
                    }
                )
    schema = {
        "factor": pl.String,
        "compare": pl.String,
        "a": pl.String,
        "b": pl.String,
        "track": pl.String,
        "context": pl.String,
        "n": pl.Int64,
        "rho": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema).sort(["factor", "compare", "track", "context", "a", "b"])


def _single_shot_in_every_harness(summaries: pl.DataFrame) -> pl.DataFrame:
    """A single-shot cell has no harness (``none``): for the regime comparison it stands beside every
    harness's agentic cells, so single-shot against agentic is compared once per harness."""
    if "harness" not in summaries.columns:
        return summaries
    harnesses = sorted(set(summaries["harness"]) - {"none"})
    alone = summaries.filter(pl.col("harness") == "none")
    if alone.is_empty() or not harnesses:
        return summaries
    copies = [alone.with_columns(pl.lit(h).alias("harness")) for h in harnesses]
    return pl.concat([summaries.filter(pl.col("harness") != "none"), *copies], how="vertical_relaxed")
