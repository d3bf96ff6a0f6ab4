"""The report's tables for a terminal of 80–120 columns: what every row shares is said once, the main table is
split into scores and what they cost, and a header that does not fit wraps instead of being cut to ``stri…``.

The HTML page, the parquet files and ``report.md`` keep every column."""

from __future__ import annotations

import polars as pl
from rich.console import Console
from rich.table import Table

from codesign.report import tables
from codesign.report.build import AGREEMENT_TITLE, Report, nonempty_buckets
from codesign.score.metrics import CELL

# trials: scored of planned (the denominators table says why the rest were not scored).
SCORES = ["track", "trials", "tasks", "strict", "strict_ci", "strict_sd", "graded", "full_pass", "zero_pass"]
# Error counts are in the denominators table; the page and the parquet keep them here too.
COSTS = ["track", "turns_median", "tool_calls", "input_tokens", "output_tokens", "cost_usd", "solve_s_median",
         "capped"]  # fmt: skip
COUNTS = {"turns_median", "tool_calls", "input_tokens", "output_tokens"}  # floats that are counts: no decimals


def print_report(report: Report, console: Console) -> None:
    """Print the report's tables to ``console`` (its width decides how headers wrap)."""
    frames = _sections(report)
    shared = _shared_cell(list(frames.values()))
    if shared:
        console.print("every row: " + ", ".join(f"{k} [bold]{v}[/bold]" for k, v in shared.items()))
    for title, frame in frames.items():
        console.print(f"\n[bold]{title}[/bold]")
        if frame.is_empty():
            console.print("  none")
            continue
        # A column that is empty in every row (strict_sd with one seed) says nothing here.
        empty = [c for c in frame.columns if frame[c].null_count() == frame.height]
        console.print(_table(frame.drop([c for c in shared if c in frame.columns] + empty)))


def _sections(report: Report) -> dict[str, pl.DataFrame]:
    main = report.main.with_columns(
        trials=pl.format("{}/{}", "scored", "planned"),
        strict_ci=pl.struct("strict_lo", "strict_hi").map_elements(_interval, return_dtype=pl.String)
        if {"strict_lo", "strict_hi"} <= set(report.main.columns)
        else pl.lit(None, pl.String),
    )
    cell = [c for c in CELL if c in main.columns]
    scores, costs = (main.select(cell + [c for c in group if c in main.columns]) for group in (SCORES, COSTS))
    counted = nonempty_buckets(report.denominators)
    frames = {
        "Scores (strict ci: 95 % bootstrap interval over tasks)": scores,
        "What the scores cost": costs,
        "Denominators (trials planned, scored, and the buckets that are not empty; criteria by grader)": counted,
        "Breakdowns": report.breakdowns,
    }
    if report.sensitivity.height:
        frames |= {"Sensitivity": report.sensitivity, "Rank stability (Spearman ρ)": report.rho}
    frames |= {"Failure attribution": report.attribution, "Environment-adjusted": report.adjusted}
    if report.agreement.height:
        # Overall, one interval: the rest (by kind, every interval) is in report.md and agreement.parquet.
        overall = report.agreement.filter(pl.col("kind") == "all")
        frames[AGREEMENT_TITLE] = tables.with_intervals(
            overall.select("reference", "rater", "items", *(f"agreement{s}" for s in ("", "_lo", "_hi"))),
            {"agreement": "agreement [95 % ci]"},
        ).with_columns(
            overall.select(
                pl.col("kappa").alias("κ"),
                pl.col("false_pass").alias("false PASS"),
                pl.col("false_fail").alias("false FAIL"),
            )
        )
    if report.alpha.height:
        frames["Krippendorff's α (ordinal) over every rater of a criterion"] = report.alpha_view()
    return frames


def _interval(bounds: dict[str, float | None]) -> str | None:
    lo, hi = bounds["strict_lo"], bounds["strict_hi"]
    return None if lo is None or hi is None else f"{lo:.2f}–{hi:.2f}"


def _shared_cell(frames: list[pl.DataFrame]) -> dict[str, str]:
    """The cell columns (model, harness, …) that hold one value in every row of every table."""
    shared: dict[str, str] = {}
    for column in CELL:
        values = {str(v) for f in frames if column in f.columns for v in f[column].unique().to_list()}
        if len(values) == 1:
            shared[column] = values.pop()
    return shared


def _table(frame: pl.DataFrame) -> Table:
    table = Table(box=None, pad_edge=False, collapse_padding=True, header_style="bold")  # one space between columns
    cells = {name: [_cell_text(v, name in COUNTS) for v in frame[name].to_list()] for name in frame.columns}
    for name, dtype in frame.schema.items():
        widest = max(len(c) for c in cells[name])
        # Spaces let a header wrap onto two lines (rich cuts a word it cannot break); a short value (a number,
        # an interval) is never cut: long text (a context, a group name) gives way first.
        table.add_column(name.replace("_", " "), justify="right" if dtype.is_numeric() else "left",
                         min_width=widest if widest <= 12 else None)  # fmt: skip
    for row in zip(*cells.values(), strict=True):
        table.add_row(*row)
    return table


def _cell_text(value: object, count: bool) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.0f}" if count else f"{value:.3f}"
    return str(value)
