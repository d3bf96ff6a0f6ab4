"""Records passed between stages. Plain dataclasses: they cross Ray and land in parquet and JSON."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Annotated, Any

from pydantic import Field

# Config value ranges: components annotate their fields with these, and preflight refuses anything outside.
Count = Annotated[int, Field(ge=1)]  # one or more (turns, workers, trials in flight)
NonNegative = Annotated[int, Field(ge=0)]  # zero or more (retries)
Seconds = Annotated[float, Field(gt=0)]  # a positive duration
Dollars = Annotated[float, Field(gt=0)]  # a positive amount


class Verdict(StrEnum):
    PASS = "PASS"
    PARTIAL = "PARTIAL"
    FAIL = "FAIL"
    UNGRADED = "UNGRADED"  # no verdict about the app: its grader failed (see :class:`Ungraded`); never a score


VERDICT_SCORE = {Verdict.PASS: 1.0, Verdict.PARTIAL: 0.5, Verdict.FAIL: 0.0}


class Ungraded(StrEnum):
    """Why a criterion has no verdict about the app. Only the candidate decides a verdict: when the grader
    fails, the criterion is ungraded with its cause, and (but for ``not_gradable``) its trial is a
    ``grading_error`` — left out of every average, never stored as finished, graded again."""

    NOT_GRADABLE = "not_gradable"  # no grader for it under this evaluator: counts as FAIL (a skipped check)
    GRADER_ERROR = "grader_error"  # the grader's own failure: a judge without a valid verdict, a script's bug
    INFRA = "infra"  # the browser or the machine failed while grading
    UNDECIDED_TIMEOUT = "undecided_timeout"  # time ran out and nothing says whether the app or the machine


# Causes that leave a criterion without a verdict about the app: its trial is a grading error.
GRADING_FAILURES = frozenset({Ungraded.GRADER_ERROR, Ungraded.INFRA, Ungraded.UNDECIDED_TIMEOUT})


class ExitStatus(StrEnum):
    """How a solve ended. Caps and infrastructure failures are outcomes, recorded as data."""

    SUBMITTED = "submitted"  # the agent said it was done
    TURN_CAP = "turn_cap"
    TIME_CAP = "time_cap"
    COST_CAP = "cost_cap"
    AGENT_ERROR = "agent_error"  # the model or harness broke (bad output it could not recover from)
    INFRA_ERROR = "infra_error"  # sandbox, network, endpoint: not the model's fault

    @property
    def is_infrastructure(self) -> bool:
        # The paper records timeouts as infrastructure failures (appendix D).
        return self in (ExitStatus.TIME_CAP, ExitStatus.INFRA_ERROR)


class TrialStatus(StrEnum):
    OK = "ok"  # solved (whatever the exit status) and evaluated: counts in scores
    TASK_ERROR = "task_error"  # the task itself could not be loaded: reported, never a zero
    INFRA_ERROR = "infra_error"  # the solve's or the evaluation's infrastructure failed: reported, never a zero
    GRADING_ERROR = "grading_error"  # a criterion's grader failed (Ungraded): reported, never a zero, graded again
    ABORTED = "aborted"  # the evidence audit aborted evaluation: excluded from aggregation
    SKIPPED = "skipped"  # never started (the run-wide cost budget was spent)
    SOLVED = "solved"  # solved and stored, not evaluated in this run (stages.evaluate=false)


@dataclass
class ExecResult:
    output: str
    returncode: int | None  # None when the command was killed on timeout
    timed_out: bool = False


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0

    def __iadd__(self, other: Usage) -> Usage:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cached_tokens += other.cached_tokens
        return self


# Where a cost figure came from, most to least trustworthy-for-a-total: one estimated call makes the
# total an estimate, so a running total keeps the weakest source it has seen.
COST_SOURCES = ("none", "offline", "cli", "provider", "config", "litellm_estimate", "unknown")


def weaker_cost_source(current: str, new: str) -> str:
    rank = {s: i for i, s in enumerate(COST_SOURCES)}
    return new if rank.get(new, len(COST_SOURCES)) > rank.get(current, len(COST_SOURCES)) else current


# The tool families telemetry counts (the paper's appendix G), the same for every harness.
TOOL_KINDS = ("edit", "shell", "read", "attachment", "screenshot", "media", "other")


@dataclass
class Telemetry:
    """Per-trial effort. Same schema for every harness."""

    turns: int = 0
    tool_calls: dict[str, int] = field(default_factory=dict)  # by kind: edit, shell, read, ...
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    cost_source: str = "none"  # provider | litellm_estimate | cli | offline | unknown
    wall_s: float = 0.0
    exit_status: str = ExitStatus.SUBMITTED
    message: str = ""

    def add_usage(self, usage: Usage) -> None:
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cached_tokens += usage.cached_tokens

    def count_tool(self, kind: str) -> None:
        self.tool_calls[kind] = self.tool_calls.get(kind, 0) + 1


@dataclass(frozen=True)
class Limits:
    """The caps of one solve (the regime's)."""

    max_turns: int = 120
    max_wall_s: float = 3 * 3600.0
    max_cost_usd: float | None = None


@dataclass(frozen=True)
class TaskView:
    """Everything a solver may see. Criteria and the reference solution are deliberately absent."""

    id: str
    track: str
    title: str
    request: str
    history: list[dict]
    attachments: list[dict]  # {path (absolute), name, modality, description}
    routes: list[str]


@dataclass
class CriterionVerdict:
    criterion_id: str
    kind: str
    preserve: bool
    verdict: str  # a Verdict value
    grader: str  # probe | script | spec | judge | verifier | none
    reason: str
    evidence_ids: list[str] = field(default_factory=list)
    failure_category: str | None = None  # missing | wrong | regressed | element_never_reached | ...
    original_verdict: str | None = None  # the judge's verdict when a verifier changed it
    refutation: dict[str, Any] | None = None  # the verifier's trace: refuted, reason, cited evidence
    ungraded: str | None = None  # an Ungraded value: why no grader decided (None: graded)
    samples: list[str] | None = None  # every judge sample's verdict (evaluator.judge_samples > 1), in order

    @property
    def score(self) -> float | None:
        """1 / 0.5 / 0 for a verdict about the app; None for an ungraded criterion whose grader failed."""
        return VERDICT_SCORE.get(Verdict(self.verdict))

    @property
    def grading_failed(self) -> bool:
        return self.ungraded in GRADING_FAILURES

    @classmethod
    def ungraded_by(
        cls, criterion: Any, grader: str, cause: Ungraded, reason: str, evidence_ids: list[str] | None = None
    ) -> CriterionVerdict:
        """A criterion left without a verdict about the app: ``not_gradable`` counts as FAIL, the other causes
        are no verdict at all (``UNGRADED``)."""
        verdict = Verdict.FAIL if cause == Ungraded.NOT_GRADABLE else Verdict.UNGRADED
        category = "not_gradable" if cause == Ungraded.NOT_GRADABLE else None
        return cls(
            criterion.id,
            criterion.kind,
            criterion.preserve,
            verdict.value,
            grader,
            reason[:2000],
            list(evidence_ids or []),
            category,
            ungraded=cause.value,
        )


@dataclass
class EvidenceItem:
    id: str
    kind: str  # diff | dom | screenshot | console | network | route | action | build
    route: str | None = None
    viewport: str | None = None
    path: str | None = None  # file inside the evaluation folder, relative
    data: Any = None  # small inline payloads (status codes, console lines, action records)


@dataclass
class Evaluation:
    status: str  # a TrialStatus value
    verdicts: list[CriterionVerdict] = field(default_factory=list)
    evidence: list[EvidenceItem] = field(default_factory=list)
    message: str = ""
    wall_s: float = 0.0
    telemetry: dict[str, Any] = field(default_factory=dict)  # judge / verifier calls, tokens, cost
    # Why this evaluation must be graded again next run (an app timeout): it is used, never stored as finished.
    transient: str = ""
    attempts: int = 1  # gradings of this workspace in this run (a grading error is graded again, up to a bound)
    grading_code: str = ""  # the grading code that decided it (codesign.evaluate.fingerprint), once stored

    @property
    def grading_failures(self) -> list[CriterionVerdict]:
        return [v for v in self.verdicts if v.grading_failed]


@dataclass
class TrialRecord:
    """One trial's result as it streams back to the driver."""

    trial_key: str
    eval_key: str | None
    task_id: str
    track: str
    cell: dict[str, str]  # model, harness, regime, evaluator, seed
    labels: dict[str, Any]
    status: str  # a TrialStatus value
    telemetry: Telemetry | None = None
    evaluation: Evaluation | None = None
    message: str = ""
    cached: dict[str, bool] = field(default_factory=dict)  # stage -> reused from the store
    attribution: dict[str, Any] | None = None  # why a low-scoring trial scored low (raw scores unchanged)
    node: str = ""  # where it ran: the Ray node id (the host name without Ray)
    infra_events: list[str] = field(default_factory=list)  # attempts lost to the infrastructure, re-run
    stage: str = ""  # for an infra_error: where it failed (solve | evaluate | worker)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def bucket(self) -> str:
        """Where the denominators count this trial: ``scored``, or its unscored bucket —
        ``infra_error:<stage>``, ``grading_error:<cause>,…`` (see :class:`Ungraded`), or its status."""
        if self.status == TrialStatus.OK:
            return "scored"
        if self.status == TrialStatus.INFRA_ERROR:
            return f"infra_error:{self.stage or 'trial'}"
        if self.status == TrialStatus.GRADING_ERROR and self.evaluation is not None:
            causes = sorted({v.ungraded or "" for v in self.evaluation.grading_failures})
            return "grading_error:" + ",".join(causes)
        return self.status

    @classmethod
    def unrun(
        cls, task_id: str, cell: dict[str, str], status: TrialStatus, message: str, stage: str = ""
    ) -> TrialRecord:
        """A trial with no result to score: a task that did not load, a crash, a budget stop."""
        return cls("", None, task_id, "?", cell, {}, status.value, message=message, stage=stage)
