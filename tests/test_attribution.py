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


@pytest.mark.parametrize(("verdicts", "ungraded", "category"), [
    ("PFFF", 3, "not_gradable"),  # 1 of the 1 gradable criteria passes: low only because of coverage
    ("FFF", 3, "not_gradable"),  # nothing gradable at all
    ("PFFF", 1, "model_limitation"),  # 1 of 3 gradable passes: the model's own low score
])  # fmt: skip
def test_a_low_score_from_criteria_the_evaluator_cannot_grade_is_not_the_models(verdicts, ungraded, category):
    r = record("t", "ME", verdicts)
    for v in r.evaluation.verdicts[len(verdicts) - ungraded :]:
        v.failure_category = v.ungraded = "not_gradable"
    assert classify(r, SOUND, below=0.5)["category"] == category


def test_an_undecided_gate_is_its_own_category():
    gate = {"startable": False, "solvable": False, "steps": {"install_build": "FAIL: registry"},
            "transient": "EnvironmentSetupError: registry unreachable"}  # fmt: skip
    result = classify(record("t", "RE", "FF"), gate)
    assert result["category"] == "undetermined" and "registry unreachable" in result["reason"]


@pytest.mark.browser
@pytest.mark.slow
def test_a_gate_that_could_not_decide_is_retried_and_never_cached(tmp_path, suite_copy, loop, browser, node_cache):
    """A transient cause (here: a task whose npm dependencies cannot be installed — as when the registry is
    unreachable) leaves no gate.json behind; a deterministic verdict is cached."""
    import json

    from codesign.evaluate.attribution import task_gate
    from codesign.tasks.loader import load_task

    root = suite_copy("re-settings-theme-persist", "me-bakery-header-mockup")
    package = root / "re-settings-theme-persist" / "app" / "package.json"
    manifest = json.loads(package.read_text())
    manifest["dependencies"]["left-pad-codesign-does-not-exist"] = "99.99.99"
    package.write_text(json.dumps(manifest))
    store = tmp_path / "store"
    broken = loop.run(task_gate(load_task(root / "re-settings-theme-persist"), browser, node_cache, store))
    assert broken["transient"] and not broken["startable"]
    sound = loop.run(task_gate(load_task(root / "me-bakery-header-mockup"), browser, node_cache, store))
    assert sound["startable"] and sound["solvable"] and not sound["transient"]
    assert len(list(store.glob("tasks/*/gate.json"))) == 1  # only the decided one
