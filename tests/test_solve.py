"""Solving: the native harness loop, offline models, caps and what the solver can see. Models other than the
offline ones are real litellm calls over HTTP to the scripted model server on loopback."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from codesign.solve.run import solve_task
from codesign.tasks.loader import load_task
from codesign.testing.model_server import Policy, Reply, ScriptedModelServer, ToolCall, script
from codesign.workspace import apply_patch, copy_tree
from tests.conftest import SUITE

HARNESS = {"_target_": "codesign.solve.harnesses.native.NativeHarness"}
SANDBOX = {"_target_": "codesign.sandbox.local.LocalSandbox", "command_timeout_s": 30}


def regime(max_turns: int = 120) -> dict[str, Any]:
    return {"_target_": "codesign.solve.regimes.Agentic", "max_turns": max_turns}


def configs(model: dict[str, Any], max_turns: int = 120) -> dict[str, Any]:
    return {"model": model, "harness": HARNESS, "regime": regime(max_turns), "sandbox": SANDBOX}


KEY_ENV = "CODESIGN_SOLVE_TEST_KEY"


@pytest.fixture
def served(monkeypatch) -> Iterator[Callable[[Policy], tuple[dict[str, Any], ScriptedModelServer]]]:
    """The scripted model server over real HTTP, reached through litellm as a provider would be: ``served(policy)``
    starts it and returns the model's config (priced at 50 / 100 USD per million tokens, never retried) and
    the server (what it was sent)."""
    monkeypatch.setenv(KEY_ENV, "sk-solve-test")
    servers: list[ScriptedModelServer] = []

    def serve(policy: Policy) -> tuple[dict[str, Any], ScriptedModelServer]:
        server = ScriptedModelServer(policy).start()
        servers.append(server)
        model = {"_target_": "codesign.solve.models.litellm_model.LitellmModel", "name": "scripted",
                 "model": "openai/scripted", "api_base": server.openai_base, "api_key_env": KEY_ENV,
                 "input_cost_per_mtok": 50.0, "output_cost_per_mtok": 100.0, "max_retries": 0}  # fmt: skip
        return model, server

    yield serve
    for server in servers:
        server.stop()


def shell(command: str) -> ToolCall:
    return ToolCall("shell", {"command": command})


def test_oracle_reproduces_the_reference_patch(tmp_path, node_cache):
    task = load_task(SUITE / "me-bakery-header-mockup")
    result = solve_task(
        task,
        configs({"_target_": "codesign.solve.models.OracleModel", "uses_reference": True}),
        tmp_path / "trial",
        node_cache,
    )
    t = result.telemetry
    assert t.exit_status == "submitted" and t.turns == 2 and t.tool_calls == {"shell": 1}
    assert t.cost_source == "offline"
    # Same final tree as applying the reference directly.
    a, b = tmp_path / "a", tmp_path / "b"
    copy_tree(task.app_dir, a)
    copy_tree(task.app_dir, b)
    apply_patch(a, result.patch)
    apply_patch(b, task.reference_patch())
    assert (a / "index.html").read_text() == (b / "index.html").read_text()
    lines = [json.loads(line) for line in (tmp_path / "trial" / "trajectory.jsonl").read_text().splitlines()]
    assert [e["event"] for e in lines] == ["prompt", "assistant", "tool", "assistant", "end"]


def test_noop_changes_nothing(tmp_path, node_cache):
    task = load_task(SUITE / "me-bakery-header-mockup")
    result = solve_task(task, configs({"_target_": "codesign.solve.models.NoopModel"}), tmp_path / "t", node_cache)
    assert result.patch == "" and result.telemetry.exit_status == "submitted" and result.telemetry.turns == 1


def test_solver_never_sees_criteria_or_reference(tmp_path, node_cache, served):
    task = load_task(SUITE / "me-expense-receipt-pdf")
    look = "find . -type f | sort; echo ===; cat $(find . -type f -name '*.yaml' -o -name '*.patch') 2>/dev/null"
    model, server = served(script([Reply(tool_calls=[shell(look)]), Reply("done")]))
    result = solve_task(task, configs(model), tmp_path / "t", node_cache)
    assert result.telemetry.exit_status == "submitted"
    seen = [r.messages for r in server.requests]
    assert len(seen) == 2
    listing = seen[1][-1]["content"]
    assert "./index.html" in listing and "./_attachments/hotel-receipt.pdf" in listing
    assert "criteria" not in listing and "solution" not in listing
    everything_shown = json.dumps(seen)
    for c in task.criteria:
        assert c.text not in everything_shown
    assert "HV-20931" not in json.dumps(seen[0])  # the answer is in the PDF, not the prompt


def test_turn_cap_ends_the_solve(tmp_path, node_cache, served):
    task = load_task(SUITE / "me-bakery-header-mockup")
    model, server = served(lambda req: Reply(tool_calls=[shell("echo again")], input_tokens=10, output_tokens=5))
    result = solve_task(task, configs(model, max_turns=3), tmp_path / "t", node_cache)
    t = result.telemetry
    assert t.exit_status == "turn_cap" and t.turns == 3 and t.tool_calls == {"shell": 3}
    assert len(server.requests) == 3 and server.usage()["input_tokens"] == 30
    assert t.input_tokens == 30 and t.output_tokens == 15 and abs(t.cost_usd - 0.003) < 1e-9  # 10·50 + 5·100 per M
    assert t.cost_source == "config"


def test_a_model_in_litellms_price_table_is_priced_by_it(tmp_path, node_cache, served):
    """No configured prices, no provider header: the cost is litellm's table price for the tokens used."""
    import litellm

    task = load_task(SUITE / "me-bakery-header-mockup")
    model, _ = served(script([Reply(tool_calls=[shell("true")], input_tokens=1000, output_tokens=200), Reply("done")]))
    del model["input_cost_per_mtok"], model["output_cost_per_mtok"]
    result = solve_task(task, configs({**model, "model": "openai/gpt-4o"}), tmp_path / "t", node_cache)
    t, price = result.telemetry, litellm.get_model_info("openai/gpt-4o")
    assert t.input_tokens > 1000 and t.cost_source == "litellm_estimate"
    expected = t.input_tokens * price["input_cost_per_token"] + t.output_tokens * price["output_cost_per_token"]
    assert t.cost_usd == pytest.approx(expected, rel=1e-9)


