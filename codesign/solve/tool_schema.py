"""An OpenAI-style function tool: what the native harness offers a solver and the judge's browser tools."""

from __future__ import annotations

from typing import Any


def function_tool(name: str, description: str, /, optional: tuple[str, ...] = (), **params: str) -> dict[str, Any]:
    """A tool ``name`` whose string parameters are ``params`` (name → description), all required but ``optional``."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {k: {"type": "string", "description": v} for k, v in params.items()},
                "required": [p for p in params if p not in optional],
            },
        },
    }
