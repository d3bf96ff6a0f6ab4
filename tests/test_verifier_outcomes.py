"""What the verifier and the evidence audit do to a judge's verdict, with scripted judge and verifier servers:
a verifier that errors leaves the criterion ungraded (never the judge's PASS), a verifier may lower a PASS to
PARTIAL, and a positive verdict citing evidence that does not exist aborts the trial."""

from __future__ import annotations

import json

import pytest

from codesign.testing.model_server import Reply, ServedRequest
from tests.test_judge import by_criterion, careful_judge, criterion_of, evaluate, is_verifier, not_refuted, verdict

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("CODESIGN_JUDGE_KEY", "sk-judge")


def stored_evaluations(tmp_path) -> list:
    return list((tmp_path / "store").glob("trials/*/evals/*/evaluation.json"))


@pytest.mark.parametrize("failure", ["malformed", "http_error"])
def test_a_verifier_that_errors_leaves_the_pass_ungraded_and_the_trial_a_grading_error(tmp_path, failure):
    """The judge PASSes every criterion; the verifier fails on one of them — with a reply that is never the
    JSON object, or with an API error. That criterion is ungraded (a grader error of the verifier, the judge's
    PASS kept as the original), the trial is a grading error (no score), and nothing is stored as finished."""

    def verifier(req: ServedRequest) -> Reply:
        if criterion_of(req) != "note-text":
            return not_refuted()
        if failure == "malformed":
            return Reply("I agree with the judge.")
        return Reply(status=400)  # a bad request: not retried by the client

    tables = evaluate(tmp_path, careful_judge, verifier, "oracle", None, "evaluator.max_retries=0")
    v = by_criterion(tables)
    note = v["note-text"]
    assert note["verdict"] == "UNGRADED" and note["ungraded"] == "grader_error" and note["score"] is None
    assert note["grader"] == "verifier" and note["original_verdict"] == "PASS"
    assert note["reason"].startswith("the verifier gave no verdict on the judge's PASS"), note["reason"]
    assert ("malformed reply" if failure == "malformed" else "400") in note["reason"]
    assert v["heading-colour"]["verdict"] == "PASS" and v["counter-works"]["verdict"] == "PASS"
    task = tables["tasks"].row(0, named=True)
    assert task["status"] == "grading_error" and task["strict"] is None and task["evaluator_errors"] == 1
    assert not stored_evaluations(tmp_path)  # graded again next run, never reused


def test_the_verifier_lowers_a_pass_to_partial(tmp_path):
    def verifier(req: ServedRequest) -> Reply:
        if criterion_of(req) == "note-text":
            return Reply(
                json.dumps(
                    {
                        "refuted": True,
                        "verdict": "PARTIAL",
                        "evidence_ids": ["dom:/@mobile"],
                        "reason": "the note says Thanks for visiting but keeps the old sentence too",
                    }
                )
            )
        return not_refuted()  # fmt: skip

    tables = evaluate(tmp_path, careful_judge, verifier)
    note = by_criterion(tables)["note-text"]
    assert note["verdict"] == "PARTIAL" and note["original_verdict"] == "PASS" and note["grader"] == "verifier"
    assert note["failure_category"] == "refuted" and note["score"] == 0.5
    assert "| refuted: the note says Thanks for visiting" in note["reason"]
    assert note["evidence_ids"] == ["shot:/@desktop", "dom:/@desktop", "dom:/@mobile"]  # the judge's, then its own
    assert json.loads(note["refutation"])["verdict"] == "PARTIAL"
    task = tables["tasks"].row(0, named=True)
    # Two PASS and one PARTIAL of three: strict 2/3, graded (2 + 0.5)/3, not a full pass.
    assert task["status"] == "ok" and task["strict"] == pytest.approx(2 / 3)
    assert task["graded"] == pytest.approx(2.5 / 3) and task["full_pass"] is False
    assert len(stored_evaluations(tmp_path)) == 1


