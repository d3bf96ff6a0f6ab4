"""Caps that stop a solve, in each of the three harnesses against the scripted model server (real HTTP):
``regime.max_cost_usd`` (``cost_cap``) and ``regime.max_wall_s`` (``time_cap``); and the run-wide budget under
the Ray executor while trials are in flight."""

from __future__ import annotations

import threading

import polars as pl
import pytest

from codesign.testing.model_server import Reply, ScriptedModelServer, ServedRequest, ToolCall
from tests.test_harnesses import KEY_ENV, run_cell

pytestmark = [pytest.mark.browser, pytest.mark.slow]
HARNESSES = [("native", "openai"), ("mini_swe_agent", "openai"), ("claude_code", "anthropic")]
PRICED = ["model.input_cost_per_mtok=1000", "model.output_cost_per_mtok=1000"]  # 1000 + 1000 tokens: $2 a call
GIVE_UP_S = 300  # only so that a broken product fails instead of hanging; nothing is timed


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-scripted-test")


def busy(delay_s: float = 0.0):
    """A model that never finishes: every reply runs a shell command (whichever shell tool the harness has)."""

    def policy(req: ServedRequest) -> Reply:
        shell = next((n for n in ("shell", "bash", "Bash") if n in req.tool_names), None)
        calls = [ToolCall(shell, {"command": "ls"})] if shell else []
        return Reply("Still looking.", calls, input_tokens=1000, output_tokens=1000, delay_s=delay_s)

    return policy


def solved_row(tables) -> dict:
    row = tables["tasks"].row(0, named=True)
    assert row["status"] == "solved", row["message"]
    return row


@pytest.mark.parametrize(("harness", "api"), HARNESSES)
def test_the_cost_cap_stops_the_solve(tmp_path, harness, api):
    """$2 a call under a $3 cap: the first call leaves $1 of room, the second spends past the cap, and no third
    call is made — the solve ends with ``cost_cap``, its workspace kept (status solved)."""
    with ScriptedModelServer(busy()) as server:
        tables = run_cell(tmp_path, server, f"harness={harness}", *PRICED, "regime.max_cost_usd=3",
                          "regime.max_turns=10", "stages.evaluate=false", api=api)  # fmt: skip
        served = server.usage()["calls"]
    row = solved_row(tables)
    assert row["exit_status"] == "cost_cap", (row["exit_status"], row["exit_message"])
    assert row["turns"] == 2 == served and row["cost_usd"] == pytest.approx(4.0)
    assert "cost cap of $3.00" in row["exit_message"]


@pytest.mark.parametrize(("harness", "api"), HARNESSES)
def test_the_time_cap_stops_the_solve(tmp_path, harness, api):
    """Each reply takes longer than the whole wall-time cap: the solve ends with ``time_cap`` after at most one
    call, and the call the cap cut short is counted where the server saw it. Whether that call was made at all
    depends on how fast the harness starts (on a loaded machine the cap can pass first), so both are allowed;
    Claude Code's process may be stopped before its first call is answered, and then its turn is not counted."""
    # 8 s: the harness starts and makes its first call well within the cap (2 s was not always enough, on a busy
    # machine, for mini-swe-agent's imports); the reply comes 2 s after the cap has passed.
    with ScriptedModelServer(busy(delay_s=10.0)) as server:
        tables = run_cell(tmp_path, server, f"harness={harness}", "regime.max_wall_s=8", "regime.max_turns=10",
                          "stages.evaluate=false", api=api)  # fmt: skip
        served = server.usage()["calls"]
    row = solved_row(tables)
    assert row["exit_status"] == "time_cap", (row["exit_status"], row["exit_message"])
    assert served <= 1 and row["turns"] <= 1
    if harness != "claude_code":
        assert row["turns"] == served
    summary = tables["summary"].filter(pl.col("track") == "ALL").row(0, named=True)
    assert summary["capped"] == 1


@pytest.mark.ray
def test_the_budget_under_ray_charges_the_trials_in_flight_and_starts_no_more(tmp_path, ray_instance, capsys):
    """One Ray actor running two trials at once, each spending $2 against a $1 budget: both calls are in flight
    together (the server holds the first until the second arrives), both trials finish and are charged, and the
    third trial never starts."""
    both_arrived = threading.Barrier(2, timeout=GIVE_UP_S)
    overlapped: list[bool] = []
    first_two = threading.Semaphore(2)

    def policy(req: ServedRequest) -> Reply:
        if first_two.acquire(blocking=False):  # a third call (a broken budget) does not wait for a fourth
            try:
                both_arrived.wait()
                overlapped.append(True)
            except threading.BrokenBarrierError:
                overlapped.append(False)
        return Reply("No changes needed.", input_tokens=1000, output_tokens=1000)

    tasks = "me-bakery-header-mockup,me-recipe-servings-text,me-pricing-annual-toggle"
    with ScriptedModelServer(policy) as server:
        tables = run_cell(tmp_path, server, *PRICED, "budget.max_cost_usd=1", "executor=ray",
                          "executor.num_workers=1", "executor.max_concurrency=2", "stages.evaluate=false",
                          tasks=tasks)  # fmt: skip
        served = server.usage()["calls"]
    assert overlapped == [True, True] and served == 2
    counts = dict(tables["tasks"].group_by("status").len().iter_rows())
    assert counts == {"solved": 2, "skipped": 1}
    assert tables["tasks"].filter(pl.col("status") == "solved")["cost_usd"].sum() == pytest.approx(4.0)
    skipped = tables["tasks"].filter(pl.col("status") == "skipped").row(0, named=True)
    assert "cost budget of $1.00 is spent ($4.0000)" in skipped["message"]
    assert "cost budget of $1.00 reached (spent $4.0000): 1 trials were not started" in capsys.readouterr().err
