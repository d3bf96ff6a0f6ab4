"""Budgets that fire: refused over unknown prices, charged with grading spend as trials finish."""

from __future__ import annotations

import shutil

import polars as pl
import pytest

from codesign.build import preflight
from codesign.errors import ConfigError
from tests.helpers import compose_config

UNPRICED = ["model=litellm", "model.name=mystery", "model.model=openai/codesign-unpriced-model"]


@pytest.fixture(autouse=True)
def no_key_needed(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


@pytest.mark.parametrize("cap", ["budget.max_cost_usd=5", "regime.max_cost_usd=5"])
def test_a_cap_over_a_model_of_unknown_price_is_refused_before_the_run(cap):
    with pytest.raises(ConfigError) as err:
        preflight(compose_config(*UNPRICED, cap))
    assert "has no known price" in str(err.value) and "budget.allow_unknown_cost=true" in str(err.value)
    preflight(compose_config(*UNPRICED, cap, "budget.allow_unknown_cost=true"))  # opted out
    preflight(compose_config(*UNPRICED, cap, "model.input_cost_per_mtok=1", "model.output_cost_per_mtok=2"))


def test_a_budget_over_an_unpriced_judge_is_refused_too():
    judge = ["evaluator=llm", "evaluator.judge.model=openai/codesign-unpriced-judge",
             "evaluator.judge.input_cost_per_mtok=null", "evaluator.judge.output_cost_per_mtok=null"]  # fmt: skip
    with pytest.raises(ConfigError, match=r"evaluator\.judge"):
        preflight(compose_config("model=noop", *judge, "budget.max_cost_usd=5", "evaluator.verifier=null"))


@pytest.mark.browser
@pytest.mark.slow
def test_judge_spend_counts_against_the_budget(tmp_path):
    """The solver (noop) costs nothing; the judge's first trial spends the budget; the next never starts."""
    from tests.test_judge import evaluate, make_task, verdict

    root = make_task(tmp_path / "suite")
    shutil.copytree(root / "counter", root / "counter2")
    (root / "counter2" / "task.yaml").write_text((root / "counter2" / "task.yaml").read_text().replace(
        "id: counter", "id: counter2"))  # fmt: skip

    def judge(req):
        return verdict("FAIL", ["dom:/@desktop"], "the note is unchanged on the page")

    prices = ["evaluator.judge.input_cost_per_mtok=1000", "evaluator.judge.output_cost_per_mtok=1000",
              "evaluator.verifier=null", "evaluator.audit=false", "budget.max_cost_usd=0.5",
              "executor.max_concurrency=1"]  # fmt: skip
    import os

    os.environ["CODESIGN_JUDGE_KEY"] = "sk-judge"
    tables = evaluate(tmp_path, judge, None, "noop", root, *prices)
    tasks = tables["tasks"]
    counts = dict(tasks.group_by("status").len().iter_rows())
    assert counts == {"ok": 1, "skipped": 1}
    assert tasks.filter(pl.col("status") == "ok")["judge_cost_usd"][0] > 0.5


@pytest.mark.browser
@pytest.mark.slow
def test_one_budget_for_the_whole_grid(tmp_path, monkeypatch, capsys):
    """Under -m the cells share one budget: the first trial's judge spends it, so the other cell's trial never
    starts (with a budget per cell, both would run)."""
    from codesign.testing.model_server import ScriptedModelServer
    from tests.test_grid import cell_dirs, hydra_cli, tasks_of
    from tests.test_judge import KEY_ENV, make_task, verdict

    root = make_task(tmp_path / "suite")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(KEY_ENV, "sk-judge")
    with ScriptedModelServer(lambda req: verdict("FAIL", ["dom:/@desktop"], "the note is unchanged")) as judge:
        code = hydra_cli(
            monkeypatch, "-m", "model=noop,oracle", "evaluator=llm", "evaluator.judge.model=openai/judge",
            f"evaluator.judge.api_base={judge.openai_base}", f"evaluator.judge.api_key_env={KEY_ENV}",
            "evaluator.judge.input_cost_per_mtok=1000", "evaluator.judge.output_cost_per_mtok=1000",
            "evaluator.verifier=null", "evaluator.audit=false", "evaluator.frames=[]", "budget.max_cost_usd=0.5",
            "tasks=all", f"tasks.root={root}", "executor=inline", "executor.max_concurrency=1", "tracker=none",
            f"store.root={tmp_path / 'store'}", "attribution.below=null",
        )  # fmt: skip
    assert code == 0
    statuses = [tasks_of(c)["status"][0] for c in cell_dirs(tmp_path)]
    assert statuses == ["ok", "skipped"]
    assert "cost budget of $0.50 reached" in capsys.readouterr().err
