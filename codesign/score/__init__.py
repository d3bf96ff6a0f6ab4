"""Scores: verdict rows → per-task scores → task-normalized summaries (the paper's metrics)."""

from codesign.score.metrics import breakdown_frame, format_summary, summary_frame, task_frame, verdict_frame

__all__ = ["breakdown_frame", "format_summary", "summary_frame", "task_frame", "verdict_frame"]
