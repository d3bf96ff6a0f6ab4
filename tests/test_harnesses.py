"""Real solvers against the scripted model server (real HTTP, OpenAI and Anthropic faces, streaming):
all three harnesses solve a task end to end, graded by the probe evaluator; single-shot; caps; retries."""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest

from codesign.errors import ConfigError
from codesign.runner import run
from codesign.solve.models.offline import apply_patch_command
from codesign.testing.model_server import Reply, ScriptedModelServer, ServedRequest, ToolCall
from tests.conftest import SUITE
from tests.helpers import compose_config

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TASK = "me-bakery-header-mockup"
KEY_ENV = "CODESIGN_SCRIPTED_KEY"
SOLUTION = (SUITE / TASK / "solution" / "solution.patch").read_text()


def solver(req: ServedRequest) -> Reply:
    """A scripted 'paid model' that solves the task with whichever shell tool the harness offers."""
    shell = next((n for n in ("shell", "bash", "Bash") if n in req.tool_names), None)
    if shell is None:  # a call without tools (e.g. a CLI's housekeeping request)
        return Reply("ok")
    if req.turn == 0:
        return Reply("I'll update the header.", [ToolCall(shell, {"command": apply_patch_command(SOLUTION)})])
    if shell == "bash":  # mini-swe-agent finishes with its submit command
        return Reply("Done.", [ToolCall("bash", {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"})])
    return Reply("Done: new header colour, tagline and rounder button.")


def run_cell(tmp_path: Path, server: ScriptedModelServer, *overrides: str, api: str = "openai",
             tasks: str = TASK) -> dict[str, pl.DataFrame]:  # fmt: skip
    base = server.openai_base if api == "openai" else server.anthropic_base
    cfg = compose_config(
        "model=litellm", "model.name=scripted", f"model.model={api}/scripted", f"model.api_base={base}",
        f"model.api_key_env={KEY_ENV}", "model.backoff_s=0.05", f"tasks.include=[{tasks}]", "executor=inline",
        "tracker=none", f"store.root={tmp_path / 'store'}", *overrides,
    )  # fmt: skip
    out = tmp_path / "run"
    out.mkdir(exist_ok=True)
    return run(cfg, out)


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-scripted-test")


def assert_telemetry_matches(row: dict, server: ScriptedModelServer) -> None:
    served = server.usage()
    assert row["turns"] == served["calls"]
    assert row["input_tokens"] == served["input_tokens"] and row["output_tokens"] == served["output_tokens"]
    assert row["tool_calls"] == served["tool_calls"]


@pytest.mark.parametrize(
    ("harness", "api", "extra"),
    [
        ("native", "openai", ["model.stream=true"]),  # OpenAI face, streamed
        ("mini_swe_agent", "openai", []),
        ("claude_code", "anthropic", ["model.stream=true"]),  # CLI → proxy → litellm → Anthropic face, streamed
    ],
)
def test_harness_solves_a_task_end_to_end(tmp_path, harness, api, extra):
    with ScriptedModelServer(solver) as server:
        tables = run_cell(tmp_path, server, f"harness={harness}", *extra, api=api)
    row = tables["tasks"].row(0, named=True)
    assert row["status"] == "ok" and row["exit_status"] == "submitted", row["exit_message"]
    assert row["strict"] == 1.0 and row["full_pass"] is True
    assert row["harness"] == harness
    assert_telemetry_matches(row, server)
    assert row["tools_shell"] >= 1
    assert all(r.api == api for r in server.requests)
    if extra == ["model.stream=true"]:
        assert any(r.stream for r in server.requests)
    trajectory = next((tmp_path / "store" / "trials").glob("*/trajectory.jsonl"))
    assert "sk-scripted-test" not in trajectory.read_text()  # secrets never reach trajectories


def test_single_shot_applies_edit_blocks(tmp_path):
    edits = (
        '<edit path="index.html">\n<search>\n.site-header { background: #8a5a44;\n</search>\n'
        "<replace>\n.site-header { background: #2f5d50;\n</replace>\n</edit>\n"
    )
    with ScriptedModelServer(lambda req: Reply(f"Here is the change.\n{edits}")) as server:
        tables = run_cell(tmp_path, server, "regime=single_shot")
    row = tables["tasks"].row(0, named=True)
    assert row["exit_status"] == "submitted" and row["harness"] == "none" and row["turns"] == 1
    verdicts = dict(tables["verdicts"].select("criterion_id", "verdict").iter_rows())
    assert verdicts["header-colour"] == "PASS" and verdicts["tagline"] == "FAIL"  # only the colour was changed
    request = server.requests[0]
    assert "index.html" in str(request.body["messages"]) and "image_url" in str(request.body["messages"])


def test_single_shot_unappliable_edit_is_recorded_not_applied(tmp_path):
    bad = (
        '<file path="notes.txt">\nhello\n</file>\n<edit path="index.html">\n<search>\nno such text\n</search>\n'
        "<replace>\nx\n</replace>\n</edit>\n"
    )
    with ScriptedModelServer(lambda req: Reply(bad)) as server:
        tables = run_cell(tmp_path, server, "regime=single_shot")
    row = tables["tasks"].row(0, named=True)
    assert row["exit_status"] == "agent_error" and "occurs 0 times" in row["exit_message"]
    patch = next((tmp_path / "store" / "trials").glob("*/patch.diff")).read_text()
    assert patch == ""  # atomic: the valid block was not applied either
    assert row["status"] == "ok"  # scored on the (unchanged) final workspace


@pytest.mark.parametrize("harness", ["native", "mini_swe_agent", "claude_code"])
def test_turn_cap_stops_the_solve(tmp_path, harness):
    def busy(req: ServedRequest) -> Reply:
        shell = next((n for n in ("shell", "bash", "Bash") if n in req.tool_names), None)
        return Reply("Still looking.", [ToolCall(shell, {"command": "ls"})]) if shell else Reply("ok")

    with ScriptedModelServer(busy) as server:
        tables = run_cell(tmp_path, server, f"harness={harness}", "regime.max_turns=3",
                          api="anthropic" if harness == "claude_code" else "openai")  # fmt: skip
    row = tables["tasks"].row(0, named=True)
    assert row["exit_status"] == "turn_cap", row["exit_message"]
    assert row["turns"] == 3 == server.usage()["calls"]
    assert tables["summary"].filter(pl.col("track") == "ALL")["capped"][0] == 1


def test_rate_limit_is_retried(tmp_path):
    seen = []

    def flaky(req: ServedRequest) -> Reply:
        seen.append(req)
        return Reply(status=429, retry_after_s=0.05) if len(seen) == 1 else solver(req)

    with ScriptedModelServer(flaky) as server:
        tables = run_cell(tmp_path, server, "harness=native")
    row = tables["tasks"].row(0, named=True)
    assert row["strict"] == 1.0 and row["exit_status"] == "submitted"
    assert len(server.requests) == server.usage()["calls"] + 1  # one refused call, retried
    assert row["turns"] == server.usage()["calls"]


def test_missing_key_fails_before_any_trial(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = compose_config("model=gpt-6-astra", "executor=inline", "tracker=none", f"store.root={tmp_path / 's'}")
    with pytest.raises(ConfigError, match=r"\$OPENAI_API_KEY"):
        run(cfg, tmp_path)
    assert not (tmp_path / "s").exists()  # nothing started


def test_cost_budget_stops_new_trials(tmp_path, capsys):
    with ScriptedModelServer(lambda req: Reply("No changes needed.", input_tokens=1000, output_tokens=1000)) as server:
        tables = run_cell(
            tmp_path, server, "model.input_cost_per_mtok=1000", "model.output_cost_per_mtok=1000",
            "budget.max_cost_usd=1.0", "executor.max_concurrency=1",
            tasks="me-bakery-header-mockup,me-recipe-servings-text,me-pricing-annual-toggle",
        )  # fmt: skip
    tasks = tables["tasks"]
    assert tasks.filter(pl.col("status") == "ok").height == 1  # $2 spent by the first trial: the rest never start
    assert tasks.filter(pl.col("status") == "skipped").height == 2
    assert tasks.filter(pl.col("status") == "ok")["cost_usd"][0] == pytest.approx(2.0)
    assert tasks.filter(pl.col("status") == "ok")["cost_source"][0] == "config"
    assert "cost budget of $1.00 reached" in capsys.readouterr().err
    assert server.usage()["calls"] == 1
    assert os.environ[KEY_ENV] == "sk-scripted-test"


def test_native_tools_show_attachments_and_the_running_app(tmp_path):
    def looker(req: ServedRequest) -> Reply:
        if req.turn == 0:
            return Reply("Let me look.", [ToolCall("view_attachment", {"name": "header-mockup.png"}),
                                          ToolCall("screenshot", {"route": "/", "viewport": "mobile"})])  # fmt: skip
        return Reply("Seen both.")

    with ScriptedModelServer(looker) as server:
        tables = run_cell(tmp_path, server, "harness=native")
    row = tables["tasks"].row(0, named=True)
    assert row["exit_status"] == "submitted" and row["tools_attachment"] == 1 and row["tools_screenshot"] == 1
    shown = server.requests[1].messages[-1]  # images follow the tool results as a user message
    assert shown["role"] == "user" and sum(p["type"] == "image_url" for p in shown["content"]) == 2
    tool_results = [m["content"] for m in server.requests[1].messages if m["role"] == "tool"]
    assert any("screenshot of / at mobile" in t for t in tool_results)


MISTAKES = {  # (tool name or None for the harness's shell, arguments, raw JSON)
    "unknown_tool": ("run_shell", {"command": "ls"}, None),
    "wrong_argument": (None, {"cmd": "ls"}, None),
    "missing_argument": (None, {}, None),
    "unparsable_arguments": (None, {}, '{"command": "ls'),
}


ERRORS = {  # each harness's own answer to each mistake, as it must reach the model's next request
    ("native", "unknown_tool"): "unknown tool 'run_shell'; available: shell",
    ("native", "wrong_argument"): "unknown argument 'cmd'",
    ("native", "missing_argument"): "shell: missing argument 'command'",
    ("native", "unparsable_arguments"): "Unterminated string",
    ("mini_swe_agent", "unknown_tool"): "Unknown tool 'run_shell'",
    ("mini_swe_agent", "wrong_argument"): "Missing 'command' argument in bash tool call",
    ("mini_swe_agent", "missing_argument"): "Missing 'command' argument in bash tool call",
    ("mini_swe_agent", "unparsable_arguments"): "Error parsing tool call arguments: Unterminated string",
    ("claude_code", "unknown_tool"): "No such tool available: run_shell",
    ("claude_code", "wrong_argument"): "An unexpected parameter `cmd` was provided",
    ("claude_code", "missing_argument"): "The required parameter `command` is missing",
    ("claude_code", "unparsable_arguments"): "The required parameter `command` is missing",
}


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
@pytest.mark.parametrize("harness", ["native", "mini_swe_agent", "claude_code"])
def test_a_tool_call_mistake_goes_back_to_the_model_and_the_loop_goes_on(tmp_path, harness, mistake):
    """The model's mistake is the model's: it sees an error, corrects itself, and the task is solved —
    never an infrastructure error."""
    name, args, raw = MISTAKES[mistake]
    calls: list[int] = []  # the harness's calls with tools so far (a rejected call may not enter the history)

    def policy(req: ServedRequest) -> Reply:
        shell = next((n for n in ("shell", "bash", "Bash") if n in req.tool_names), None)
        if shell is None:
            return Reply("ok")
        calls.append(1)
        if len(calls) == 1:
            return Reply("Let me look.", [ToolCall(name or shell, args, raw)])
        if len(calls) == 2:
            return Reply("Applying the change.", [ToolCall(shell, {"command": apply_patch_command(SOLUTION)})])
        if shell == "bash":
            return Reply("Done.", [ToolCall("bash", {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"})])
        return Reply("Done.")

    with ScriptedModelServer(policy) as server:
        tables = run_cell(tmp_path, server, f"harness={harness}", api="openai")
    row = tables["tasks"].row(0, named=True)
    assert row["status"] == "ok" and row["exit_status"] == "submitted", (row["exit_status"], row["exit_message"])
    assert row["strict"] == 1.0
    # The error went back to the model: what the harness added to the conversation after the mistaken call
    # (not the model's own call, which names the tool and arguments too) carries the harness's error.
    first, second = [r for r in server.requests if r.tool_names][:2]
    added = [m for m in second.messages[len(first.messages) :] if m.get("role") != "assistant"]
    assert ERRORS[harness, mistake] in json.dumps(added), added
