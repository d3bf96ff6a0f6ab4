"""Scores: verdict rows → per-task scores → task-normalized summaries (the paper's metrics)."""

from codesign.score.ledger import denominators_frame, format_denominators, ledger_frame
from codesign.score.metrics import (
    adjusted_frame,
    breakdown_frame,
    format_errors,
    format_summary,
    summary_frame,
    task_frame,
    verdict_frame,
)
from codesign.score.noise import format_noise, noise_frame

__all__ = [
    "adjusted_frame",
    "breakdown_frame",
    "denominators_frame",
    "format_denominators",
    "format_errors",
    "format_noise",
    "format_summary",
    "ledger_frame",
    "noise_frame",
    "summary_frame",
    "task_frame",
    "verdict_frame",
]
