"""The report's figures, drawn with matplotlib (no display, no network) and kept as PNG bytes: embedded in the
HTML page and logged to W&B as images."""

from __future__ import annotations

import io

import polars as pl

from codesign.score.metrics import CELL

_COLORS = ["#3b6ea8", "#d9822b", "#4f9a55", "#b04a5a", "#7d5ba6", "#8c6d46", "#c4589f", "#6b6b6b"]


def _png(fig) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _label(row: dict, varying: list[str]) -> str:
    return " · ".join(str(row[c]) for c in varying) or str(row["model"])


def varying(frame: pl.DataFrame) -> list[str]:
    """The cell columns that differ between rows (the ones worth naming in a label)."""
    return [c for c in CELL if c in frame.columns and frame[c].n_unique() > 1] or ["model"]


def score_bars(main: pl.DataFrame) -> bytes:
    """Grouped bars: Strict per cell, one group per track, with the 95 % bootstrap interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = varying(main)
    labels = sorted({_label(r, cells) for r in main.iter_rows(named=True)})
    tracks = [t for t in ("ME", "RE", "ALL") if t in set(main["track"])]
    width = 0.8 / max(1, len(tracks))
    fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(labels) + 2), 3.6))
    for i, track in enumerate(tracks):
        rows = {_label(r, cells): r for r in main.filter(pl.col("track") == track).iter_rows(named=True)}
        xs = [j + i * width for j in range(len(labels))]
        ys = [(rows.get(lb) or {}).get("strict") or 0.0 for lb in labels]
        lo = [max(0.0, y - ((rows.get(lb) or {}).get("strict_lo") or y)) for y, lb in zip(ys, labels, strict=True)]
        hi = [max(0.0, ((rows.get(lb) or {}).get("strict_hi") or y) - y) for y, lb in zip(ys, labels, strict=True)]
        ax.bar(xs, ys, width, label=track, color=_COLORS[i % len(_COLORS)], yerr=[lo, hi], capsize=3)
    ax.set_xticks([j + width * (len(tracks) - 1) / 2 for j in range(len(labels))], labels, rotation=20, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("Strict completion")
    ax.legend(title="track", fontsize=8)
    ax.set_title("Strict completion per cell and track (95 % bootstrap interval over tasks)")
    return _png(fig)


def breakdown_bars(breakdowns: pl.DataFrame, dimension: str, title: str) -> bytes | None:
    """Bars of Strict per group of one breakdown dimension (modality, edit_types), one series per cell."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    part = breakdowns.filter(pl.col("dimension") == dimension)
    if part.is_empty():
        return None
    cells = varying(part)
    groups = sorted(set(part["group"]))
    series = sorted({_label(r, cells) for r in part.iter_rows(named=True)})
    width = 0.8 / max(1, len(series))
    fig, ax = plt.subplots(figsize=(max(5, 1.1 * len(groups) * max(1, len(series)) / 2 + 2), 3.4))
    for i, name in enumerate(series):
        rows = {r["group"]: r["strict"] for r in part.iter_rows(named=True) if _label(r, cells) == name}
        ax.bar(
            [j + i * width for j in range(len(groups))],
            [rows.get(g) or 0.0 for g in groups],
            width,
            label=name,
            color=_COLORS[i % len(_COLORS)],
        )
    ax.set_xticks([j + width * (len(series) - 1) / 2 for j in range(len(groups))], groups)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("Strict completion")
    ax.legend(fontsize=8)
    ax.set_title(title)
    return _png(fig)


def heat_map(main: pl.DataFrame, rows_by: str, columns_by: str) -> bytes | None:
    """Strict on the combined track (ALL) as a ``rows_by`` × ``columns_by`` grid, e.g. harness × model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = main.filter(pl.col("track") == "ALL")
    rows, cols = sorted(set(table[rows_by])), sorted(set(table[columns_by]))
    if len(rows) < 2 and len(cols) < 2:
        return None
    score = (
        table.group_by(rows_by, columns_by).agg(pl.col("strict").mean()).iter_rows()
    )  # other factors averaged: one number per pair
    grid = [[float("nan")] * len(cols) for _ in rows]
    for r, c, v in score:
        grid[rows.index(r)][cols.index(c)] = v if v is not None else float("nan")
    fig, ax = plt.subplots(figsize=(max(4, 1.1 * len(cols) + 2), max(2.5, 0.6 * len(rows) + 1.5)))
    image = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(cols)), cols, rotation=20, ha="right")
    ax.set_yticks(range(len(rows)), rows)
    for i, line in enumerate(grid):
        for j, v in enumerate(line):
            if v == v:
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", color="white" if v < 0.6 else "black")
    fig.colorbar(image, ax=ax, label="Strict (ALL)")
    ax.set_title(f"{rows_by} × {columns_by}")
    return _png(fig)


def agreement_bars(agreement: pl.DataFrame) -> bytes | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    overall = agreement.filter((pl.col("kind") == "all") & pl.col("agreement").is_not_null())
    if overall.is_empty():
        return None
    labels = [f"{r['rater']} vs {r['reference']}" for r in overall.iter_rows(named=True)]
    value = overall["agreement"].to_numpy()
    low, high = overall["agreement_lo"].fill_null(strategy="zero").to_numpy(), overall["agreement_hi"].to_numpy()
    errors = [value - low.clip(max=value), (high - value).clip(min=0)]
    fig, ax = plt.subplots(figsize=(max(4, 1.2 * len(labels) + 2), 3.2))
    ax.bar(labels, value, yerr=errors, capsize=4, color=_COLORS[0])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("identical verdicts (95 % ci)")
    ax.set_title("Agreement on the same solves and criteria")
    plt.setp(ax.get_xticklabels(), rotation=20, ha="right")
    return _png(fig)
