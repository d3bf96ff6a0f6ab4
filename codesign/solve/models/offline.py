"""Offline models: deterministic policies that need no endpoint, for the embedded default and tests.

They speak the same tool-calling protocol as real models, so ``model=oracle`` drives any harness
through its real loop: the oracle answers its first turn with a shell call that applies the task's
reference patch, then says it is done. ``noop`` says it is done at once.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from codesign._protocols import ModelReply
from codesign._types import Usage
from codesign.errors import ConfigError
from codesign.solve.ended import AgentError

_SHELL_TOOLS = {"shell": "command", "bash": "command", "Bash": "command"}
APPLIED = "CODESIGN_PATCH_APPLIED"  # printed by apply_patch_command's command once the patch applied


def apply_patch_command(patch: str) -> str:
    """A shell command that applies ``patch`` in the current folder: git where the sandbox has it, else
    POSIX patch (minimal images such as busybox). A quoted heredoc keeps the shell off the patch text."""
    patch = patch if patch.endswith("\n") else patch + "\n"
    eof = "CODESIGN_PATCH_" + hashlib.sha256(patch.encode()).hexdigest()[:12]
    target = '"${HOME:-/tmp}/.codesign-reference.patch"'
    return (
        f"cat > {target} <<'{eof}'\n{patch}{eof}\n"
        f"if command -v git >/dev/null 2>&1; then git apply --whitespace=nowarn {target}; "
        f"else patch -p1 < {target}; fi && echo {APPLIED[:8]}''{APPLIED[8:]}"  # the command's text lacks the word
    )


def _final(text: str) -> ModelReply:
    return ModelReply({"role": "assistant", "content": text}, Usage(), 0.0, "offline")


@dataclass
class OracleModel:
    """Applies the reference solution. Built with the task's patch: the only model that may see it."""

    # Settings that do not change what it does: left out of content keys (codesign.build.behaviour).
    not_in_key = ("name",)

    reference_patch: str
    name: str = "oracle"
    uses_reference: bool = True
    near_miss: int = 0  # handed the task's n-th near miss (solution/near-misses/) instead of its reference
    _applied: bool = False
    _by_shell: bool = False

    def query(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelReply:
        if self._applied:
            if self._by_shell and APPLIED not in json.dumps(messages, default=str):  # the shell said it failed
                seen = json.dumps(messages[-1], default=str)[-1500:]
                raise AgentError(f"the task's reference patch did not apply (fix solution/solution.patch): {seen}")
            return _final("Applied the reference solution.")
        self._applied = True
        if not tools:  # single-shot: answer with the patch in the edit format's diff block
            return _final(f"```diff\n{self.reference_patch}```")
        names = {t["function"]["name"] for t in tools}
        shell = next((n for n in _SHELL_TOOLS if n in names), None)
        if shell is None:
            raise ConfigError(f"the oracle needs a shell tool; this harness offers {sorted(names)}")
        command = apply_patch_command(self.reference_patch)
        self._by_shell = True
        call = {
            "id": "call_oracle_1",
            "type": "function",
            "function": {"name": shell, "arguments": json.dumps({_SHELL_TOOLS[shell]: command})},
        }
        return ModelReply({"role": "assistant", "content": None, "tool_calls": [call]}, Usage(), 0.0, "offline")


@dataclass
class NoopModel:
    """Changes nothing: the floor every real solver should beat."""

    # Settings that do not change what it does: left out of content keys (codesign.build.behaviour).
    not_in_key = ("name",)

    name: str = "noop"

    def query(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelReply:
        return _final("No changes.")
