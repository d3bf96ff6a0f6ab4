"""Scoring arithmetic on hand-computed examples (the paper's metrics, task-normalized)."""

from __future__ import annotations

import polars as pl
import pytest

from codesign._types import CriterionVerdict, Evaluation, Telemetry, TrialRecord, TrialStatus
from codesign.score import (
    denominators_frame,
    format_denominators,
    format_summary,
    ledger_frame,
    summary_frame,
    task_frame,
    verdict_frame,
)

CELL = {"model": "m", "harness": "h", "regime": "agentic", "evaluator": "probe", "seed": "0"}


def record(task_id: str, track: str, verdicts: str, status: str = "ok", exit_status: str = "submitted") -> TrialRecord:
    """``verdicts`` like "PPHF": P=PASS, H=PARTIAL, F=FAIL."""
    names = {"P": "PASS", "H": "PARTIAL", "F": "FAIL"}
    vs = [CriterionVerdict(f"c{i}", "content", False, names[ch], "probe", "", []) for i, ch in enumerate(verdicts)]
    return TrialRecord(
        f"k-{task_id}",
        "e",
        task_id,
        track,
        CELL,
        {"modality": "text"},
        status,
        telemetry=Telemetry(turns=3, exit_status=exit_status),
        evaluation=Evaluation(status, vs) if status in ("ok", "aborted") else None,
    )


def summary_row(summary, track):
    return summary.filter(summary["track"] == track).row(0, named=True)


def test_per_task_scores():
    tasks = task_frame([record("a", "ME", "PPHF")])
    row = tasks.row(0, named=True)
    assert row["strict"] == 0.5 and row["graded"] == 0.625 and row["full_pass"] is False
    assert row["n_criteria"] == 4 and row["n_pass"] == 2 and row["n_partial"] == 1


def test_tasks_weigh_equally_not_criteria():
    # ME: a = PPHF (strict .5, graded .625); b = PP (1, 1, full pass).
    # RE: c = 10 criteria, 9 PASS + 1 FAIL (.9, .9); d = FFFF (0, 0, zero-pass).
    records = [
        record("a", "ME", "PPHF"),
        record("b", "ME", "PP"),
        record("c", "RE", "P" * 9 + "F"),
        record("d", "RE", "FFFF"),
    ]
    summary = summary_frame(task_frame(records))
    me, re_, all_ = summary_row(summary, "ME"), summary_row(summary, "RE"), summary_row(summary, "ALL")
    assert me["strict"] == pytest.approx(0.75) and me["graded"] == pytest.approx(0.8125)
    assert me["full_pass"] == pytest.approx(0.5) and me["tasks"] == 2
    assert re_["strict"] == pytest.approx(0.45) and re_["graded"] == pytest.approx(0.45)
    assert re_["full_pass"] == 0 and re_["zero_pass"] == pytest.approx(0.5)
    # Combined: mean over the 4 tasks, not over the 20 criteria (which would give 12/20 = .6 strict).
    assert all_["strict"] == pytest.approx((0.5 + 1 + 0.9 + 0) / 4)
    assert all_["graded"] == pytest.approx((0.625 + 1 + 0.9 + 0) / 4)
    assert all_["full_pass"] == pytest.approx(0.25) and all_["tasks"] == 4


def test_errors_are_counted_not_scored_as_zero():
    records = [
        record("a", "ME", "PP"),
        record("x", "?", "", status="task_error"),
        record("y", "RE", "", status="infra_error"),
    ]
    summary = summary_frame(task_frame(records))
    all_ = summary_row(summary, "ALL")
    assert all_["strict"] == 1.0 and all_["tasks"] == 1 and all_["errors"] == 2
    assert summary_row(summary, "RE")["strict"] is None and summary_row(summary, "RE")["errors"] == 1
    assert "?" not in summary["track"].to_list()


def test_caps_are_counted_and_still_scored():
    summary = summary_frame(task_frame([record("a", "ME", "PF", exit_status="turn_cap")]))
    row = summary_row(summary, "ME")
    assert row["capped"] == 1 and row["strict"] == 0.5


