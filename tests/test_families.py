"""No self-grading: the judge's and verifier's provider family against the solver's, warned about or refused
before any trial starts, and a column of the tables."""

from __future__ import annotations

import os

import polars as pl
import pytest

from codesign.build import check_families, families, preflight
from codesign.errors import ConfigError
from codesign.report import build_report, collect, find_runs
from codesign.runner import run
from codesign.solve.models.family import family_of
from codesign.testing.model_server import ScriptedModelServer
from tests.helpers import cli, compose_config
from tests.test_judge import careful_judge, make_task

KEY = "CODESIGN_FAMILY_TEST_KEY"
MOONSHOT_SOLVER = ["model=litellm", "model.name=solver", "model.model=moonshot/kimi-k3", f"model.api_key_env={KEY}"]
MOONSHOT_JUDGE = ["evaluator=llm", "evaluator.judge.model=moonshot/kimi-k2", f"evaluator.judge.api_key_env={KEY}",
                  f"evaluator.verifier.api_key_env={KEY}"]  # fmt: skip


@pytest.mark.parametrize(
    ("model", "api_base", "family"),
    [
        ("moonshot/kimi-k3", None, "moonshot"),
        ("openrouter/anthropic/claude-opus-4-8", None, "anthropic"),  # the vendor, not the gateway
        ("openrouter/z-ai/glm-5", None, "zhipu"),
        ("openrouter/qwen/qwen3.8-27b", None, "alibaba"),
        ("dashscope/qwen3.7-plus", None, "alibaba"),
        ("bedrock/anthropic.claude-3-sonnet", None, "anthropic"),
        ("azure/my-deployment", None, "openai"),  # Azure's deployments are OpenAI's models
        ("openai/o3-mini", None, "openai"),
        ("openai/my-local-model", "http://127.0.0.1:8000/v1", None),  # any OpenAI-compatible server: unknown
        ("openrouter/some-lab/mystery-1", None, None),
        (None, None, None),  # oracle, noop
    ],
)
def test_the_family_comes_from_the_model_name_then_the_provider(model, api_base, family):
    assert family_of(model, api_base=api_base) == family


def test_a_judge_of_the_solvers_family_is_a_warning_and_with_forbid_an_error(monkeypatch, capsys):
    monkeypatch.setenv(KEY, "sk-test")
    same = compose_config(*MOONSHOT_SOLVER, *MOONSHOT_JUDGE)
    assert families(same) == {"solver_family": "moonshot", "judge_family": "moonshot", "verifier_family": "anthropic"}
    (warning,) = check_families(same)
    assert "the judge 'gpt-6-astra' and the solver 'solver' are both of the moonshot family" in warning
    preflight(same)  # wired into the checks every run makes first
    assert "warning: the judge" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="both of the moonshot family") as refused:
        check_families(compose_config(*MOONSHOT_SOLVER, *MOONSHOT_JUDGE, "evaluator.forbid_same_family=true"))
    assert "evaluator.judge=" in refused.value.hint
    # An override says the judge is another family's (a fine-tune served under a borrowed name): no warning.
    assert check_families(compose_config(*MOONSHOT_SOLVER, *MOONSHOT_JUDGE, "evaluator.judge.family=acme")) == []
    assert check_families(compose_config(*MOONSHOT_SOLVER, "evaluator=probe")) == []


def test_forbid_same_family_stops_the_command_before_any_trial(tmp_path):
    where = [f"store.root={tmp_path / 'store'}", f"hydra.run.dir={tmp_path / 'run'}"]
    proc = cli(*MOONSHOT_SOLVER, *MOONSHOT_JUDGE, "evaluator.forbid_same_family=true", "tracker=none",
               "tasks.include=[me-bakery-header-mockup]", *where, env={**os.environ, KEY: "sk-test"})  # fmt: skip
    assert proc.returncode != 0 and "both of the moonshot family" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "store" / "trials").exists()


@pytest.mark.browser
@pytest.mark.slow
def test_the_families_are_columns_of_the_tables(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY, "sk-judge")
    root = make_task(tmp_path / "suite")
    with ScriptedModelServer(careful_judge) as s:
        llm = [f"evaluator.{r}.{k}={v}" for r in ("judge", "verifier") for k, v in (
            ("model", "openai/scripted"), ("api_base", s.openai_base), ("api_key_env", KEY))]  # fmt: skip
        cfg = compose_config("evaluator=llm", *llm, "evaluator.judge.family=acme", "evaluator.frames=[]", "tasks=all",
                             f"tasks.root={root}", "model=oracle", "executor=inline", "tracker=none",
                             f"store.root={tmp_path / 'store'}")  # fmt: skip
        (tmp_path / "run").mkdir()
        tables = run(cfg, tmp_path / "run")
    row = tables["tasks"].row(0, named=True)
    assert (row["solver_family"], row["judge_family"], row["verifier_family"]) == (None, "acme", None)
    assert pl.read_parquet(tmp_path / "run" / "tasks.parquet")["judge_family"].to_list() == ["acme"]
    main = build_report(collect(find_runs([tmp_path / "run"])), draw=False).main  # the cross-run report's
    assert set(main["judge_family"]) == {"acme"} and main["solver_family"].null_count() == main.height