def test_a_verifier_cannot_raise_a_verdict(tmp_path):
    """A PARTIAL challenged with "refuted, PARTIAL" (or anything not lower) stands as the judge gave it."""

    def judge(req: ServedRequest) -> Reply:
        if criterion_of(req) == "note-text":
            return verdict("PARTIAL", ["dom:/@desktop"], "the note is changed but misspelt")
        return careful_judge(req)

    def verifier(req: ServedRequest) -> Reply:
        return Reply(json.dumps({"refuted": True, "verdict": "PARTIAL", "reason": "it is only partly done, I agree",
                                 "evidence_ids": []}))  # fmt: skip

    note = by_criterion(evaluate(tmp_path, judge, verifier))["note-text"]
    assert note["verdict"] == "PARTIAL" and note["grader"] == "judge" and note["original_verdict"] is None


JUDGE_PASSES = ["shot:/@desktop", "dom:/@desktop"]


@pytest.mark.parametrize(
    ("judge_cites", "verifier_lowers_citing", "aborted"),
    [
        (["dom:/@desktop", "shot:/pricing@desktop"], None, "note-text: PASS cites evidence that does not exist: "
                                                           "['shot:/pricing@desktop']"),
        (JUDGE_PASSES, ["dom:/settings@mobile"], "note-text: PARTIAL cites evidence that does not exist: "
                                                 "['dom:/settings@mobile']"),
        (JUDGE_PASSES, None, None),  # every id exists: the control
    ],
    ids=["judge", "verifier", "control"],
)  # fmt: skip
def test_a_positive_verdict_citing_evidence_that_does_not_exist_aborts_the_trial(
    tmp_path, judge_cites, verifier_lowers_citing, aborted
):
    def judge(req: ServedRequest) -> Reply:
        if criterion_of(req) == "note-text":
            return verdict("PASS", judge_cites, "the note reads Thanks for visiting")
        return careful_judge(req)

    def verifier(req: ServedRequest) -> Reply:
        if criterion_of(req) == "note-text" and verifier_lowers_citing:
            return Reply(
                json.dumps(
                    {
                        "refuted": True,
                        "verdict": "PARTIAL",
                        "evidence_ids": verifier_lowers_citing,
                        "reason": "the settings page at mobile width still shows the old note",
                    }
                )
            )
        return not_refuted()  # fmt: skip

    tables = evaluate(tmp_path, judge, verifier)
    task = tables["tasks"].row(0, named=True)
    if aborted is None:
        assert task["status"] == "ok" and task["strict"] == 1.0
        return
    assert task["status"] == "aborted" and task["strict"] is None
    assert "evidence audit failed" in task["message"] and aborted in task["message"]
    # The verdicts graded before the abort are kept for the record.
    assert by_criterion(tables)["heading-colour"]["verdict"] == "PASS"


def test_a_fail_citing_evidence_that_does_not_exist_is_not_audited_and_audit_off_lets_a_pass_through(tmp_path):
    """A FAIL claims no satisfaction: its citations are not audited. ``evaluator.audit=false`` turns the audit
    off: the same bogus PASS then stands (so the audit is what aborts the trials above)."""

    def judge(req: ServedRequest) -> Reply:
        if is_verifier(req):
            return not_refuted()
        if criterion_of(req) == "note-text":
            return verdict("FAIL", ["dom:/nowhere@desktop"], "the note still says Come again soon")
        if criterion_of(req) == "heading-colour":
            return verdict("PASS", ["shot:/nowhere@desktop"], "the heading is dark blue")
        return careful_judge(req)

    audited = evaluate(tmp_path / "on", judge)["tasks"].row(0, named=True)
    assert audited["status"] == "aborted" and "note-text" not in audited["message"]
    assert "heading-colour: PASS cites evidence that does not exist: ['shot:/nowhere@desktop']" in audited["message"]
    unaudited = evaluate(tmp_path / "off", judge, None, "oracle", None, "evaluator.audit=false")
    task = unaudited["tasks"].row(0, named=True)
    assert task["status"] == "ok" and by_criterion(unaudited)["heading-colour"]["verdict"] == "PASS"
