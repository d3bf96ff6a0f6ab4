"""codesign's own tool-calling agent: a loop of model call → tool calls → observations.

Small on purpose (mini-swe-agent's lesson): the whole control flow is ``solve`` and ``step``.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codesign._protocols import Model, Recorder, Sandbox, Screenshots
from codesign._types import Count, TaskView
from codesign.solve import prompts
from codesign.solve.attachments import content_parts, downscale
from codesign.solve.ended import AgentError, Submitted
from codesign.solve.preview import PreviewError
from codesign.solve.tool_schema import function_tool

TOOLS = [
    function_tool(
        "shell",
        "Run a bash command in the app's folder; returns combined stdout/stderr and exit code.",
        command="the command",
    ),
    function_tool("read_file", "Read a text file of the app.", path="path relative to the app folder"),
    function_tool("write_file", "Create or overwrite a file of the app.", path="relative path", content="full content"),
    function_tool(
        "edit_file",
        "Replace one exact, unique occurrence of old_text with new_text in a file.",
        path="relative path",
        old_text="text to replace (must occur once)",
        new_text="replacement",
    ),
    function_tool(
        "view_attachment",
        "Look at one of the user's attachments (images, video keyframes, document pages).",
        name="file name in _attachments/",
    ),
    function_tool(
        "screenshot",
        "Build and open the app as it is now and return a screenshot.",
        optional=("route", "viewport"),
        route="route to open, e.g. / (default /)",
        viewport="desktop or mobile (default desktop)",
    ),
    function_tool("finish", "Call when the revision is complete.", optional=("summary",), summary="what you changed"),
]


class ToolError(Exception):
    """A tool call the model can recover from: its message becomes the observation."""


class ArgumentError(ToolError):
    """A call to an unknown tool, or with missing, unknown or non-text arguments (a malformed call)."""


_PARAMETERS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}


def _check_arguments(name: str, args: dict[str, Any]) -> None:
    if name not in _PARAMETERS:
        raise ArgumentError(f"unknown tool {name!r}; available: {', '.join(_PARAMETERS)}")
    spec = _PARAMETERS[name]
    expected, required = spec["properties"], spec["required"]
    problems = [f"missing argument {k!r}" for k in required if k not in args]
    problems += [f"unknown argument {k!r}" for k in args if k not in expected]
    problems += [
        f"argument {k!r} must be a string" for k, v in args.items() if k in expected and not isinstance(v, str)
    ]
    if problems:
        raise ArgumentError(f"{name}: {'; '.join(problems)}; {name} takes {', '.join(expected) or 'no arguments'}")


@dataclass
class _Tools:
    """The tools that need more than the sandbox: attachments and the app preview."""

    sandbox: Sandbox
    task: TaskView
    preview: Screenshots | None
    model: Model

    def attachment(self, name: str) -> tuple[str, list[dict[str, Any]]]:
        found = next((a for a in self.task.attachments if a["name"] == Path(name).name), None)
        if found is None:
            names = ", ".join(a["name"] for a in self.task.attachments) or "none"
            raise ToolError(f"no attachment {name!r}; attachments: {names}")
        vision, audio = getattr(self.model, "supports_vision", True), getattr(self.model, "supports_audio", False)
        return f"attachment {found['name']} is shown below", content_parts(found, vision=vision, audio=audio)

    def screenshot(self, route: str, viewport: str) -> tuple[str, list[dict[str, Any]]]:
        if self.preview is None:
            raise ToolError("screenshots are not available in this run")
        if viewport not in ("desktop", "mobile"):
            raise ToolError("viewport must be desktop or mobile")
        png = self.preview.screenshot(self.sandbox, route if route.startswith("/") else "/" + route, viewport)
        image, mime = downscale(png)
        return f"screenshot of {route} at {viewport} is shown below", [
            {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{base64.b64encode(image).decode()}"}}
        ]


@dataclass
class NativeHarness:
    # Settings that do not change what it does: left out of content keys (codesign.build.behaviour).
    not_in_key = ("name",)
    # Text fields whose content (a prompt file, by default) is part of the solve's key (codesign.build).
    prompt_fields = ("system_template", "task_template")
    name: str = "native"
    system_template: str = field(default_factory=lambda: prompts.load("native_system.md"))
    task_template: str = field(default_factory=lambda: prompts.load("task.md"))
    max_observation_chars: Count = 12_000
    max_format_errors: Count = 3  # consecutive turns with unusable tool calls before giving up

    def solve(
        self, model: Model, sandbox: Sandbox, task: TaskView, recorder: Recorder, preview: Screenshots | None = None
    ) -> None:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": prompts.render(self.system_template, task=task)},
            {"role": "user", "content": prompts.render(self.task_template, task=task)},
        ]
        recorder.log("prompt", messages=messages)
        format_errors = 0
        while True:
            recorder.check_limits()
            usable = self.step(model, sandbox, messages, recorder, _Tools(sandbox, task, preview, model))
            format_errors = 0 if usable else format_errors + 1
            if format_errors >= self.max_format_errors:
                raise AgentError(f"{format_errors} consecutive turns without a usable tool call")

    def step(
        self, model: Model, sandbox: Sandbox, messages: list[dict[str, Any]], rec: Recorder, tools: _Tools
    ) -> bool:
        """One turn. Returns False when the model's tool calls were unusable (a format error)."""
        reply = model.query(messages, TOOLS)
        rec.model_replied(reply)
        message = {k: v for k, v in reply.message.items() if v is not None}
        messages.append(message)
        calls = message.get("tool_calls") or []
        if not calls:  # a plain answer means the agent considers itself done
            raise Submitted(message.get("content") or "")
        usable, shown = True, []
        for call in calls:
            name = call["function"]["name"]
            try:
                args = json.loads(call["function"].get("arguments") or "{}")
                if not isinstance(args, dict):
                    raise ValueError("arguments must be a JSON object")
                _check_arguments(name, args)
                output = self.execute(name, args, sandbox, tools)
                if isinstance(output, tuple):  # text for the tool result, pictures for a user message after it
                    output, parts = output
                    shown += parts
            except (ValueError, ToolError, PreviewError, PermissionError, OSError) as e:
                # The model's mistake goes back to it as the tool's answer; malformed calls count towards
                # max_format_errors, after which the solve ends as an agent error (never an infra error).
                usable = usable and not isinstance(e, ValueError | ArgumentError)
                args, output = {}, f"error: {e}"
            rec.tool_called(name, args, output)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": self._clip(output)})
            if name == "finish" and not output.startswith("error"):
                raise Submitted(args.get("summary", ""))
        if shown:  # tool results carry text only; images follow as a user message
            messages.append({"role": "user", "content": shown})
        return usable

    def execute(self, name: str, args: dict[str, Any], sandbox: Sandbox, tools: _Tools) -> str | tuple[str, list]:
        match name:
            case "shell":
                r = sandbox.execute(args["command"])
                status = "timed out (process group killed)" if r.timed_out else f"exit code {r.returncode}"
                return f"{r.output}\n[{status}]"
            case "read_file":
                return sandbox.read_file(args["path"])
            case "write_file":
                sandbox.write_file(args["path"], args["content"])
                return f"wrote {args['path']}"
            case "edit_file":
                text = sandbox.read_file(args["path"])
                n = text.count(args["old_text"])
                if n != 1:
                    raise ToolError(f"old_text occurs {n} times in {args['path']}; it must occur exactly once")
                sandbox.write_file(args["path"], text.replace(args["old_text"], args["new_text"]))
                return f"edited {args['path']}"
            case "view_attachment":
                return tools.attachment(args["name"])
            case "screenshot":
                return tools.screenshot(args.get("route") or "/", args.get("viewport") or "desktop")
            case "finish":
                return "finished"
            case _:  # _check_arguments refused it already
                raise ArgumentError(f"unknown tool {name!r}")

    def _clip(self, text: str) -> str:
        limit = self.max_observation_chars
        return text if len(text) <= limit else f"{text[: limit // 2]}\n... [clipped] ...\n{text[-limit // 2 :]}"
