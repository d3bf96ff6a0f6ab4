"""Replay: responses recorded in the store (``model.cache=write``) re-run a trial offline (``read``) with the
same patch and telemetry, with no key and no server; a miss names the trial and the call."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from codesign.testing.model_server import ScriptedModelServer
from tests.test_harnesses import KEY_ENV, TASK, run_cell, solver

pytestmark = [pytest.mark.browser, pytest.mark.slow]
PRICES = ["model.input_cost_per_mtok=3", "model.output_cost_per_mtok=15"]
SAME = ["status", "exit_status", "turns", "tool_calls", "input_tokens", "output_tokens", "cost_usd", "strict"]


def test_a_recorded_trial_replays_offline_with_the_same_patch_and_telemetry(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-scripted-test")
    with ScriptedModelServer(solver) as server:
        recorded = run_cell(tmp_path, server, "harness=native", "model.cache=write", *PRICES)
        calls = len(server.requests)
        gone = SimpleNamespace(openai_base=server.openai_base)  # the same address, after the server stopped
    first = recorded["tasks"].row(0, named=True)
    assert first["status"] == "ok" and first["strict"] == 1.0 and calls == first["turns"] == 2
    store = tmp_path / "store"
    patch = (store / "trials" / first["trial_key"] / "patch.diff").read_text()
    cached = list((store / "responses").glob("*.json"))
    assert len(cached) == calls
    assert not any("sk-scripted-test" in p.read_text() for p in cached)  # the key never enters the cache

    # The server is gone and so is the key: the trial runs again (reuse off) from the cache alone.
    monkeypatch.delenv(KEY_ENV)
    (store / "trials" / first["trial_key"] / "patch.diff").unlink()
    replayed = run_cell(tmp_path, gone, "harness=native", "model.cache=read", "store.reuse=false", *PRICES)
    again = replayed["tasks"].row(0, named=True)
    assert {k: again[k] for k in SAME} == {k: first[k] for k in SAME}
    assert again["trial_key"] == first["trial_key"]
    assert (store / "trials" / first["trial_key"] / "patch.diff").read_text() == patch
    solve = json.loads((store / "trials" / first["trial_key"] / "solve.json").read_text())
    assert solve["telemetry"]["cost_source"] == "config"

    # Another sampling setting is another response: a miss, named, and the trial is an infrastructure error.
    missed = run_cell(tmp_path, gone, "harness=native", "model.cache=read", "store.reuse=false",
                      "model.temperature=0.5", *PRICES)  # fmt: skip
    row = missed["tasks"].row(0, named=True)
    assert row["status"] == "infra_error"
    assert f"no cached response for scripted, call 1 of trial {TASK} seed 0" in row["message"]
