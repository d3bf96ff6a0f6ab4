"""Execution regimes: how much room a solver gets. The regime owns the caps and the control flow."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from codesign._protocols import Harness, Model, Sandbox
from codesign._types import Count, Dollars, Limits, Seconds, TaskView
from codesign.solve import prompts
from codesign.solve.attachments import content_parts
from codesign.solve.edits import EditError, apply_edits, parse_edits
from codesign.solve.ended import AgentError, Submitted
from codesign.solve.preview import Preview
from codesign.solve.recorder import SolveRecorder

# Never sent as source: generated, vendored or binary.
_SKIP = (
    "./node_modules/*",
    "./dist/*",
    "./_attachments/*",
    "./.vite/*",
    "*/package-lock.json",
    "*.png",
    "*.jpg",
    "*.jpeg",
    "*.gif",
    "*.webp",
    "*.ico",
    "*.mp3",
    "*.mp4",
    "*.webm",
    "*.wav",
    "*.ogg",
    "*.pdf",
    "*.woff*",
)


@dataclass
class Agentic:
    # Settings that do not change what it does: left out of content keys (codesign.build.behaviour).
    not_in_key = ("name",)
    uses_harness = True
    """The harness runs its own loop until it submits or a cap (turns, wall time, cost) is hit."""

    name: str = "agentic"
    max_turns: Count = 120
    max_wall_s: Seconds = 3 * 3600.0
    max_cost_usd: Dollars | None = None
    max_patch_kb: Count = 4096  # a final workspace that differs by more is an agent error (nothing graded)

    def limits(self) -> Limits:
        return Limits(self.max_turns, self.max_wall_s, self.max_cost_usd)

    def solve(
        self,
        model: Model,
        harness: Harness,
        sandbox: Sandbox,
        task: TaskView,
        recorder: SolveRecorder,
        preview: Preview | None = None,
    ) -> None:
        harness.solve(model, sandbox, task, recorder, preview)


@dataclass
class SingleShot:
    """One model call with the request, the attachments and the app's source; the reply's edit blocks
    (format: ``codesign/solve/edits.py``) are applied atomically. No harness takes part."""

    # Settings that do not change what it does: left out of content keys (codesign.build.behaviour).
    not_in_key = ("name",)
    # Text fields whose content (a prompt file, by default) is part of the solve's key (codesign.build).
    prompt_fields = ("system_prompt", "task_template")

    uses_harness = False
    name: str = "single_shot"
    max_source_tokens: Count = 60_000  # budget for source files (estimated at 4 characters per token)
    max_file_chars: Count = 80_000  # larger files are listed but not included
    max_wall_s: Seconds = 3600.0
    max_cost_usd: Dollars | None = None
    max_patch_kb: Count = 4096  # a final workspace that differs by more is an agent error (nothing graded)
    system_prompt: str = field(default_factory=lambda: prompts.load("single_shot.md"))
    task_template: str = field(default_factory=lambda: prompts.load("task.md"))

    def limits(self) -> Limits:
        return Limits(1, self.max_wall_s, self.max_cost_usd)

    def source(self, sandbox: Sandbox) -> tuple[list[tuple[str, str]], list[str]]:
        """(path, text) pairs within the budget, smallest files first, and the paths left out."""
        skip = " ".join(f"-not -path '{p}'" for p in _SKIP)
        listing = sandbox.execute(f"find . -type f {skip} -printf '%s %P\\n' | sort -n").output.split("\n")
        budget, included, omitted = self.max_source_tokens * 4, [], []
        for line in filter(None, (line.strip() for line in listing)):
            size, _, path = line.partition(" ")
            if int(size) > self.max_file_chars or int(size) > budget:
                omitted.append(path)
                continue
            try:
                text = sandbox.read_file(path)
            except (UnicodeDecodeError, OSError):
                omitted.append(path)
                continue
            budget -= len(text)
            included.append((path, text))
        return sorted(included), omitted

    def solve(
        self,
        model: Model,
        harness: Harness | None,
        sandbox: Sandbox,
        task: TaskView,
        recorder: SolveRecorder,
        preview: Preview | None = None,
    ) -> None:

        files, omitted = self.source(sandbox)
        source = "\n\n".join(f'<source path="{p}">\n{text}\n</source>' for p, text in files)
        if omitted:
            source += f"\n\n(not included: {', '.join(omitted)})"
        request = prompts.render(self.task_template, strict=False, task=task)
        parts: list[dict[str, Any]] = [{"type": "text", "text": request}]
        vision, audio = getattr(model, "supports_vision", True), getattr(model, "supports_audio", False)
        for attachment in task.attachments:
            parts += content_parts(attachment, vision=vision, audio=audio)
        parts.append({"type": "text", "text": f"## Source of the app\n\n{source}"})
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": parts},
        ]
        recorder.log(
            "prompt",
            messages=[messages[0], {"role": "user", "content": "[request, attachments, source]"}],
            files=[p for p, _ in files],
            omitted=omitted,
        )
        recorder.check_limits()
        reply = model.query(messages, [])
        recorder.model_replied(reply)
        edits = parse_edits(reply.message.get("content") or "")
        if not edits:
            raise AgentError("the reply contains no edit blocks")
        try:
            changed = apply_edits(sandbox, edits)
        except EditError as e:
            recorder.log("edits_rejected", problems=str(e))
            raise AgentError(f"edits not applied: {e}") from e
        for _ in edits:
            recorder.telemetry.count_tool("edit")
        recorder.log("edits_applied", files=changed)
        raise Submitted(f"applied {len(edits)} edit blocks to {len(changed)} files")
