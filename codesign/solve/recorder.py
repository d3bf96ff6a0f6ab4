"""Telemetry, trajectory and caps for one solve. Every harness reports through the same recorder."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from codesign._protocols import ModelReply
from codesign._types import Limits, Telemetry, weaker_cost_source
from codesign.redact import redact_data
from codesign.solve.ended import CostCapReached, TimeCapReached, TurnCapReached

_MEDIA_TOOLS = re.compile(r"\b(ffmpeg|ffprobe|sox|whisper|faster[-_]whisper|cv2|opencv|pdftoppm|pdftotext|tesseract)\b")


def tool_kind(name: str, args: dict[str, Any]) -> str:
    """Classify a tool call (any harness's vocabulary) into the paper's tool families."""
    n = name.lower()
    if n in {"shell", "bash", "execute", "run"}:
        command = str(args.get("command", ""))
        return "media" if _MEDIA_TOOLS.search(command) else "shell"
    if n in {"write_file", "edit_file", "write", "edit", "multiedit", "str_replace", "create", "notebookedit"}:
        return "edit"
    if n in {"view_attachment", "view_image"}:
        return "attachment"
    if n in {"screenshot", "browser_screenshot"}:
        return "screenshot"
    if n in {"read_file", "read", "glob", "grep", "ls", "list_files"}:
        return "read"
    return "other"


class SolveRecorder:
    """Counts turns, tool calls, tokens and cost; writes the trajectory as JSON lines; enforces caps."""

    def __init__(self, trajectory_path: Path, limits: Limits):
        self.path, self.limits = Path(trajectory_path), limits
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("a", encoding="utf-8")
        self.telemetry = Telemetry(cost_source="none")
        self.started = time.monotonic()

    def log(self, event: str, /, **payload: Any) -> None:
        row = {"t": round(time.monotonic() - self.started, 3), "event": event, **payload}
        self._file.write(json.dumps(redact_data(row), default=str) + "\n")
        self._file.flush()

    def check_limits(self) -> None:
        """Called before every model call: the cap that is hit ends the solve with its own status."""
        t, lim = self.telemetry, self.limits
        if t.turns >= lim.max_turns:
            raise TurnCapReached(f"turn cap of {lim.max_turns} reached")
        if self.elapsed() >= lim.max_wall_s:
            raise TimeCapReached(f"wall-time cap of {lim.max_wall_s:.0f} s reached")
        if lim.max_cost_usd is not None and t.cost_usd >= lim.max_cost_usd:
            raise CostCapReached(f"cost cap of ${lim.max_cost_usd:.2f} reached (spent ${t.cost_usd:.4f})")

    def model_replied(self, reply: ModelReply) -> None:
        t = self.telemetry
        t.turns += 1
        t.add_usage(reply.usage)
        if reply.cost_usd is not None:
            t.cost_usd += reply.cost_usd
        t.cost_source = weaker_cost_source(t.cost_source, reply.cost_source)
        self.log("assistant", message=reply.message, usage=vars(reply.usage), cost_usd=reply.cost_usd)

    def count_tool_call(self, name: str, args: dict[str, Any]) -> None:
        """A tool call seen in a model reply whose execution happens elsewhere (inside an agent CLI)."""
        self.telemetry.count_tool(tool_kind(name, args))
        self.log("tool_call", name=name, args=args)

    def tool_called(self, name: str, args: dict[str, Any], output: str) -> None:
        self.telemetry.count_tool(tool_kind(name, args))
        self.log("tool", name=name, args=args, output=output[:20_000])

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def close(self) -> Telemetry:
        self.telemetry.wall_s = round(self.elapsed(), 3)
        self._file.close()
        return self.telemetry
