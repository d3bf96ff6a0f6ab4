"""Executors run trial specs and stream records back: Ray actors by default, or this process."""

from __future__ import annotations

import resource
from dataclasses import dataclass
from typing import Any

from codesign._types import TrialRecord, TrialStatus

OPEN_FILES_PER_TRIAL = 8  # its trajectory, its model connection, its sandbox's pipes, its store files


def open_files_for(trials: int) -> int:
    """Raise this process's open-file limit (soft, up to the hard one) to what ``trials`` in flight need, and
    return the limit. A Debian login's soft limit is 1024, which 256 trials in flight (~3 descriptors each,
    more while a command runs) plus Playwright's would come close to."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 1024 + OPEN_FILES_PER_TRIAL * trials
    if soft != resource.RLIM_INFINITY and soft < wanted:
        soft = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return soft


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