def test_verdict_frame_has_one_row_per_criterion():
    frame = verdict_frame([record("a", "ME", "PPHF"), record("b", "RE", "P")])
    assert frame.height == 5
    assert frame["score"].to_list() == [1.0, 1.0, 0.5, 0.0, 1.0]
    assert set(frame.columns) >= {"model", "harness", "task_id", "criterion_id", "verdict", "evidence_ids"}


def test_format_summary_is_a_table():
    text = format_summary(summary_frame(task_frame([record("a", "ME", "PPHF")])))
    assert "| strict" in text and "0.5" in text and "0.625" in text


def test_tool_calls_by_kind_are_columns():
    r = record("a", "ME", "P")
    r.telemetry.tool_calls = {"edit": 3, "shell": 2}
    row = task_frame([r]).row(0, named=True)
    assert row["tool_calls"] == 5 and row["tools_edit"] == 3 and row["tools_shell"] == 2 and row["tools_media"] == 0


def test_not_gradable_criteria_count_as_fail_and_are_reported():
    r = record("a", "RE", "PF")
    r.evaluation.verdicts[1].failure_category = r.evaluation.verdicts[1].ungraded = "not_gradable"
    tasks = task_frame([r])
    assert tasks["n_not_gradable"][0] == 1 and tasks["strict"][0] == 0.5
    assert summary_frame(tasks).filter(summary_frame(tasks)["track"] == "ALL")["not_gradable"][0] == 1


def test_breakdowns_by_modality_edit_types_and_capability():
    from codesign.score import breakdown_frame

    a, b, c, d = record("a", "ME", "PP"), record("b", "ME", "PF"), record("c", "RE", "PPPF"), record("d", "RE", "FF")
    a.labels |= {"modality": "image", "capability": ["grounded_understanding"]}
    b.labels |= {"modality": "text", "capability": ["ui_transformation", "grounded_understanding"]}
    c.labels |= {"n_edit_types": 1, "capability": ["functional_implementation"]}
    d.labels |= {"n_edit_types": 4, "capability": ["functional_implementation"]}
    rows = {(r["dimension"], r["group"]): r for r in breakdown_frame(task_frame([a, b, c, d])).iter_rows(named=True)}
    assert rows[("modality", "image")]["strict"] == 1.0 and rows[("modality", "text")]["strict"] == 0.5
    assert rows[("edit_types", "1-2")]["strict"] == 0.75 and rows[("edit_types", "3-4")]["zero_pass"] == 1.0
    grounded = rows[("capability", "grounded_understanding")]
    assert grounded["tasks"] == 2 and grounded["strict"] == pytest.approx(0.75) and grounded["full_pass"] == 0.5
    assert rows[("capability", "functional_implementation")]["tasks"] == 2


def test_spearman_rank_stability_across_harnesses():
    from codesign.score.ranking import rank_stability, spearman

    assert spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0) and spearman([1], [1]) is None
    # Two models × two harnesses, ME: kimi prefers h1, qwen prefers h2 (the paper's reversal, ρ = −1).
    rows = [("kimi", "h1", 0.8), ("kimi", "h2", 0.6), ("qwen", "h1", 0.5), ("qwen", "h2", 0.7)]
    summaries = pl.DataFrame([{"model": m, "harness": h, "regime": "agentic", "evaluator": "probe", "track": "ME",
                               "strict": s} for m, h, s in rows])  # fmt: skip
    table = rank_stability(summaries)
    levels = table.filter((pl.col("factor") == "harness") & (pl.col("compare") == "levels")).row(0, named=True)
    assert levels["a"] == "kimi" and levels["b"] == "qwen" and levels["rho"] == pytest.approx(-1.0)
    models = table.filter((pl.col("factor") == "harness") & (pl.col("compare") == "models")).row(0, named=True)
    assert models["rho"] == pytest.approx(-1.0)  # under h1 kimi leads, under h2 qwen leads
    assert table.filter(pl.col("factor") == "evaluator").height == 0  # one evaluator: nothing to compare


