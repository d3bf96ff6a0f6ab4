"""Agreement between graders and people against hand-computed values (codesign.score.agreement)."""

from __future__ import annotations

import polars as pl
import pytest

from codesign.score.agreement import alpha, pairs, ratings

# Ten criteria of one solve. ann is a person; the probe is the deterministic grader; judge_a an LLM evaluator
# whose verifier lowered c1 (PASS → PARTIAL) and c5 (PASS → FAIL).
ANN = ["PASS", "PASS", "PASS", "PASS", "PASS", "FAIL", "FAIL", "FAIL", "PARTIAL", "CANT_TELL"]
PROBE = ["PASS", "PASS", "PASS", "PASS", "FAIL", "FAIL", "FAIL", "PASS", "FAIL", "PASS"]
JUDGE_FINAL = ["PARTIAL", "PASS", "PASS", "PASS", "FAIL", "FAIL", "FAIL", "FAIL", "FAIL", "UNGRADED"]
JUDGE_BEFORE = {"c1": "PASS", "c5": "PASS"}
KINDS = ["content"] * 8 + ["visual"] * 2


def verdict_rows() -> pl.DataFrame:
    rows = []
    for i, (probe, judged, kind) in enumerate(zip(PROBE, JUDGE_FINAL, KINDS, strict=True), start=1):
        c = f"c{i}"
        rows.append(
            {
                "evaluator": "probe",
                "trial_key": "t1",
                "criterion_id": c,
                "kind": kind,
                "grader": "probe",
                "verdict": probe,
                "original_verdict": None,
            }
        )
        grader = "verifier" if c in JUDGE_BEFORE else "judge"
        rows.append(
            {
                "evaluator": "judge_a",
                "trial_key": "t1",
                "criterion_id": c,
                "kind": kind,
                "grader": grader,
                "verdict": judged,
                "original_verdict": JUDGE_BEFORE.get(c),
            }
        )
    # A criterion nobody could grade a verdict for, and a solve nobody else rated: neither is compared.
    rows.append(
        {
            "evaluator": "judge_a",
            "trial_key": "t1",
            "criterion_id": "c11",
            "kind": "content",
            "grader": "none",
            "verdict": "FAIL",
            "original_verdict": None,
        }
    )
    return pl.DataFrame(rows)


def label_rows(reviewer: str, verdicts: list[str]) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "trial_key": "t1",
                "eval_key": "e1",
                "task_id": "x",
                "criterion_id": f"c{i}",
                "reviewer": reviewer,
                "verdict": v,
                "note": "",
                "at": "",
            }
            for i, v in enumerate(verdicts, start=1)
        ]
    )


def pair(table: pl.DataFrame, reference: str, rater: str, kind: str = "all") -> dict:
    found = table.filter((pl.col("reference") == reference) & (pl.col("rater") == rater) & (pl.col("kind") == kind))
    assert found.height == 1, table.select("reference", "rater", "kind")
    return found.row(0, named=True)


def test_raters_are_the_deterministic_grader_each_evaluator_its_judge_before_the_verifier_and_each_person():
    rated = ratings(verdict_rows(), label_rows("ann", ANN))
    assert set(rated["rater"]) == {"deterministic", "judge_a", "judge_a:judge", "human:ann"}
    before = dict(rated.filter(pl.col("rater") == "judge_a:judge").select("criterion_id", "verdict").iter_rows())
    assert before["c1"] == "PASS" and before["c5"] == "PASS" and before["c2"] == "PASS"  # unchanged ones as judged
    assert "c11" not in set(rated["criterion_id"])  # grader "none": no rater judged it
    # A label on a solve no grader rated has no kind and nothing to agree with: it is not a rating.
    stray = label_rows("ann", ["PASS"]).with_columns(trial_key=pl.lit("elsewhere"))
    assert ratings(verdict_rows(), stray).filter(pl.col("rater") == "human:ann").is_empty()


def test_a_person_against_the_deterministic_grader_matches_the_hand_computed_rates():
    table = pairs(ratings(verdict_rows(), label_rows("ann", ANN)))
    row = pair(table, "human:ann", "deterministic")
    # By hand over the 9 items both rated (c10 is "can't tell": left out, counted): identical on c1–c4, c6, c7.
    assert row["items"] == 9 and row["left_out"] == 1
    assert row["agreement"] == pytest.approx(6 / 9)
    # ann: PASS 5, FAIL 3, PARTIAL 1; probe on those 9: PASS 5, FAIL 4 → pe = (25 + 12) / 81, κ = 17 / 44.
    assert row["kappa"] == pytest.approx(17 / 44)
    assert row["false_pass"] == pytest.approx(1 / 4)  # ann's 4 non-PASS (c6–c9): the probe passes c8
    assert row["false_fail"] == pytest.approx(1 / 5)  # ann's 5 PASS (c1–c5): the probe fails c5
    assert row["agreement_lo"] <= row["agreement"] <= row["agreement_hi"]
    assert 0 <= row["agreement_lo"] < row["agreement_hi"] <= 1
    content = pair(table, "human:ann", "deterministic", "content")
    assert content["items"] == 8 and content["agreement"] == pytest.approx(6 / 8)


