"""The LLM scorer of codesign.curate against the scripted model server over real HTTP: valid ratings replace the
heuristic ones and the table names the scorer; an invalid rating keeps the heuristic, saying why; ratings are
cached by what decides them; spending stops at the budget; the command line wires it from the config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from codesign.curate import Settings, curate
from codesign.curate.select import SelectSettings
from codesign.testing.model_server import Reply, ScriptedModelServer, ServedRequest
from tests.test_curate_inputs import query

KEY = "CODESIGN_SCRIPTED_KEY"
REQUESTS = {
    "search": "Add a search box that filters the products while typing",
    "header": "Make the header background dark green with white text",
    "footer": "Add a footer with the opening hours in a bold font",
}


def rater(req: ServedRequest) -> Reply:
    text = req.text()
    if REQUESTS["search"] in text.split("Earlier requests")[0]:
        return Reply('{"difficulty": 4, "verifiability": 3, "reason": "filtering on input"}')
    if REQUESTS["header"] in text.split("Earlier requests")[0]:
        return Reply('Sure: {"difficulty": 2, "verifiability": 2, "reason": "a colour"}')
    return Reply('{"difficulty": 9, "verifiability": 2}')  # out of range, every time


def corpus(root: Path) -> Path:
    (root / "apps" / "shop").mkdir(parents=True)
    (root / "apps" / "shop" / "index.html").write_text("<h1>Shop</h1>\n")
    (root / "s.jsonl").write_text("".join(query("s1", i, text) for i, text in enumerate(REQUESTS.values())))
    return root


def settings(root: Path, server: ScriptedModelServer, cache: Path, **extra: object) -> Settings:
    model = {"_target_": "codesign.solve.models.litellm_model.LitellmModel", "name": "scripted",
             "model": "openai/scripted", "api_base": server.openai_base, "api_key_env": KEY, "max_retries": 0,
             "input_cost_per_mtok": 1.0, "output_cost_per_mtok": 1.0}  # fmt: skip
    base = {"inputs": [root / "s.jsonl"], "validate": False, "scorer_kind": "llm", "scorer_model": model,
            "scorer_cache_dir": cache, "scorer_concurrency": 1,
            "select": SelectSettings(min_session_score=1, min_relative_score=0)}  # fmt: skip
    return Settings(**(base | extra))  # type: ignore[arg-type]


def test_llm_ratings_replace_the_heuristic_where_valid_are_cached_and_stop_at_the_budget(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY, "sk-scripted-scorer")
    root = corpus(tmp_path / "in")
    with ScriptedModelServer(rater) as server:
        first = curate(settings(root, server, tmp_path / "cache"), tmp_path / "one")
        calls_first = len(server.requests)
        again = curate(settings(root, server, tmp_path / "cache"), tmp_path / "two")
        calls_again = len(server.requests) - calls_first
        curate(settings(root, server, tmp_path / "cache-2", scorer_max_cost_usd=1e-9), tmp_path / "three")
        calls_budget = len(server.requests) - calls_first - calls_again

    rows = {r["text"]: r for r in first.candidates.to_dicts()}
    search, header, footer = (rows[REQUESTS[k]] for k in ("search", "header", "footer"))
    assert search["scorer"].startswith("llm:scripted:score_v1@") and search["scorer"] == header["scorer"]
    assert (search["difficulty"], search["verifiability"]) == (4, 3)
    assert (header["difficulty"], header["verifiability"]) == (2, 2)
    assert search["difficulty_heuristic"] is not None and search["score"] == 4 + 3 + search["failure_signals"]
    # Out of range twice (asked again once): the heuristic stays, and the row says why.
    assert footer["scorer"] == "heuristic" and footer["difficulty"] == footer["difficulty_heuristic"]
    assert any("difficulty must be an integer 1-5, not 9" in p for p in footer["problems"]), footer["problems"]
    assert calls_first == 4  # search, header, footer twice
    summary = json.loads((tmp_path / "one" / "scorer.json").read_text())
    assert summary["rated"] == 2 and summary["calls"] == 4 and summary["spent_usd"] > 0

    # Cached: the valid ratings are not asked again, the invalid one is.
    assert calls_again == 2 and json.loads((tmp_path / "two" / "scorer.json").read_text())["from_cache"] == 2
    assert again.candidates.select("query_id", "difficulty").sort("query_id").equals(
        first.candidates.select("query_id", "difficulty").sort("query_id"))  # fmt: skip

    # The budget: one call is made, then spending stops and the rest keep the heuristic, saying so.
    assert calls_budget == 1
    kept = json.loads((tmp_path / "three" / "scorer.json").read_text())["heuristic_kept"]
    assert kept == {"the scorer's budget of 1e-09 USD is spent": 2}, kept
    assert "sk-scripted-scorer" not in "".join(
        p.read_text(errors="replace") for p in (tmp_path / "one").rglob("*.json")
    )


def test_the_command_line_builds_the_scorer_from_a_model_config(tmp_path):
    root = corpus(tmp_path / "in")
    with ScriptedModelServer(rater) as server:
        done = subprocess.run(
            [sys.executable, "-m", "codesign.curate", f"inputs=[{root / 's.jsonl'}]", "scorer.kind=llm",
             "model@scorer.model=litellm", "scorer.model.name=scripted", "scorer.model.model=openai/scripted",
             f"scorer.model.api_base={server.openai_base}", f"scorer.model.api_key_env={KEY}",
             "scorer.model.max_retries=0", f"scorer.cache_dir={tmp_path / 'cache'}", "validate.enabled=false",
             f"hydra.run.dir={tmp_path / 'run'}"],
            env={**os.environ, KEY: "sk-scripted-cli"}, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((tmp_path / "run" / "scorer.json").read_text())
    assert summary["scorer"].startswith("llm:scripted:") and summary["rated"] == 2, summary
    assert "filters passed" in done.stdout and (tmp_path / "run" / "candidates.parquet").is_file()
