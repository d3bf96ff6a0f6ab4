"""Paired comparison of two cells (codesign.score.paired) against values computed by hand."""

from __future__ import annotations

import polars as pl
import pytest

from codesign.errors import ConfigError
from codesign.score.paired import compare, parse_cell, permutation_test, sign_test

# (task, track, seed, strict of A, strict of B); None: that cell did not score the task.
ROWS = [
    ("t1", "ME", 0, 1.0, 0.5), ("t1", "ME", 1, 0.0, None),  # A's two repeats average 0.5: a tie with B
    ("t2", "ME", 0, 0.5, 0.5), ("t3", "ME", 0, 1.0, 0.0), ("t4", "ME", 0, 0.0, 0.0),
    ("t5", "RE", 0, 1.0, 0.5), ("t6", "RE", 0, 0.75, 0.25),
    ("t7", "RE", 0, 1.0, None),  # only A scored it
    ("t8", "ME", 0, None, 1.0),  # only B scored it (A's grading failed)
]  # fmt: skip


def tasks() -> pl.DataFrame:
    rows = []
    for task, track, seed, a, b in ROWS:
        for model, strict in (("a", a), ("b", b)):
            if strict is None and not (model == "a" and task == "t8"):
                continue
            ok = strict is not None
            rows.append({"model": model, "harness": "native", "regime": "agentic", "evaluator": "probe",
                         "task_id": task, "track": track, "seed": seed, "status": "ok" if ok else "grading_error",
                         "strict": strict, "graded": strict, "full_pass": strict == 1.0 if ok else None})  # fmt: skip
    return pl.DataFrame(rows)


def test_differences_intervals_and_p_values_match_the_hand_computed_ones():
    summary, differences = compare(tasks(), parse_cell("model=a"), parse_cell("model=b"))
    got = {(r["track"], r["metric"]): r for r in summary.to_dicts()}
    # By hand, strict, paired tasks t1–t6: d = [0, 0, 1, 0, 0.5, 0.5].
    everything = got["ALL", "strict"]
    assert everything["tasks"] == 6 and everything["difference"] == pytest.approx(2 / 6)
    assert everything["mean_a"] == pytest.approx((0.5 + 0.5 + 1 + 0 + 1 + 0.75) / 6)
    assert (everything["a_better"], everything["b_better"], everything["ties"]) == (3, 0, 3)
    assert everything["sign_p"] == pytest.approx(2 * 0.5**3)  # 3 of 3 nonzero differences favour A
    assert everything["permutation_p"] == pytest.approx(2 / 8)  # only all-plus and all-minus reach |sum| = 2
    assert everything["ci_lo"] <= 2 / 6 <= everything["ci_hi"]
    assert (everything["only_a"], everything["only_b"]) == (1, 1)
    me = got["ME", "strict"]
    assert me["difference"] == pytest.approx(0.25) and me["sign_p"] == 1.0 and me["permutation_p"] == 1.0
    re_ = got["RE", "strict"]  # d = [0.5, 0.5]: every resample's mean is 0.5
    assert re_["difference"] == 0.5 and (re_["ci_lo"], re_["ci_hi"]) == (0.5, 0.5)
    assert re_["sign_p"] == 0.5 and re_["permutation_p"] == 0.5
    # Full-Pass per task: A t1 = 0.5 (one of two repeats), t3 = t5 = 1; B none.
    assert got["ALL", "full_pass"]["difference"] == pytest.approx(2.5 / 6)
    rows = differences.to_dicts()
    assert [(r["task_id"], r["difference"]) for r in rows if r["scored_by"] == "both"] == [
        ("t3", 1.0), ("t5", 0.5), ("t6", 0.5)]  # fmt: skip
    assert {(r["task_id"], r["scored_by"]) for r in rows if r["scored_by"] != "both"} == {("t7", "a only"),
                                                                                          ("t8", "b only")}  # fmt: skip


def test_the_tests_themselves():
    assert sign_test([1, 1, 1, 1, 1, -1]) == pytest.approx(2 * (1 + 6) / 64)
    assert sign_test([0, 0]) is None and permutation_test([0.0]) is None
    assert permutation_test([1.0, 2.0, 3.0]) == pytest.approx(2 / 8)
    many = [0.1] * 30  # past the exact limit: random flips, reproducible
    assert permutation_test(many) == permutation_test(many) < 0.001


def test_a_cell_that_is_not_one_cell_is_refused_by_name():
    frame = pl.concat([tasks(), tasks().with_columns(evaluator=pl.lit("llm"))])
    with pytest.raises(ConfigError, match=r"matches 2 cells \(model=a harness=native regime=agentic evaluator=llm"):
        compare(frame, parse_cell("model=a"), parse_cell("model=b,evaluator=probe"))
    with pytest.raises(ConfigError, match="not KEY=VALUE"):
        parse_cell("kimi-k3")
    with pytest.raises(ConfigError, match="same cell twice"):
        compare(tasks(), parse_cell("model=a"), parse_cell("model=a,harness=native"))