def test_rankings_compare_only_cells_that_agree_on_every_other_factor():
    """model × harness × evaluator: harnesses are compared within each evaluator, whatever the row order.
    The values below are worked out by hand: under e1 both models prefer h1 (ρ of the models' orderings of
    the harnesses = 1; the models rank alike under h1 and h2: ρ = 1); under e2 they disagree (−1, −1)."""
    from codesign.score.ranking import rank_stability

    scores = {
        ("m1", "h1", "e1"): 0.9,
        ("m1", "h2", "e1"): 0.5,
        ("m2", "h1", "e1"): 0.7,
        ("m2", "h2", "e1"): 0.3,
        ("m1", "h1", "e2"): 0.2,
        ("m1", "h2", "e2"): 0.8,
        ("m2", "h1", "e2"): 0.6,
        ("m2", "h2", "e2"): 0.4,
    }
    rows = [{"model": m, "harness": h, "regime": "agentic", "evaluator": e, "track": "ALL", "strict": s}
            for (m, h, e), s in scores.items()]  # fmt: skip
    for order in (rows, list(reversed(rows)), rows[::2] + rows[1::2]):
        table = rank_stability(pl.DataFrame(order)).filter(pl.col("factor") == "harness")
        got = {(r["compare"], r["context"]): r["rho"] for r in table.iter_rows(named=True)}
        assert got == pytest.approx({
            ("levels", "regime=agentic,evaluator=e1"): 1.0, ("models", "regime=agentic,evaluator=e1"): 1.0,
            ("levels", "regime=agentic,evaluator=e2"): -1.0, ("models", "regime=agentic,evaluator=e2"): -1.0,
        })  # fmt: skip


def test_single_shot_is_compared_with_the_agentic_cells_of_each_harness():
    """A single-shot cell has harness 'none'; regime rankings still compare it with each harness's agentic
    cells (by hand: with h1 both models gain from agentic, ρ = 1; with h2 m2 loses: the orderings reverse)."""
    from codesign.score.ranking import rank_stability

    scores = {("m1", "none", "single_shot"): 0.2, ("m2", "none", "single_shot"): 0.4,
              ("m1", "h1", "agentic"): 0.5, ("m2", "h1", "agentic"): 0.9,
              ("m1", "h2", "agentic"): 0.6, ("m2", "h2", "agentic"): 0.1}  # fmt: skip
    rows = [{"model": m, "harness": h, "regime": r, "evaluator": "e", "track": "ALL", "strict": s}
            for (m, h, r), s in scores.items()]  # fmt: skip
    table = rank_stability(pl.DataFrame(rows)).filter(pl.col("factor") == "regime")
    got = {(r["compare"], r["context"]): r["rho"] for r in table.iter_rows(named=True)}
    assert got == pytest.approx({("models", "harness=h1,evaluator=e"): 1.0, ("levels", "harness=h1,evaluator=e"): 1.0,
                                 ("models", "harness=h2,evaluator=e"): -1.0,
                                 ("levels", "harness=h2,evaluator=e"): -1.0})  # fmt: skip


def test_repeats_give_spread_an_interval_and_pass_at_k():
    """Two tasks × three seeds, worked out by hand. Strict per seed (mean over tasks): seed 0 (1 + 0.5)/2 =
    0.75, seed 1 (1 + 0)/2 = 0.5, seed 2 (0.5 + 0)/2 = 0.25 → sd 0.25. Full pass: task a in seeds 0 and 1
    (pass@3 yes, pass^3 no), task b never → pass@k 0.5, pass^k 0."""
    runs = {("a", "0"): "PP", ("a", "1"): "PP", ("a", "2"): "PF", ("b", "0"): "PF", ("b", "1"): "FF", ("b", "2"): "FF"}
    records = []
    for (task, seed), verdicts in runs.items():
        r = record(task, "ME", verdicts)
        r.cell = {**CELL, "seed": seed}
        records.append(r)
    row = summary_row(summary_frame(task_frame(records)), "ALL")
    assert row["repeats"] == 3 and row["tasks"] == 2 and row["strict"] == pytest.approx(0.5)
    assert row["strict_sd"] == pytest.approx(0.25)
    assert row["pass_at_k"] == pytest.approx(0.5) and row["pass_pow_k"] == 0.0
    # Task means are 5/6 and 1/6: the bootstrap interval lies between them and is the same every time.
    assert 1 / 6 - 1e-9 <= row["strict_lo"] <= row["strict"] <= row["strict_hi"] <= 5 / 6 + 1e-9
    again = summary_row(summary_frame(task_frame(records)), "ALL")
    assert (again["strict_lo"], again["strict_hi"]) == (row["strict_lo"], row["strict_hi"])
    shown = format_summary(summary_frame(task_frame(records)))
    assert "strict_95ci" in shown and "pass_at_k" in shown and "0.25" in shown


