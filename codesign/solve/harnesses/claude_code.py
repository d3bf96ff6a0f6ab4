"""The Claude Code CLI as a harness, headless, pointed at codesign's model proxy.

The CLI runs in the sandbox's workspace (``--print --output-format stream-json --verbose``, permissions
bypassed inside the sandbox, turn cap). ``ANTHROPIC_BASE_URL`` points at a :class:`ModelProxy` that
answers with the trial's model — any litellm endpoint or an offline model — and every model alias the
CLI might use is pinned to it, so no call can reach another model.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codesign._protocols import Model, Recorder, Sandbox, Screenshots
from codesign._types import NonNegative, TaskView
from codesign.errors import EnvironmentSetupError
from codesign.solve import prompts
from codesign.solve.ended import AgentError, Submitted, TimeCapReached, TurnCapReached
from codesign.solve.proxy import ModelProxy

PACKAGE = "@anthropic-ai/claude-code"
_ALIASES = (
    "ANTHROPIC_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "ANTHROPIC_SMALL_FAST_MODEL",
    "CLAUDE_CODE_SUBAGENT_MODEL",
)


def tools_dir() -> Path:
    """Where agent CLIs are installed: ``$CODESIGN_TOOLS``, else ``.tools/`` in the checkout."""
    default = Path(__file__).resolve().parents[3] / ".tools"
    return Path(os.environ.get("CODESIGN_TOOLS", default)).expanduser()


def ensure_cli(version: str) -> Path:
    """The ``claude`` executable of ``version``, installed with npm into a project-local prefix on first use."""
    prefix = tools_dir() / f"claude-code-{version}"
    exe = prefix / "node_modules" / ".bin" / "claude"
    if exe.is_file():
        return exe
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix.parent / f".claude-code-{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # concurrent trials install once
        if not exe.is_file():
            # A project-local install (not --prefix, which would also move npm's global config: its CA settings)
            (prefix / "package.json").write_text('{"private": true}\n')
            proc = subprocess.run(
                ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", f"{PACKAGE}@{version}"],
                cwd=prefix,
                capture_output=True,
                text=True,
                timeout=600,
            )
            if proc.returncode != 0 or not exe.is_file():
                raise EnvironmentSetupError(
                    f"installing {PACKAGE}@{version} failed: {(proc.stderr or proc.stdout)[-1500:]}",
                    "check that npm and the npm registry are reachable, or set harness.cli to a claude binary",
                )
    return exe


@dataclass
class ClaudeCodeHarness:
    # Settings that do not change what it does: left out of content keys (codesign.build.behaviour).
    not_in_key = ("name", "max_api_retries")
    # Text fields whose content (a prompt file, by default) is part of the solve's key (codesign.build).
    prompt_fields = ("task_template", "instructions")
    # The CLI and its model proxy run on this machine; a container would see neither.
    supported_sandboxes = ("LocalSandbox",)
    name: str = "claude_code"
    version: str = "2.1.197"  # pinned: the newest release that installs cleanly on Node 20
    cli: str | None = None  # a claude binary to use instead of the pinned install
    max_api_retries: NonNegative = 2  # CLAUDE_CODE_MAX_RETRIES: the default 10 costs minutes against a dead endpoint
    extra_args: list[str] = field(default_factory=list)
    task_template: str = field(default_factory=lambda: prompts.load("task.md"))
    instructions: str = field(default_factory=lambda: prompts.load("claude_code.md"))

    def check(self) -> None:
        self.executable()

    def executable(self) -> Path:
        return Path(self.cli) if self.cli else ensure_cli(self.version)

    def solve(
        self, model: Model, sandbox: Sandbox, task: TaskView, recorder: Recorder, preview: Screenshots | None = None
    ) -> None:
        exe = self.executable()
        prompt = prompts.render(self.task_template, task=task) + "\n" + self.instructions
        recorder.log("prompt", messages=[{"role": "user", "content": prompt}])
        alias = f"codesign-{getattr(model, 'name', 'model')}"
        with ModelProxy(model, recorder) as proxy:
            home = Path(sandbox.home) if hasattr(sandbox, "home") else Path("/tmp")
            # A confined sandbox shows the CLI read-only and reaches the proxy through its relay (no network).
            if hasattr(sandbox, "expose"):
                sandbox.expose(exe.resolve().parent if self.cli else exe.parents[2])
            base_url = sandbox.forward(proxy.base_url) if hasattr(sandbox, "forward") else proxy.base_url
            env = {
                "ANTHROPIC_BASE_URL": base_url,
                "ANTHROPIC_API_KEY": proxy.token,
                "CLAUDE_CONFIG_DIR": str(home / ".claude"),
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_TELEMETRY": "1",
                "DISABLE_AUTOUPDATER": "1",
                "DISABLE_ERROR_REPORTING": "1",
                "CLAUDE_CODE_MAX_RETRIES": str(self.max_api_retries),
                **dict.fromkeys(_ALIASES, alias),
            }
            if os.geteuid() == 0:
                env["IS_SANDBOX"] = "1"  # otherwise --dangerously-skip-permissions refuses to run as root
            argv = [str(exe), "--print", "--output-format", "stream-json", "--verbose", "--max-turns",
                    str(recorder.limits.max_turns), "--dangerously-skip-permissions", "--model", alias,
                    *self.extra_args, prompt]  # fmt: skip
            remaining = max(1.0, recorder.limits.max_wall_s - recorder.elapsed())
            result = sandbox.execute(shlex.join(argv), timeout=remaining, env=env)
        final = None
        for line in result.output.splitlines():
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                recorder.log("cli_output", text=line[:2000])
                continue
            recorder.log("cli", data=event)
            if event.get("type") == "result":
                final = event
        if final is not None:
            recorder.log(
                "cli_result",
                cli_cost_usd=final.get("total_cost_usd"),
                num_turns=final.get("num_turns"),
                subtype=final.get("subtype"),
            )
        raise self._ending(proxy, result.timed_out, final, result.output)

    @staticmethod
    def _ending(proxy: ModelProxy, timed_out: bool, final: dict[str, Any] | None, output: str) -> Exception:
        if proxy.ended is not None:  # a cap or a failed endpoint, seen at the proxy
            return proxy.ended
        if timed_out:
            return TimeCapReached("the Claude Code process hit the wall-time cap and was killed")
        if final is None:
            return AgentError(f"Claude Code ended without a result: {output[-1500:]}")
        if final.get("subtype") == "error_max_turns":
            return TurnCapReached(f"Claude Code stopped at its turn cap ({final.get('num_turns')} turns)")
        if final.get("is_error") or final.get("subtype") != "success":
            return AgentError(f"Claude Code ended with {final.get('subtype')}: {str(final.get('result'))[:1500]}")
        return Submitted(str(final.get("result") or "")[:2000])
