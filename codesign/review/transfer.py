"""Labels in and out of the stores under review: exported as one table, imported from one (made elsewhere)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from codesign.review.server import Review
from codesign.score import labels as stored


def export_labels(review: Review, path: Path) -> str:
    """Every label (every reviewer) of the stores under review, to ``path`` (.csv or .parquet)."""
    frames = [stored.load(store) for store in review.stores.values()]
    frame = pl.concat(frames).unique().sort("trial_key", "eval_key", "criterion_id", "reviewer")
    stored.export(frame, path)
    return f"exported {frame.height} labels by {frame['reviewer'].n_unique()} reviewers to {path}"


def import_labels(review: Review, path: Path) -> tuple[int, list[str]]:
    """Store each label of ``path`` next to the evaluation it names. A label for an evaluation or criterion
    not under review is not imported and is named in the returned list; the others are imported."""
    where = {(r["trial_key"], r["eval_key"], r["criterion_id"]): r["store"] for r in review.items.iter_rows(named=True)}
    saved, refused = 0, []
    for label in stored.read_file(path):
        uri = where.get((label.trial_key, label.eval_key, label.criterion_id))
        if uri is None:
            refused.append(
                f"{label.trial_key}/{label.eval_key} {label.criterion_id} by {label.reviewer}: "
                "no such graded criterion in the runs under review"
            )
            continue
        stored.save(review.stores[uri], label)
        saved += 1
    return saved, refused
