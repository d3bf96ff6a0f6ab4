"""Judges are timed and charged for what they do: a criterion's time bound counts its calls, not the queues
around them; a call past the bound is cancelled, gives its endpoint slot back, and what it cost is charged."""

from __future__ import annotations

from pathlib import Path

import pytest

from codesign.testing.model_server import Reply, ServedRequest
from tests.test_judge import KEY_ENV, criterion_of, evaluate, make_task, verdict

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ALONE = ["evaluator.verifier=null", "evaluator.audit=false", "evaluator.max_retries=0", "attribution.below=null"]


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-judge")


def many_criteria(root: Path, n: int) -> Path:
    make_task(root)
    lines = ["criteria:"] + [f"  - id: note-{i}\n    text: The page has a note ({i}).\n    kind: content"
                             for i in range(n)]  # fmt: skip
    (root / "counter" / "criteria.yaml").write_text("\n".join(lines) + "\n")
    return root


def test_sixteen_evaluations_in_flight_judged_in_1_s_each_never_run_out_of_a_5_s_bound(tmp_path):
    """16 trials graded at once, 2 criteria each: 32 judge calls of 1 s each through an endpoint that takes 4 at
    a time (``max_concurrency``) — the last ones wait ~7 s for a slot. Waiting is not the judge's time: no
    criterion may run out of its 5 s bound, and the endpoint never sees more than 4 calls at once."""

    def slow_judge(req: ServedRequest) -> Reply:
        return Reply(verdict("PASS", ["dom:/@desktop"], "the note is on the page").content, delay_s=1.0)

    root = many_criteria(tmp_path / "suite", 2)
    tables = evaluate(tmp_path, slow_judge, None, "oracle", root, *ALONE, f"seeds=[{','.join(map(str, range(16)))}]",
                      "executor.max_concurrency=16", "browser.slots=16", "evaluator.judge.max_concurrency=4",
                      "evaluator.criterion_timeout_s=5")  # fmt: skip
    trials = tables["tasks"]
    assert trials.height == 16 and set(trials["status"]) == {"ok"}, trials["message"].to_list()
    assert set(tables["verdicts"]["verdict"]) == {"PASS"} and tables["verdicts"].height == 16 * 2
    assert len(tables["judge_requests"]) == 16 * 2 and tables["judge_peak_in_flight"] == 4


def test_a_call_past_its_bound_is_cancelled_gives_its_slot_back_and_is_charged(tmp_path):
    """One endpoint slot (max_concurrency=1); the first criterion's call never answers in time (60 s against an
    8 s bound). It is abandoned: the other criteria's calls go ahead while it would still be running (the
    server sees two at once), and its prompt is charged at the configured price."""

    def judge(req: ServedRequest) -> Reply:
        if criterion_of(req) == "heading-colour":  # graded first (evaluator.concurrency=1)
            return Reply(verdict("PASS", ["shot:/@desktop"], "seen in the screenshot").content, delay_s=60.0)
        return verdict("PASS", ["dom:/@desktop", "shot:/@desktop"], "seen in the page text and screenshot")

    prices = ["evaluator.judge.input_cost_per_mtok=1000", "evaluator.judge.output_cost_per_mtok=1000"]
    tables = evaluate(tmp_path, judge, None, "oracle", None, *ALONE, *prices, "evaluator.judge.max_concurrency=1",
                      "evaluator.criterion_timeout_s=8", "evaluator.concurrency=1")  # fmt: skip
    verdicts = {r["criterion_id"]: r for r in tables["verdicts"].iter_rows(named=True)}
    assert verdicts["note-text"]["verdict"] == verdicts["counter-works"]["verdict"] == "PASS"
    late = verdicts["heading-colour"]
    assert late["ungraded"] == "grader_error" and "8 s of work" in late["reason"], late["reason"]
    trial = tables["tasks"].row(0, named=True)
    assert trial["judge_abandoned_calls"] == 1 and trial["judge_calls"] == 2  # two answered, one abandoned
    assert len(tables["judge_requests"]) == 3  # the abandoned one reached the server too
    # Charged: the two answers at their usage, plus the abandoned prompt's input tokens (an estimate).
    answered = (trial["judge_input_tokens"] + trial["judge_output_tokens"]) * 1000 / 1e6
    assert trial["judge_cost_usd"] > answered
    assert tables["judge_peak_in_flight"] == 2  # the slot came back while the abandoned call was still answered