def test_the_ledger_accounts_for_every_planned_trial_and_criterion_hand_counted():
    """Nine planned trials, one of each fate; the denominators add up to what was planned, and the scores
    average only the two scored trials (a grading error is never a zero)."""
    judged = record("ok-judge", "ME", "PH")  # scored: a judge's PASS and a verifier-lowered PARTIAL
    judged.evaluation.verdicts[0].grader = "judge"
    judged.evaluation.verdicts[1].grader, judged.evaluation.verdicts[1].original_verdict = "verifier", "PASS"
    probed = record("ok-probe", "RE", "PF")  # scored: a probe's PASS, a not-gradable FAIL
    probed.evaluation.verdicts[1].grader, probed.evaluation.verdicts[1].ungraded = "none", "not_gradable"
    graded_badly = record("grading", "RE", "PF")  # a script bug and a browser crash: no verdict, not a zero
    graded_badly.status = graded_badly.evaluation.status = "grading_error"
    for v, cause in zip(graded_badly.evaluation.verdicts, ("grader_error", "infra"), strict=True):
        v.verdict, v.ungraded, v.grader = "UNGRADED", cause, "script"
    unrun = [
        TrialRecord.unrun("broken", CELL, TrialStatus.TASK_ERROR, "task.yaml: bad"),
        TrialRecord.unrun("solve-down", CELL, TrialStatus.INFRA_ERROR, "solve: endpoint down", "solve"),
        TrialRecord.unrun("eval-down", CELL, TrialStatus.INFRA_ERROR, "evaluation failed: sandbox", "evaluate"),
        TrialRecord.unrun("lost", CELL, TrialStatus.INFRA_ERROR, "its worker was lost 3×", "worker"),
        TrialRecord.unrun("late", CELL, TrialStatus.SKIPPED, "not started: budget"),
        record("audited", "ME", "P", status="aborted"),
    ]
    records = [judged, probed, graded_badly, *unrun]
    tasks, ledger = task_frame(records), ledger_frame(records)
    counts = denominators_frame(tasks, ledger).row(0, named=True)
    assert counts["planned"] == 9 and counts["scored"] == 2
    assert (counts["task_error"], counts["infra_error_solve"], counts["infra_error_evaluate"],
            counts["infra_error_worker"], counts["grading_error"], counts["aborted"], counts["skipped"]) == (
        1, 1, 1, 1, 1, 1, 1)  # fmt: skip
    unscored = [k for k in counts if k in ("task_error", "grading_error", "aborted", "skipped", "solved_only")
                or k.startswith("infra_error_")]  # fmt: skip
    assert counts["scored"] + sum(counts[k] for k in unscored) == counts["planned"]
    assert counts["grading_error_grader_error"] == counts["grading_error_infra"] == 1
    assert counts["grading_error_undecided_timeout"] == 0
    assert (counts["criteria_scored"], counts["by_judge"], counts["verifier_lowered"], counts["by_probe"],
            counts["not_gradable"]) == (4, 2, 1, 1, 1)  # fmt: skip
    assert counts["ungraded_grader_error"] == counts["ungraded_infra"] == 1
    # One ledger row per trial × criterion; a trial without an evaluation has one row without a criterion.
    assert ledger.height == 2 + 2 + 2 + 5 + 1
    assert set(ledger.filter(pl.col("task_id") == "grading")["bucket"]) == {"grading_error:grader_error,infra"}
    assert ledger.filter(pl.col("task_id") == "eval-down")["bucket"].to_list() == ["infra_error:evaluate"]
    all_ = summary_row(summary_frame(tasks), "ALL")
    assert all_["strict"] == pytest.approx((0.5 + 0.5) / 2)  # only the two scored trials
    assert (all_["planned"], all_["scored"], all_["grading_errors"], all_["errors"]) == (9, 2, 1, 4)
    line = format_denominators(denominators_frame(tasks, ledger))
    assert "9 planned, 2 scored" in line and "grading_error 1 (grader_error 1, infra 1)" in line
    assert "infra_error_worker 1" in line and "1 of the judge's lowered by the verifier" in line
