"""Content keys that survive harmless edits: a solve is keyed by what the solver sees and what changes its
behaviour; an evaluation by the patch, the criteria and probes, and the grading config."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codesign.runner import run
from codesign.solve.models.offline import apply_patch_command
from codesign.testing.model_server import Reply, ScriptedModelServer, ServedRequest, ToolCall
from tests.conftest import SUITE
from tests.helpers import compose_config

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
