"""Executors run trial specs and stream records back: Ray actors by default, or this process."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from codesign._types import TrialRecord, TrialStatus


@dataclass
class Budget:
    """A run-wide cost budget: once spent, no new trial starts (those running finish)."""

    max_cost_usd: float | None = None
    spent_usd: float = 0.0

    def charge(self, record: TrialRecord) -> None:
        """What this trial spent now: its solve (unless reused) and its judge and verifier calls (unless the
        evaluation was reused)."""
        if record.telemetry is not None and not record.cached.get("solve"):
            self.spent_usd += record.telemetry.cost_usd
        if record.evaluation is not None and not record.cached.get("evaluate"):
            grading = record.evaluation.telemetry
            self.spent_usd += sum(float(grading.get(f"{role}_cost_usd") or 0.0) for role in ("judge", "verifier"))

    @property
    def exhausted(self) -> bool:
        return self.max_cost_usd is not None and self.spent_usd >= self.max_cost_usd

    def skipped(self, spec: dict[str, Any]) -> TrialRecord:
        message = f"not started: the run-wide cost budget of ${self.max_cost_usd:.2f} is spent (${self.spent_usd:.4f})"
        return TrialRecord.unrun(spec["task_id"], spec["cell"], TrialStatus.SKIPPED, message)
