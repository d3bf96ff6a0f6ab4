"""codesign: run and grade coding agents on Co-Design Bench-style web-app revision tasks.

The public API is re-exported here from private modules; importing it stays light (no Ray,
litellm or W&B until a stage needs them).
"""

from codesign._protocols import Evaluator, Executor, Harness, Model, ModelReply, Sandbox, Tracker
from codesign._types import (
    CriterionVerdict,
    Evaluation,
    EvidenceItem,
    ExecResult,
    ExitStatus,
    Telemetry,
    TrialRecord,
    TrialStatus,
    Usage,
    Verdict,
)
from codesign.errors import CodesignError, ConfigError, EnvironmentSetupError, TaskError

__version__ = "0.1.0"

__all__ = [
    "CodesignError",
    "ConfigError",
    "CriterionVerdict",
    "EnvironmentSetupError",
    "Evaluation",
    "Evaluator",
    "EvidenceItem",
    "ExecResult",
    "Executor",
    "ExitStatus",
    "Harness",
    "Model",
    "ModelReply",
    "Sandbox",
    "TaskError",
    "Telemetry",
    "Tracker",
    "TrialRecord",
    "TrialStatus",
    "Usage",
    "Verdict",
    "__version__",
]