def test_unusable_tool_calls_end_as_agent_error(tmp_path, node_cache, served):
    task = load_task(SUITE / "me-bakery-header-mockup")
    model, server = served(lambda req: Reply(tool_calls=[ToolCall("shell", {}, raw_arguments="{not json")]))
    result = solve_task(task, configs(model), tmp_path / "t", node_cache)
    assert result.telemetry.exit_status == "agent_error" and result.telemetry.turns == 3
    assert len(server.requests) == 3
    told = server.requests[1].messages[-1]  # the model was told, over the wire, why its call could not be read
    assert told["role"] == "tool" and told["content"].startswith("error: Expecting property name"), told


def test_edit_tools_change_the_workspace(tmp_path, node_cache, served):
    task = load_task(SUITE / "me-bakery-header-mockup")
    change = {"path": "index.html", "old_text": "Baked before sunrise", "new_text": "Baked at dawn"}
    edit = ToolCall("edit_file", change)
    write = ToolCall("write_file", {"path": "notes.txt", "content": "hello\n"})
    model, _ = served(script([Reply(tool_calls=[edit, write]), Reply("ok")]))
    result = solve_task(task, configs(model), tmp_path / "t", node_cache)
    assert "+    <h2>Baked at dawn</h2>" in result.patch and "+hello" in result.patch
    assert result.telemetry.tool_calls == {"edit": 2}


def test_a_crashing_model_is_an_infrastructure_outcome(tmp_path, node_cache, served):
    """The endpoint refuses the call (404: no such model): the solve ends as infrastructure, the reason kept."""
    task = load_task(SUITE / "me-bakery-header-mockup")
    model, server = served(lambda req: Reply(status=404, content="the model does-not-exist is not served here"))
    result = solve_task(task, configs(model), tmp_path / "t", node_cache)
    assert result.telemetry.exit_status == "infra_error" and "does-not-exist" in result.telemetry.message
    assert len(server.requests) == 1 and result.patch == ""
    assert Path(tmp_path / "t" / "trajectory.jsonl").is_file()


@pytest.mark.parametrize(
    "diff",
    [
        "diff --git a/index.html b/index.html\n--- a/index.html\n+++ b/index.html\n"
        "@@ -1 +1 @@\n-<h1>old</h1>\n+<h1>new</h1>\n"
        "diff --git a/extra.txt b/extra.txt\nnew file mode 100644\n--- /dev/null\n+++ b/extra.txt\n"
        "@@ -0,0 +1 @@\n+added\n",
        # plain unified diffs, as `diff -u` writes them: with a/ b/ prefixes, and with bare paths and timestamps
        "--- a/index.html\n+++ b/index.html\n@@ -1 +1 @@\n-<h1>old</h1>\n+<h1>new</h1>\n"
        "--- /dev/null\n+++ b/extra.txt\n@@ -0,0 +1 @@\n+added\n",
        "--- index.html\t2026-12-01 10:00:00\n+++ index.html\t2026-12-01 10:01:00\n@@ -1 +1 @@\n-<h1>old</h1>\n"
        "+<h1>new</h1>\n--- /dev/null\n+++ extra.txt\n@@ -0,0 +1 @@\n+added\n",
    ],
    ids=["git", "plain", "bare"],
)
def test_single_shot_diffs_apply_in_every_form_git_accepts(tmp_path, diff):
    from codesign.sandbox.local import LocalSandbox
    from codesign.solve.edits import apply_edits, parse_edits

    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "index.html").write_text("<h1>old</h1>\n")
    box = LocalSandbox(tmp_path / "ws", tmp_path / "home")
    assert apply_edits(box, parse_edits(f"Here it is:\n```diff\n{diff}```\n")) == ["extra.txt", "index.html"]
    assert box.read_file("index.html") == "<h1>new</h1>\n" and box.read_file("extra.txt") == "added\n"


def test_a_diff_that_does_not_apply_changes_nothing(tmp_path):
    from codesign.sandbox.local import LocalSandbox
    from codesign.solve.edits import EditError, apply_edits, parse_edits

    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "index.html").write_text("<h1>old</h1>\n")
    box = LocalSandbox(tmp_path / "ws", tmp_path / "home")
    reply = "```diff\n--- a/index.html\n+++ b/index.html\n@@ -1 +1 @@\n-<h1>other</h1>\n+<h1>new</h1>\n```"
    with pytest.raises(EditError, match=r"index\.html"):
        apply_edits(box, parse_edits(reply))
    assert box.read_file("index.html") == "<h1>old</h1>\n"
