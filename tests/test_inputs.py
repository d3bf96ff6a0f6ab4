"""Inputs that cannot reach outside their task: attachment paths, symlinks (a task's and a candidate's),
manifests that are not UTF-8 or repeat a key, and a solve that leaves a huge file behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codesign.runner import run
from codesign.tasks.loader import load_suite
from codesign.testing.model_server import Reply, ScriptedModelServer, ServedRequest, ToolCall
from tests.helpers import compose_config

TASK = "me-bakery-header-mockup"


def errors_of(root: Path) -> dict[str, str]:
    suite = load_suite(root)
    return {e.task_id: str(e) for e in suite.errors}


@pytest.mark.parametrize("path", ["../../../../etc/passwd", "/etc/passwd", "attachments/../../other/x.png"])
def test_an_attachment_path_outside_the_task_is_refused(suite_copy, path):
    root = suite_copy(TASK)
    manifest = root / TASK / "task.yaml"
    manifest.write_text(manifest.read_text().replace("attachments/header-mockup.png", path))
    assert "is outside the task folder" in errors_of(root)[TASK]


def test_a_symlink_out_of_the_task_is_refused_and_one_inside_is_fine(suite_copy, tmp_path):
    root = suite_copy(TASK)
    app = root / TASK / "app"
    (app / "logo.html").symlink_to(app / "index.html")  # inside: fine
    assert errors_of(root) == {}
    secret = tmp_path / "secret.txt"
    secret.write_text("outside")
    (app / "leak.txt").symlink_to(secret)
    assert "app/leak.txt: symlink points outside the task folder" in errors_of(root)[TASK]


def test_a_manifest_that_is_not_utf8_names_the_task_and_the_rest_still_load(suite_copy):
    root = suite_copy(TASK, "me-recipe-servings-text")
    manifest = root / TASK / "task.yaml"
    manifest.write_bytes(manifest.read_text().replace("bakery header", "Bäckerei header").encode("latin-1"))
    suite = load_suite(root)
    [error] = suite.errors
    assert error.task_id == TASK and "task.yaml: not UTF-8 text" in str(error)
    assert [t.id for t in suite.tasks] == ["me-recipe-servings-text"]


def test_a_key_given_twice_is_an_error_not_the_last_one_silently(suite_copy):
    root = suite_copy(TASK)
    manifest = root / TASK / "task.yaml"
    manifest.write_text(manifest.read_text() + "track: RE\n")
    assert "duplicate key 'track'" in errors_of(root)[TASK]


# --- what a solve leaves behind --------------------------------------------------------------------------


def agent(command: str):
    def policy(req: ServedRequest) -> Reply:
        if req.turn == 0:
            return Reply("Working.", [ToolCall("shell", {"command": command})])
        return Reply("Done.")

    return policy


def solve_and_grade(tmp_path: Path, command: str, *overrides: str) -> tuple[dict, Path]:
    os.environ["CODESIGN_SCRIPTED_KEY"] = "sk-scripted"
    with ScriptedModelServer(agent(command)) as server:
        cfg = compose_config(
            "model=litellm", "model.name=scripted", "model.model=openai/scripted",
            f"model.api_base={server.openai_base}", "model.api_key_env=CODESIGN_SCRIPTED_KEY",
            f"tasks.include=[{TASK}]", "executor=inline", "tracker=none", f"store.root={tmp_path / 'store'}",
            "attribution.below=null", *overrides,
        )  # fmt: skip
        out = tmp_path / "run"
        out.mkdir()
        tables = run(cfg, out)
    return tables["tasks"].row(0, named=True), next((tmp_path / "store" / "trials").iterdir())


@pytest.mark.browser
@pytest.mark.slow
def test_a_candidate_symlink_to_a_host_file_is_not_served_and_is_recorded(tmp_path):
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host secret 7d1f")
    row, trial = solve_and_grade(tmp_path, f"ln -s {secret} leak.txt && ln -s index.html home.html")
    assert row["status"] == "ok", row  # the candidate's doing: graded, never an infrastructure error
    assert "leak.txt" in (trial / "patch.diff").read_text()  # the solve made it ...
    evaluation = next(trial.glob("evals/*"))
    log = (evaluation / "build.log").read_text()
    assert "removed symlinks pointing outside the app" in log and "leak.txt ->" in log  # ... grading removed it
    assert "home.html" not in log  # a link inside the app stays
    assert not any("host secret 7d1f" in p.read_text(errors="replace") for p in evaluation.rglob("*.html"))


@pytest.mark.browser
@pytest.mark.slow
def test_a_huge_file_left_behind_ends_the_solve_as_an_agent_error_with_its_size(tmp_path):
    row, trial = solve_and_grade(tmp_path, "head -c 30000000 /dev/urandom > big.bin", "regime.max_patch_kb=1024")
    assert row["exit_status"] == "agent_error" and "MB, over the regime's cap of 1024 KB" in row["exit_message"]
    assert (trial / "patch.diff").stat().st_size == 0  # nothing huge is stored (or graded)
    # The model's mistake: scored, not an error — on the unchanged app, where only the 2 of 6 criteria that
    # keep what already worked pass (what noop gets).
    assert row["status"] == "ok" and row["strict"] == pytest.approx(2 / 6)
