"""Run-to-run judge noise: how often the k samples of one criterion's judge disagree (the flip rate).

With ``evaluator.judge_samples=k`` every criterion an LLM judged carries its k sample verdicts. Per cell, by
criterion kind and overall: criteria sampled, criteria whose samples are not all the same, and that share
with a Wilson 95 % interval (a binomial proportion: each criterion flips or does not). Elsewhere 2 of 7
borderline verdicts flipped even at temperature 0: this is the figure that says how many flip here.
"""

from __future__ import annotations

import math

import polars as pl

from codesign.score.metrics import CELL

SCHEMA: dict[str, type[pl.DataType]] = {
    **dict.fromkeys([*CELL, "kind"], pl.String),
    "criteria": pl.Int64,
    "samples": pl.Int64,
    "flipped": pl.Int64,
    "flip_rate": pl.Float64,
    "flip_rate_lo": pl.Float64,
    "flip_rate_hi": pl.Float64,
}


def wilson(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95 % by default); sound at 0 and n, unlike the normal one."""
    if n == 0:
        return math.nan, math.nan
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def noise_frame(verdicts: pl.DataFrame) -> pl.DataFrame:
    """One row per cell × kind (and ``all``) of the criteria judged more than once."""
    if verdicts.is_empty() or "samples" not in verdicts.columns:
        return pl.DataFrame(schema=SCHEMA)
    sampled = verdicts.filter(pl.col("samples").list.len() > 1).with_columns(
        flipped=pl.col("samples").list.n_unique() > 1, k=pl.col("samples").list.len()
    )
    rows = []
    for key, group in sorted(sampled.group_by(CELL), key=lambda kv: tuple(map(str, kv[0]))):
        for kind in ["all", *sorted(set(group["kind"]))]:
            part = group if kind == "all" else group.filter(pl.col("kind") == kind)
            n, flipped = part.height, int(part["flipped"].sum())
            lo, hi = wilson(flipped, n)
            rows.append(
                {
                    **dict(zip(CELL, map(str, key), strict=True)),
                    "kind": kind,
                    "criteria": n,
                    "samples": max(part["k"].to_list(), default=0),
                    "flipped": flipped,
                    "flip_rate": flipped / n,
                    "flip_rate_lo": lo,
                    "flip_rate_hi": hi,
                }
            )
    return pl.DataFrame(rows, schema=SCHEMA)


def format_noise(noise: pl.DataFrame) -> str:
    """One line per cell: the overall flip rate with its interval."""
    lines = []
    for r in noise.filter(pl.col("kind") == "all").iter_rows(named=True):
        lines.append(
            f"{' · '.join(r[c] for c in CELL)}: judge flip rate {r['flip_rate']:.2f} "
            f"({r['flip_rate_lo']:.2f}–{r['flip_rate_hi']:.2f}) over {r['criteria']} criteria, "
            f"{r['samples']} samples each"
        )
    return "\n".join(lines)
