"""Structured verdicts: the judge and verifier are asked for their reply by JSON schema (litellm's
``response_format``) where the provider supports it, and fall back to strictly parsed replies where it does not."""

from __future__ import annotations

import json

import pytest

from codesign.testing.model_server import Reply, ServedRequest
from tests.test_judge import KEY_ENV, by_criterion, careful_judge, evaluate

pytestmark = [pytest.mark.browser, pytest.mark.slow]
REFUSAL = "response_format json_schema is not supported by this model"


def shapes(requests: list[ServedRequest]) -> list[str | None]:
    return [(r.body.get("response_format") or {}).get("json_schema", {}).get("name") for r in requests]


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-judge")


def test_json_schema_asks_every_call_for_the_replys_schema_and_the_verdicts_stand(tmp_path):
    tables = evaluate(tmp_path, careful_judge, None, "oracle", None, "evaluator.structured=json_schema")
    judge, verifier = tables["judge_requests"], tables["verifier_requests"]
    assert set(shapes(judge)) == {"JudgeReply"} and set(shapes(verifier)) == {"VerifierReply"}
    schema = judge[0].body["response_format"]["json_schema"]["schema"]
    assert {"verdict", "reason", "evidence_ids"} <= set(schema["properties"])
    assert {r["verdict"] for r in by_criterion(tables).values()} == {"PASS"}
    telemetry = tables["tasks"].row(0, named=True)
    assert telemetry["status"] == "ok"
    stored = json.loads(next((tmp_path / "store").glob("trials/*/evals/*/evaluation.json")).read_text())
    assert stored["telemetry"]["judge_structured"] == "json_schema"


def test_auto_asks_by_schema_only_where_litellm_knows_the_model_supports_it(tmp_path):
    unknown = evaluate(tmp_path / "a", careful_judge, None, "oracle", None)  # openai/scripted: not known
    assert set(shapes(unknown["judge_requests"])) == {None}
    known = evaluate(tmp_path / "b", careful_judge, None, "oracle", None, "evaluator.judge.model=openai/gpt-4o")
    assert set(shapes(known["judge_requests"])) == {"JudgeReply"}  # gpt-4o: litellm says it takes a schema
    assert set(shapes(known["verifier_requests"])) == {None}  # the verifier is still openai/scripted
    assert set(shapes(evaluate(tmp_path / "c", careful_judge, None, "oracle", None, "evaluator.structured=off",
                               "evaluator.judge.model=openai/gpt-4o")["judge_requests"])) == {None}  # fmt: skip


def test_a_provider_that_refuses_the_schema_is_asked_again_without_it_and_the_run_says_so(tmp_path):
    def refusing(req: ServedRequest) -> Reply:
        if req.body.get("response_format"):
            return Reply(status=400, content=REFUSAL)
        return careful_judge(req)

    tables = evaluate(tmp_path, refusing, None, "oracle", None, "evaluator.structured=json_schema")
    assert {r["verdict"] for r in by_criterion(tables).values()} == {"PASS"}  # graded, nothing lost
    judge = tables["judge_requests"]
    assert shapes(judge)[0] == "JudgeReply" and None in shapes(judge)
    stored = json.loads(next((tmp_path / "store").glob("trials/*/evals/*/evaluation.json")).read_text())
    assert stored["telemetry"]["judge_structured"] == "fallback"

    # Any other failure of a call is not a refusal of the schema: it is not retried as one.
    def broken(req: ServedRequest) -> Reply:
        return Reply(status=400, content="context length exceeded")

    failed = evaluate(tmp_path / "broken", broken, None, "oracle", None, "evaluator.structured=json_schema",
                      "evaluator.max_retries=0")  # fmt: skip
    assert failed["tasks"].row(0, named=True)["status"] == "grading_error"
    assert set(shapes(failed["judge_requests"])) == {"JudgeReply"}
