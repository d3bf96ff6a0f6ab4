"""The paper's tables from the trials of many runs (task-normalized, as the per-run tables are)."""

from __future__ import annotations

import functools

import polars as pl

from codesign._types import TOOL_KINDS
from codesign.score.agreement import alpha as agreement_alpha
from codesign.score.agreement import pairs as agreement_pairs
from codesign.score.agreement import ratings
from codesign.score.ledger import criteria_of, denominators_frame
from codesign.score.metrics import CELL, FAMILIES, NOT_THE_SOLVER, adjusted_frame, breakdown_frame, summary_frame
from codesign.score.ranking import FACTORS, rank_stability

TRACKS = {"ME": 0, "RE": 1, "ALL": 2}


def _both_tracks(tasks: pl.DataFrame) -> pl.DataFrame:
    return pl.concat([tasks.filter(pl.col("track").is_in(["ME", "RE"])), tasks.with_columns(track=pl.lit("ALL"))])


def main_table(tasks: pl.DataFrame) -> pl.DataFrame:
    """The paper's Table 2, per cell × track: Strict, Graded, Full-Pass (95 % bootstrap interval over tasks,
    spread over repeats), telemetry of the solves (median turns, mean tool calls by kind, tokens, cost, wall
    time) and how many trials were planned, scored and left out (errors, grading errors, aborted, capped,
    skipped)."""
    solved = pl.col("exit_status").is_not_null()
    telemetry = (
        _both_tracks(tasks)
        .group_by([*CELL, "track"])
        .agg(
            trials=pl.len(),
            **{f: pl.col(f).drop_nulls().first() for f in FAMILIES if f in tasks.columns},
            turns_median=pl.col("turns").filter(solved).median(),
            tool_calls=pl.col("tool_calls").filter(solved).mean(),
            **{f"tools_{k}": pl.col(f"tools_{k}").filter(solved).mean() for k in TOOL_KINDS},
            input_tokens=pl.col("input_tokens").filter(solved).mean(),
            output_tokens=pl.col("output_tokens").filter(solved).mean(),
            cost_usd=pl.col("cost_usd").sum(),
            solve_s_median=pl.col("solve_s").filter(solved).median(),
            eval_s_median=pl.col("eval_s").median(),
        )
    )
    table = summary_frame(tasks).join(telemetry, on=[*CELL, "track"], how="left")
    return _by_track(table)


def _by_track(frame: pl.DataFrame, first: list[str] | None = None) -> pl.DataFrame:
    keys = [c for c in (first or CELL) if c in frame.columns]
    order = pl.col("track").replace_strict(TRACKS, default=9, return_dtype=pl.Int64)
    return frame.with_columns(_t=order).sort([*keys, "_t"]).drop("_t")


def denominators(tasks: pl.DataFrame, verdicts: pl.DataFrame) -> pl.DataFrame:
    """Per cell: trials planned, scored and each unscored bucket; criteria by grader (codesign.score.ledger)."""
    return denominators_frame(tasks, criteria_of(tasks, verdicts))


def breakdowns(tasks: pl.DataFrame) -> pl.DataFrame:
    """Modality (ME), edit scope (RE: 1–2 vs 3–4 edit types), capability (both), with zero-pass rates."""
    return breakdown_frame(tasks)


def sensitivity(main: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """When runs differ in harness, evaluator or regime: (scores side by side with the largest absolute shift
    per model and track, Spearman ρ of the model rankings between each pair of levels)."""
    rows = []
    for factor in FACTORS:
        levels = sorted(set(main[factor]))
        if len(levels) < 2:
            continue
        others = [f for f in CELL if f not in (factor, "model")]
        for key, group in main.group_by(["model", "track", *others], maintain_order=True):
            score = {r[factor]: r["strict"] for r in group.iter_rows(named=True) if r["strict"] is not None}
            if len(score) < 2:
                continue
            context = ",".join(f"{k}={v}" for k, v in zip(others, key[2:], strict=True))
            shift = max(score.values()) - min(score.values())
            rows.append(
                {
                    "factor": factor,
                    "model": key[0],
                    "track": key[1],
                    "context": context,
                    "scores": " · ".join(f"{lv} {score[lv]:.3f}" for lv in levels if lv in score),
                    "largest_shift": shift,
                }
            )
    schema = {
        "factor": pl.String,
        "model": pl.String,
        "track": pl.String,
        "context": pl.String,
        "scores": pl.String,
        "largest_shift": pl.Float64,
    }
    side_by_side = _by_track(pl.DataFrame(rows, schema=schema), ["factor", "model"])
    rho = rank_stability(main.select([*CELL, "track", "strict"]))
    return side_by_side, rho.filter(pl.col("compare") == "models")


def attribution(tasks: pl.DataFrame) -> pl.DataFrame:
    """Why low-scoring trials scored low, counted per cell (the categories of codesign.evaluate.attribution)."""
    diagnosed = tasks.filter(pl.col("attribution").is_not_null())
    counts = diagnosed.group_by([*CELL, "attribution"]).agg(trials=pl.len()).sort([*CELL, "attribution"])
    return counts.with_columns(left_out_of_adjusted=pl.col("attribution").is_in(list(NOT_THE_SOLVER)))


def adjusted(tasks: pl.DataFrame, main: pl.DataFrame) -> pl.DataFrame:
    """Environment-adjusted scores next to the raw ones."""
    adj = adjusted_frame(tasks).select([*CELL, "track", "strict", "graded", "full_pass", "left_out"])
    raw = main.select([*CELL, "track", "strict", "graded", "full_pass"])
    joined = raw.join(adj, on=[*CELL, "track"], how="left", suffix="_adjusted")
    return _by_track(joined)


def agreement(verdicts: pl.DataFrame, labels: pl.DataFrame | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Every pair of raters (deterministic graders, each LLM evaluator and its judge before the verifier, each
    person) on the same solves' criteria, and Krippendorff's α over all of them (codesign.score.agreement)."""
    rated = ratings(verdicts, labels)
    return agreement_pairs(rated), agreement_alpha(rated)


def with_intervals(frame: pl.DataFrame, measures: dict[str, str]) -> pl.DataFrame:
    """``measure`` and its ``_lo``/``_hi`` columns as one text column ``0.67 (0.42–0.92)`` (for reading)."""

    def text(row: dict[str, float | None], column: str) -> str | None:
        value, lo, hi = (row[f"{column}{s}"] for s in ("", "_lo", "_hi"))
        if value is None:
            return None
        return f"{value:.2f}" if lo is None or hi is None else f"{value:.2f} ({lo:.2f}–{hi:.2f})"

    shown = [
        pl.struct(*(f"{column}{s}" for s in ("", "_lo", "_hi")))
        .map_elements(functools.partial(text, column=column), return_dtype=pl.String)
        .alias(title)
        for column, title in measures.items()
    ]
    return frame.select(*(c for c in frame.columns if not c.startswith(tuple(measures))), *shown)
