"""Scores: verdict rows → per-task scores → task-normalized summaries (the paper's metrics)."""

from codesign.score.metrics import (
    adjusted_frame,
    breakdown_frame,
    format_errors,
    format_summary,
    summary_frame,
    task_frame,
    verdict_frame,
)

__all__ = [
    "adjusted_frame",
    "breakdown_frame",
    "format_errors",
    "format_summary",
    "summary_frame",
    "task_frame",
    "verdict_frame",
]
