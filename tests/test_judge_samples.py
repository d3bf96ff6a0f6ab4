"""Judge noise: ``evaluator.judge_samples=k`` judges each criterion k times with seeds seed … seed+k-1, keeps
every sample, lets the majority stand (ties to the lower verdict), charges every call and reports the flip
rate with its interval."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import polars as pl
import pytest

from codesign.report import build_report, collect, find_runs, markdown
from codesign.score.noise import wilson
from codesign.testing.model_server import Reply, ServedRequest
from tests.test_judge import KEY_ENV, evaluate, is_verifier, make_task, not_refuted, verdict

pytestmark = [pytest.mark.browser, pytest.mark.slow]
N = 24  # criteria of one task: enough for an interval that says something
CRITERIA = "criteria:\n" + "".join(
    f"  - id: c{i:02d}\n    text: The page shows fact number {i}.\n    kind: {'visual' if i % 3 == 0 else 'content'}\n"
    for i in range(N)
)


def coin(req: ServedRequest, q: float = 0.5) -> bool:
    """PASS with probability q, decided by the sample's seed and the criterion (the same request, the same
    answer: the run is reproducible, and over criteria the answers are independent draws)."""
    criterion = re.search(r"id: (c\d\d)", json.dumps(req.messages)).group(1)
    digest = hashlib.sha256(f"{req.body.get('seed')}:{criterion}".encode()).digest()
    return digest[0] / 256 < q


def random_judge(req: ServedRequest) -> Reply:
    if is_verifier(req):
        return not_refuted()
    return verdict("PASS" if coin(req) else "FAIL", ["shot:/@desktop", "dom:/@desktop"])


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-judge")


def sampled(tmp_path: Path, judge, k: int) -> dict:
    root = make_task(tmp_path / "suite", criteria=CRITERIA)
    return evaluate(tmp_path, judge, None, "oracle", root, f"evaluator.judge_samples={k}")


def test_a_judge_answering_at_random_flips_at_its_known_rate_and_the_majority_stands(tmp_path):
    tables = sampled(tmp_path, random_judge, 3)
    rows = tables["verdicts"].to_dicts()
    assert len(rows) == N and all(len(r["samples"]) == 3 for r in rows)
    for r in rows:  # the majority of three samples stands (before the verifier, who never refutes here)
        assert r["verdict"] == max(set(r["samples"]), key=r["samples"].count)
    seeds = sorted({q.body.get("seed") for q in tables["judge_requests"]})
    assert seeds == [7, 8, 9]  # the judge's seed, then the next two
    noise = pl.read_parquet(tmp_path / "run" / "noise.parquet")
    overall = noise.filter(pl.col("kind") == "all").row(0, named=True)
    expected = 1 - 0.5**3 - 0.5**3  # three fair coins are not all equal with probability 3/4
    assert overall["criteria"] == N and overall["samples"] == 3
    assert overall["flip_rate_lo"] <= expected <= overall["flip_rate_hi"]
    assert overall["flip_rate"] == pytest.approx(sum(len(set(r["samples"])) > 1 for r in rows) / N)
    assert set(noise["kind"]) == {"all", "content", "visual"}
    across = build_report(collect(find_runs([tmp_path / "run"])), draw=False)  # the cross-run report's table
    assert across.noise.equals(noise) and "### Judge noise" in markdown(across)
    # Every call charged: 3 judge calls per criterion, and the verifier for each PASS majority.
    stored = json.loads(next((tmp_path / "store").glob("trials/*/evals/*/evaluation.json")).read_text())
    assert stored["telemetry"]["judge_calls"] == 3 * N == len(tables["judge_requests"])
    assert stored["telemetry"]["verifier_calls"] == sum(r["verdict"] == "PASS" for r in rows)


@pytest.mark.duration(43)
def test_a_steady_judge_does_not_flip_and_a_tie_goes_to_the_lower_verdict(tmp_path):
    def split(req: ServedRequest) -> Reply:  # seed 7 passes everything, seed 8 fails everything
        if is_verifier(req):
            return not_refuted()
        return verdict("PASS" if req.body.get("seed") == 7 else "FAIL", ["shot:/@desktop", "dom:/@desktop"])

    tied = sampled(tmp_path / "tied", split, 2)
    assert {r["verdict"] for r in tied["verdicts"].to_dicts()} == {"FAIL"}  # PASS, FAIL: noise never raises
    assert {tuple(r["samples"]) for r in tied["verdicts"].to_dicts()} == {("PASS", "FAIL")}
    sampled(tmp_path / "steady", lambda req: not_refuted() if is_verifier(req) else
                     verdict("PASS", ["shot:/@desktop", "dom:/@desktop"]), 3)  # fmt: skip
    overall = pl.read_parquet(tmp_path / "steady" / "run" / "noise.parquet").filter(pl.col("kind") == "all")
    assert overall.row(0, named=True)["flip_rate"] == 0.0
    assert overall.row(0, named=True)["flip_rate_hi"] == pytest.approx(wilson(0, N)[1]) and wilson(0, N)[1] < 0.15
    single = evaluate(tmp_path / "single", random_judge, None, "oracle", make_task(tmp_path / "single" / "suite",
                      criteria=CRITERIA))  # fmt: skip
    assert single["verdicts"]["samples"].null_count() == N  # one sample: nothing to compare, no noise table rows


def test_the_wilson_interval_matches_hand_computed_values():
    lo, hi = wilson(18, 24)  # p = 0.75, z = 1.96: centre 0.8300 / 1.1601 = 0.7155, half-width 0.1645 (by hand)
    assert (lo, hi) == (pytest.approx(0.5510, abs=1e-3), pytest.approx(0.8800, abs=1e-3))
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] == pytest.approx(1.0)