def test_the_verifier_is_measured_by_comparing_the_judge_before_and_after_it():
    table = pairs(ratings(verdict_rows(), label_rows("ann", ANN)))
    after, before = pair(table, "human:ann", "judge_a"), pair(table, "human:ann", "judge_a:judge")
    # c10 is left out (ann can't tell, the judge gave no verdict). Before the verifier the judge differs from ann
    # on c9 only (8 / 9); the verifier lowered c1 to PARTIAL and c5 to FAIL, both of which ann passes (6 / 9).
    assert after["items"] == before["items"] == 9 and after["left_out"] == 1
    assert before["agreement"] == pytest.approx(8 / 9) and after["agreement"] == pytest.approx(6 / 9)
    assert before["false_fail"] == 0.0 and after["false_fail"] == pytest.approx(1 / 5)


def test_two_people_are_a_human_pair_and_alpha_covers_every_rater():
    bob = ["PASS", "PASS", "FAIL", "PASS", "PASS", "FAIL", "FAIL", "FAIL", "FAIL", "PASS"]
    labels = pl.concat([label_rows("ann", ANN), label_rows("bob", bob)])
    table = pairs(ratings(verdict_rows(), labels))
    people = pair(table, "human:ann", "human:bob")
    assert people["human_pair"] and not pair(table, "human:ann", "deterministic")["human_pair"]
    assert people["items"] == 9 and people["agreement"] == pytest.approx(7 / 9)  # c3 and c9 differ
    assert set(alpha(ratings(verdict_rows(), labels))["raters"]) == {5}


def test_krippendorff_alpha_matches_hand_computed_values():
    def rated(matrix: dict[str, list[str | None]]) -> pl.DataFrame:
        return pl.DataFrame(
            [
                {"trial_key": "t", "criterion_id": f"i{i}", "kind": "content", "rater": r, "verdict": v}
                for r, vs in matrix.items()
                for i, v in enumerate(vs)
                if v is not None
            ]
        )

    # Two raters, four items: coincidences FF 2, PP 4, FP 1, PF 1; n = 8 → α = 1 − (2/8) / (2·3·5 / 56) = 8/15.
    two = alpha(rated({"a": ["FAIL", "FAIL", "PASS", "PASS"], "b": ["FAIL", "PASS", "PASS", "PASS"]}))
    assert two.row(0, named=True)["alpha"] == pytest.approx(8 / 15)
    # Three raters with gaps; the item one rater alone judged is left out. PP 3 (3·2 pairs / 2), FF 3, PF 1,
    # FP 1; n = 8 → α = 1 − (2/8) / (2·4·4 / 56) = 0.5625.
    three = alpha(
        rated(
            {
                "a": ["PASS", "PASS", "FAIL", "PASS"],
                "b": ["PASS", "FAIL", "FAIL", None],
                "c": ["PASS", None, "FAIL", None],
            }
        )
    ).row(0, named=True)
    assert three["alpha"] == pytest.approx(0.5625) and three["items"] == 3 and three["raters"] == 3
    assert three["alpha_lo"] <= three["alpha_hi"]
    same = alpha(rated({"a": ["PASS", "PASS"], "b": ["PASS", "PASS"]})).row(0, named=True)
    assert same["alpha"] is None  # no variation: α is undefined, never reported as perfect


def test_intervals_are_seeded_and_narrow_with_more_items():
    def agreeing(n: int) -> pl.DataFrame:  # 3 in 4 identical
        rows = []
        for i in range(n):
            rows.append({"trial_key": "t", "criterion_id": f"i{i}", "kind": "content", "rater": "a", "verdict": "PASS"})
            rows.append(
                {
                    "trial_key": "t",
                    "criterion_id": f"i{i}",
                    "kind": "content",
                    "rater": "b",
                    "verdict": "PASS" if i % 4 else "FAIL",
                }
            )
        return pl.DataFrame(rows)

    small, large = pair(pairs(agreeing(20)), "a", "b"), pair(pairs(agreeing(320)), "a", "b")
    assert small["agreement"] == large["agreement"] == 0.75
    assert (large["agreement_hi"] - large["agreement_lo"]) < (small["agreement_hi"] - small["agreement_lo"]) / 2
    assert pairs(agreeing(20), seed=3).equals(pairs(agreeing(20), seed=3))
    unanimous = agreeing(4).filter(pl.col("criterion_id") != "i0")  # i0 is the one b fails
    whole = pair(pairs(unanimous), "a", "b")
    assert whole["items"] == 3 and (whole["agreement_lo"], whole["agreement_hi"]) == (1.0, 1.0)
    assert whole["kappa"] is None  # one label only: κ is undefined


def test_kappa_counts_partial_as_a_verdict_of_its_own():
    a, b = ["PASS", "PARTIAL", "PARTIAL", "FAIL"], ["PASS", "PARTIAL", "FAIL", "FAIL"]
    rows = [
        {"trial_key": "t", "criterion_id": f"i{i}", "kind": "content", "rater": r, "verdict": v}
        for r, vs in (("a", a), ("b", b))
        for i, v in enumerate(vs)
    ]
    # po = 3/4; pe = 1/4·1/4 (PASS) + 2/4·1/4 (PARTIAL) + 1/4·2/4 (FAIL) = 5/16 → κ = (12 − 5) / (16 − 5).
    assert pair(pairs(pl.DataFrame(rows)), "a", "b")["kappa"] == pytest.approx(7 / 11)
