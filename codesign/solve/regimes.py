"""Execution regimes: how much room a solver gets. The regime owns the caps and the control flow."""

from __future__ import annotations

from dataclasses import dataclass

from codesign._protocols import Harness, Model, Sandbox
from codesign.solve.recorder import Limits, SolveRecorder
from codesign.tasks.loader import TaskView


@dataclass
class Agentic:
    """The harness runs its own loop until it submits or a cap (turns, wall time, cost) is hit."""

    name: str = "agentic"
    max_turns: int = 120
    max_wall_s: float = 3 * 3600.0
    max_cost_usd: float | None = None

    def limits(self) -> Limits:
        return Limits(self.max_turns, self.max_wall_s, self.max_cost_usd)

    def solve(self, model: Model, harness: Harness, sandbox: Sandbox, task: TaskView, recorder: SolveRecorder) -> None:
        harness.solve(model, sandbox, task, recorder)
