"""mini-swe-agent as a harness: its ``DefaultAgent``, its prompts and its litellm model, in our sandbox.

The agent runs unchanged; two thin adapters connect it: an Environment that executes its bash
actions in the trial's sandbox, and a subclass of its ``LitellmModel`` whose transport goes through
codesign's model (so every call is recorded and capped like in every other harness, and offline
models such as the oracle work too).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from codesign._protocols import Model, ModelReply, Recorder, Sandbox, Screenshots
from codesign._types import Seconds, TaskView
from codesign.solve import prompts
from codesign.solve.ended import AgentError, CostCapReached, Submitted, TimeCapReached, TurnCapReached

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def _mswea_config(name: str) -> dict[str, Any]:
    import minisweagent

    return yaml.safe_load((Path(minisweagent.__file__).parent / "config" / name).read_text())


class _SandboxEnvironment:
    """mini-swe-agent's Environment protocol over a codesign sandbox."""

    def __init__(self, sandbox: Sandbox, recorder: Recorder, timeout_s: float):
        self.sandbox, self.recorder, self.timeout_s = sandbox, recorder, timeout_s
        self.config = {"cwd": str(sandbox.workspace), "timeout": timeout_s}

    def execute(self, action: dict, cwd: str = "", *, timeout: int | None = None) -> dict[str, Any]:
        from minisweagent.exceptions import Submitted as MsweaSubmitted

        command = action.get("command", "")
        result = self.sandbox.execute(command, timeout=timeout or self.timeout_s)
        self.recorder.tool_called("bash", {"command": command}, result.output)
        output = {
            "output": result.output,
            "returncode": -1 if result.returncode is None else result.returncode,
            "exception_info": "the command timed out and was killed" if result.timed_out else "",
        }
        lines = result.output.lstrip().splitlines(keepends=True)
        if lines and lines[0].strip() == "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" and result.returncode == 0:
            raise MsweaSubmitted(
                {
                    "role": "exit",
                    "content": "".join(lines[1:]),
                    "extra": {"exit_status": "Submitted", "submission": "".join(lines[1:])},
                }
            )
        return output

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        import platform

        return {**self.config, **platform.uname()._asdict(), **kwargs}

    def serialize(self) -> dict[str, Any]:
        return {"info": {"config": {"environment": self.config, "environment_type": "codesign.sandbox"}}}


def _routed_model(model: Model, recorder: Recorder) -> Any:
    """A mini-swe-agent LitellmModel whose every call goes through codesign's model and recorder."""
    import litellm
    from minisweagent.models.litellm_model import LitellmModel as MsweaLitellmModel

    from codesign.solve.models.litellm_model import LitellmModel, usage_of

    class Routed(MsweaLitellmModel):
        # codesign's model already retried transient errors; caps (Ended) must stop the agent at once.
        abort_exceptions = [Exception]  # noqa: RUF012

        def _query(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
            recorder.check_limits()
            tools = kwargs.pop("tools", None) or [_bash_tool()]
            if isinstance(model, LitellmModel):  # a real endpoint: its own client, with codesign's retries
                response = model.complete(messages, tools=tools, **kwargs)
                usage = usage_of(response)
                cost, source = model.cost(response, usage)
                message = response.choices[0].message.model_dump(exclude_none=True)
                recorder.model_replied(ModelReply(message, usage, cost, source))
                return response
            reply = model.query(messages, tools)
            message = dict(reply.message)
            if not message.get("tool_calls"):  # an offline model's "done" becomes mini-swe-agent's submit
                message["tool_calls"] = [
                    {
                        "id": "call_submit",
                        "type": "function",
                        "function": {"name": "bash", "arguments": json.dumps({"command": SUBMIT})},
                    }
                ]
            recorder.model_replied(ModelReply(message, reply.usage, reply.cost_usd, reply.cost_source))
            return litellm.ModelResponse(
                choices=[{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                usage={
                    "prompt_tokens": reply.usage.input_tokens,
                    "completion_tokens": reply.usage.output_tokens,
                    "total_tokens": reply.usage.input_tokens + reply.usage.output_tokens,
                },
            )

        def _calculate_cost(self, response: Any) -> dict[str, float]:
            return {"cost": 0.0}  # codesign's recorder keeps the real figure and its source

    return Routed(model_name=getattr(model, "model", getattr(model, "name", "codesign")), cost_tracking="ignore_errors")


def _bash_tool() -> dict[str, Any]:
    from minisweagent.models.utils.actions_toolcall import BASH_TOOL

    return BASH_TOOL


@dataclass
class MiniSweAgentHarness:
    # Settings that do not change what it does: left out of content keys (codesign.build.behaviour).
    not_in_key = ("name",)
    # Text fields whose content (a prompt file, by default) is part of the solve's key (codesign.build).
    prompt_fields = ("task_template",)
    name: str = "mini_swe_agent"
    config_file: str = "mini.yaml"  # mini-swe-agent's own packaged agent config (prompts, templates)
    command_timeout_s: Seconds = 120.0
    agent: dict[str, Any] = field(default_factory=dict)  # overrides of its AgentConfig (templates, limits)
    task_template: str = field(default_factory=lambda: prompts.load("task.md"))

    @classmethod
    def key_material(cls, cfg: dict[str, Any]) -> dict[str, str]:
        """Its agent config file and prompts ship with mini-swe-agent: the package's release decides them."""
        from importlib.metadata import PackageNotFoundError, version

        try:
            return {"mini-swe-agent": version("mini-swe-agent")}
        except PackageNotFoundError:  # preflight refuses the harness then, saying how to install it
            return {"mini-swe-agent": "not installed"}

    def solve(
        self, model: Model, sandbox: Sandbox, task: TaskView, recorder: Recorder, preview: Screenshots | None = None
    ) -> None:
        os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
        os.environ.setdefault("MSWEA_COST_TRACKING", "ignore_errors")
        os.environ.setdefault("MSWEA_GLOBAL_CONFIG_DIR", str(Path(getattr(sandbox, "home", "/tmp")) / ".mswea"))
        from minisweagent.agents.default import DefaultAgent

        agent_cfg = {**_mswea_config(self.config_file).get("agent", {}), **self.agent}
        limits = recorder.limits
        agent_cfg |= {
            "step_limit": limits.max_turns,
            "cost_limit": 0,
            "output_path": None,
            "wall_time_limit_seconds": int(limits.max_wall_s),
        }
        request = prompts.render(self.task_template, task=task)
        agent = DefaultAgent(
            _routed_model(model, recorder), _SandboxEnvironment(sandbox, recorder, self.command_timeout_s), **agent_cfg
        )
        recorder.log("prompt", messages=[{"role": "user", "content": request}])
        result = agent.run(request)  # a cap hit at the model boundary propagates as our own Ended
        status, message = str(result.get("exit_status", "")), str(result.get("submission", ""))
        recorder.log("mini_swe_agent_exit", exit_status=status)
        if status == "Submitted":
            raise Submitted(message)
        if status in ("LimitsExceeded", "TimeExceeded"):
            if recorder.elapsed() >= limits.max_wall_s:
                raise TimeCapReached("mini-swe-agent hit the wall-time cap")
            if limits.max_cost_usd is not None and recorder.telemetry.cost_usd >= limits.max_cost_usd:
                raise CostCapReached("mini-swe-agent hit the cost cap")
            raise TurnCapReached(f"mini-swe-agent hit its step limit of {limits.max_turns}")
        raise AgentError(f"mini-swe-agent ended with {status}: {message[:1000]}")
