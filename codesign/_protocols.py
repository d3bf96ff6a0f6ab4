"""Plug-in contracts. Small on purpose: implement one and point a config's ``_target_`` at it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from codesign._types import CriterionVerdict, ExecResult, Limits, TaskView, Telemetry, TrialRecord, Usage


@dataclass
class ModelReply:
    message: dict[str, Any]  # an OpenAI-format assistant message: role, content, tool_calls
    usage: Usage
    cost_usd: float | None = None
    cost_source: str = "unknown"  # provider | litellm_estimate | offline | unknown


class Model(Protocol):
    """A chat model with tool calling. Messages and tools use the OpenAI format (litellm's lingua franca)."""

    name: str

    def query(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelReply: ...


class Sandbox(Protocol):
    """Where a solver's commands run. ``workspace`` is the host-side path of the final app tree."""

    workspace: Path

    def execute(
        self, command: str, timeout: float | None = None, stdin: str | None = None, env: dict[str, str] | None = None
    ) -> ExecResult: ...

    def read_file(self, path: str) -> str: ...

    def write_file(self, path: str, content: str) -> None: ...

    def export(self, dest: Path) -> None:
        """Copy the workspace's current files (without installed dependencies) to ``dest`` on the host."""
        ...

    def sync(self) -> None:
        """Make the host-side ``workspace`` show what commands wrote (a container's files are copied out)."""
        ...

    def serve(self, command: str, ready_path: str, ready_timeout_s: float) -> contextlib.AbstractContextManager[str]:
        """Run a server command (``{port}`` is its port) in the sandbox; yields a base URL on host loopback."""
        ...

    def for_candidate(
        self, workspace: Path, home: Path, frozen: tuple[str, ...] = (), caches: tuple[str, ...] = ()
    ) -> Sandbox:
        """A sandbox of the same kind over ``workspace`` for code the model wrote (install, build, serve):
        confined and offline whatever this one allows; ``frozen`` workspace paths are read-only, except their
        ``caches`` subfolders, which start empty."""
        ...

    def close(self) -> None: ...


class Recorder(Protocol):
    """Where a harness reports a solve (turns, tool calls, the trajectory) and learns its caps
    (:class:`codesign.solve.recorder.SolveRecorder`)."""

    telemetry: Telemetry

    @property
    def limits(self) -> Limits: ...

    def log(self, event: str, /, **payload: Any) -> None: ...

    def check_limits(self) -> None:
        """Raise the cap's :class:`codesign.solve.ended.Ended` when one is reached (before every model call)."""
        ...

    def model_replied(self, reply: ModelReply) -> None: ...

    def count_tool_call(self, name: str, args: dict[str, Any]) -> None:
        """A tool call that runs elsewhere (inside an agent CLI): counted, not executed."""
        ...

    def tool_called(self, name: str, args: dict[str, Any], output: str) -> None: ...

    def elapsed(self) -> float: ...


class Screenshots(Protocol):
    """The app as it now is in a solver's workspace (:class:`codesign.solve.preview.Preview`)."""

    def screenshot(self, sandbox: Sandbox, route: str = "/", viewport: str = "desktop") -> bytes: ...


class Harness(Protocol):
    """Drives a model to revise the workspace. Ends by raising a :class:`codesign.solve.ended.Ended`."""

    name: str

    def solve(
        self, model: Model, sandbox: Sandbox, task: TaskView, recorder: Recorder, preview: Screenshots | None = None
    ) -> None: ...


class Evaluator(Protocol):
    """Grades one final workspace — built, served, its evidence in ``session`` — against the hidden criteria."""

    name: str
    timeout_s: float  # a whole evaluation, evidence and grading

    # ``task`` is a codesign.tasks.loader.Task and ``session`` an EvidenceSession: both belong to stages above
    # these contracts, so they are not named here.
    async def evaluate(self, task: Any, session: Any) -> list[CriterionVerdict]: ...


class Tracker(Protocol):
    def start(self, run_name: str, group: str | None, config: dict[str, Any], out_dir: Path) -> None: ...

    def log_trial(self, record: TrialRecord) -> None: ...

    def finish(self, tables: dict[str, Any] | None, error: BaseException | None = None) -> None: ...


class Executor(Protocol):
    """Runs trial specs somewhere (Ray actors, this process) and streams records back as they finish."""

    def run(
        self,
        specs: list[dict[str, Any]],
        on_result: Callable[[TrialRecord], None],
        budget: Any = None,
        on_start: Callable[[dict[str, Any]], None] | None = None,  # a trial handed to a worker (progress)
    ) -> list[TrialRecord]: ...
