"""Conditional failure attribution: categories, the cached task gate, environment-adjusted scores."""

from __future__ import annotations

import polars as pl
import pytest

from codesign._types import Telemetry
from codesign.evaluate.attribution import classify
from codesign.runner import run
from codesign.score import adjusted_frame, task_frame
from tests.helpers import compose_config
from tests.test_score import record

SOUND = {"startable": True, "solvable": True, "steps": {"integrity": "ok"}}


@pytest.mark.parametrize(
    ("gate", "exit_status", "verdicts", "category"),
    [
        ({"startable": False, "solvable": False, "steps": {"install_build": "FAIL: npm"}}, "submitted", "FF",
         "starting_artifact_defect"),
        ({"startable": True, "solvable": False, "steps": {"solvability": "FAIL: c1"}}, "submitted", "FF",
         "starting_artifact_defect"),
        (SOUND, "time_cap", "FF", "environment_blockage"),
        (SOUND, "infra_error", "FF", "environment_blockage"),
        (SOUND, "time_cap", "PFF", "mixed"),
        (SOUND, "turn_cap", "FF", "model_limitation"),  # a turn cap is the solver's own limit
        (SOUND, "submitted", "PFF", "model_limitation"),
    ],
)  # fmt: skip
def test_categories(gate, exit_status, verdicts, category):
    r = record("t", "ME", verdicts)
    r.telemetry = Telemetry(exit_status=exit_status)
    result = classify(r, gate)
    assert result["category"] == category and result["reason"]


def test_adjusted_scores_leave_out_what_the_solver_is_not_to_blame_for():
    good, broken, blocked = record("a", "ME", "PP"), record("b", "ME", "FF"), record("c", "RE", "FF")
    broken.attribution = {"category": "starting_artifact_defect", "reason": "x"}
    blocked.attribution = {"category": "environment_blockage", "reason": "y"}
    tasks = task_frame([good, broken, blocked])
    adjusted = {r["track"]: r for r in adjusted_frame(tasks).iter_rows(named=True)}
    assert adjusted["ALL"]["strict"] == 1.0 and adjusted["ALL"]["left_out"] == 2 and adjusted["ALL"]["tasks"] == 1
    assert adjusted["ME"]["left_out"] == 1
    assert tasks["strict"].mean() == pytest.approx(1 / 3)  # the raw scores are untouched


@pytest.mark.browser
@pytest.mark.slow
def test_a_task_whose_reference_fails_is_a_starting_artifact_defect(tmp_path, suite_copy):
    root = suite_copy("me-bakery-header-mockup")
    patch = root / "me-bakery-header-mockup" / "solution" / "solution.patch"
    patch.write_text(patch.read_text().replace("+    .site-header { background: #2f5d50;",
                                               "+    .site-header { background: #123456;"))  # fmt: skip
    out = tmp_path / "run"
    out.mkdir()
    overrides = ["model=noop", "tasks=all", f"tasks.root={root}", "executor=inline", "tracker=none",
                 f"store.root={tmp_path / 'store'}"]  # fmt: skip
    tables = run(compose_config(*overrides), out)
    row = tables["tasks"].row(0, named=True)
    assert row["attribution"] == "starting_artifact_defect" and "header-colour" in row["attribution_reason"]
    assert row["strict"] == pytest.approx(2 / 6)  # raw score unchanged
    adjusted = tables["adjusted"].filter(pl.col("track") == "ALL").row(0, named=True)
    assert adjusted["left_out"] == 1 and adjusted["tasks"] == 0
    assert len(list((tmp_path / "store" / "tasks").glob("*/gate.json"))) == 1  # the gate ran once, cached
    assert "starting artifact defect" in (out / "report.html").read_text()
