"""Content keys that survive harmless edits: a solve is keyed by what the solver sees and what changes its
behaviour; an evaluation by the patch, the criteria and probes, and the grading config."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from codesign.runner import run
from codesign.solve.models.offline import apply_patch_command
from codesign.tasks.loader import load_task
from codesign.testing.model_server import Reply, ScriptedModelServer, ServedRequest, ToolCall
from codesign.trial import TrialSpec
from tests.conftest import SUITE
from tests.helpers import REPO, compose_config

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TASK = "me-bakery-header-mockup"


def solver(req: ServedRequest) -> Reply:
    if req.turn == 0:
        patch = (SUITE / TASK / "solution" / "solution.patch").read_text()
        return Reply("Applying.", [ToolCall("shell", {"command": apply_patch_command(patch)})])
    return Reply("Done: header restyled.")


def run_once(tmp_path: Path, root: Path, server: ScriptedModelServer, capsys, *overrides: str) -> str:
    os.environ["CODESIGN_SCRIPTED_KEY"] = "sk-scripted"
    cfg = compose_config(
        "model=litellm", "model.name=scripted", "model.model=openai/scripted", f"model.api_base={server.openai_base}",
        "model.api_key_env=CODESIGN_SCRIPTED_KEY", "tasks=all", f"tasks.root={root}", "executor=inline",
        "tracker=none", f"store.root={tmp_path / 'store'}", "attribution.below=null", *overrides,
    )  # fmt: skip
    out = tmp_path / f"run{len(list(tmp_path.glob('run*')))}"
    out.mkdir()
    capsys.readouterr()
    run(cfg, out)
    return capsys.readouterr().out


def test_harmless_edits_keep_solves_and_grades_and_real_ones_do_not(tmp_path, suite_copy, capsys):
    root = suite_copy(TASK)
    criteria = root / TASK / "criteria.yaml"
    with ScriptedModelServer(solver) as server:
        first = run_once(tmp_path, root, server, capsys)
        assert "6/6 PASS" in first and "reused" not in first
        paid = len(server.requests)

        # A price, retries and a timeout do not change what the model does: nothing runs again.
        again = run_once(tmp_path, root, server, capsys, "model.input_cost_per_mtok=3", "model.max_retries=9",
                         "model.timeout_s=30")  # fmt: skip
        assert "(reused solve+evaluate)" in again and len(server.requests) == paid

        # A comment in the criteria is not a criterion: nothing runs again either.
        criteria.write_text("# reviewed 2026-12-01\n" + criteria.read_text())
        assert "(reused solve+evaluate)" in run_once(tmp_path, root, server, capsys)

        # Editing a criterion re-grades the stored solve; the paid solve is not repeated.
        criteria.write_text(criteria.read_text().replace("text:", "text: (revised)", 1))
        regraded = run_once(tmp_path, root, server, capsys)
        assert "(reused solve)" in regraded and "evaluate" not in regraded.split("(reused")[-1]
        assert len(server.requests) == paid

        # The model's sampling parameters do change its behaviour: a new solve.
        resolved = run_once(tmp_path, root, server, capsys, "model.temperature=0.7")
        assert "reused" not in resolved and len(server.requests) > paid


def spec_for(**configs: dict) -> TrialSpec:
    cfg = compose_config("model=oracle", "evaluator=llm")
    plain = {k: OmegaConf.to_container(cfg[k], resolve=True) for k in ("model", "harness", "regime", "evaluator")}
    chosen = {k: configs.get(k, plain[k]) for k in plain}
    return TrialSpec(str(SUITE / TASK), TASK, chosen["model"], chosen["harness"], chosen["regime"], {},
                     chosen["evaluator"])  # fmt: skip


def test_the_solve_key_covers_the_prompt_files_of_harnesses_and_regimes(monkeypatch):
    from codesign.solve import prompts

    task = load_task(SUITE / TASK)
    single_shot = OmegaConf.to_container(compose_config("regime=single_shot").regime, resolve=True)
    before = {name: spec_for(**configs).trial_key(task) for name, configs in
              {"native": {}, "single_shot": {"regime": single_shot}}.items()}  # fmt: skip
    original = prompts.load
    monkeypatch.setattr(prompts, "load", lambda name: original(name) + ("\nEdited." if name == "task.md" else ""))
    after = {name: spec_for(**configs).trial_key(task) for name, configs in
             {"native": {}, "single_shot": {"regime": single_shot}}.items()}  # fmt: skip
    assert before["native"] != after["native"] and before["single_shot"] != after["single_shot"]
    monkeypatch.setattr(prompts, "load", original)
    harness = OmegaConf.to_container(compose_config().harness, resolve=True)
    assert spec_for(harness={**harness, "task_template": "Fix it."}).trial_key(task) != before["native"]
    assert spec_for().trial_key(task) == before["native"]  # the same files: the same key


def test_the_evaluation_key_covers_the_judges_prompt_files_by_content(tmp_path):
    task = load_task(SUITE / TASK)
    evaluator = OmegaConf.to_container(compose_config("evaluator=llm").evaluator, resolve=True)
    own = tmp_path / "judge.md"
    own.write_text("You grade one criterion. Reply with one JSON object.\n")
    keyed = lambda: spec_for(evaluator={**evaluator, "judge_prompt": str(own)}).eval_key(task, "")  # noqa: E731
    first = keyed()
    assert keyed() == first
    own.write_text("You grade one criterion strictly. Reply with one JSON object.\n")
    assert keyed() != first  # the same file name, new content: graded again
    assert spec_for(evaluator=evaluator).eval_key(task, "") != first


def test_the_grading_code_is_keyed_and_code_that_grades_nothing_is_not(tmp_path):
    from codesign.evaluate import fingerprint

    tree = tmp_path / "copy"
    shutil.copytree(REPO / "codesign", tree / "codesign", ignore=shutil.ignore_patterns("suite", "__pycache__"))
    digest = fingerprint.source_digest(tree)
    assert digest == fingerprint.source_digest(REPO) == fingerprint.grading_code()
    for harmless in ("report/build.py", "track/wandb.py", "runner.py"):
        (tree / "codesign" / harmless).write_text((tree / "codesign" / harmless).read_text() + "\n# edited\n")
    assert fingerprint.source_digest(tree) == digest
    for grading in ("evaluate/probes.py", "runtime/waiting.py", "evaluate/judge.py"):
        edited = tree / "codesign" / grading
        original = edited.read_text()
        edited.write_text(original.replace("ACTION_BOUND_S", "ACTION_BOUND_S ", 1) + "\n# edited\n")
        assert fingerprint.source_digest(tree) != digest, grading
        edited.write_text(original)
    # Every module of the grading packages is classified, so a new grading module cannot be forgotten.
    found = {
        ".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        for package in ("evaluate", "runtime") for p in (REPO / "codesign" / package).rglob("*.py")
    }  # fmt: skip
    assert found - set(fingerprint.GRADING) - set(fingerprint.NOT_GRADING) == set()


def test_new_grading_code_regrades_stored_solves_and_stale_reuse_says_so(tmp_path, suite_copy, capsys, monkeypatch):
    import polars as pl

    from codesign import trial
    from codesign.score import metrics

    root = suite_copy(TASK)
    with ScriptedModelServer(solver) as server:
        run_once(tmp_path, root, server, capsys)
        paid = len(server.requests)
        newer = "0123456789abcdef"  # the grading code after an upgrade of codesign
        monkeypatch.setattr(trial, "grading_code", lambda: newer)
        monkeypatch.setattr(metrics, "grading_code", lambda: newer)
        stale = run_once(tmp_path, root, server, capsys, "store.reuse=stale")
        assert "(reused solve+evaluate)" in stale and "1 evaluations reused from older grading code" in stale
        regraded = run_once(tmp_path, root, server, capsys)
        assert "(reused solve)" in regraded and "evaluate" not in regraded.split("(reused")[-1]
        assert len(server.requests) == paid  # graded again, never solved again
        assert "older grading code" not in regraded
    runs = sorted(tmp_path.glob("run*"), key=lambda p: int(p.name[3:]))
    older = [pl.read_parquet(r / "tasks.parquet")["older_code"][0] for r in runs]
    assert older == [False, True, False]
