"""How a solve ended, as exceptions with a payload (mini-swe-agent's pattern), recorded as data."""

from __future__ import annotations

from codesign._types import ExitStatus


class Ended(Exception):
    """Raised to stop a harness; ``status`` becomes the trial's exit status."""

    status: ExitStatus = ExitStatus.SUBMITTED

    def __init__(self, message: str = ""):
        self.message = message
        super().__init__(message)


class Submitted(Ended):
    status = ExitStatus.SUBMITTED


class TurnCapReached(Ended):
    status = ExitStatus.TURN_CAP


class TimeCapReached(Ended):
    status = ExitStatus.TIME_CAP


class CostCapReached(Ended):
    status = ExitStatus.COST_CAP


class AgentError(Ended):
    status = ExitStatus.AGENT_ERROR


class InfraError(Ended):
    status = ExitStatus.INFRA_ERROR
