"""``python -m codesign.report`` over a run folder of known trials: the intervals, breakdowns, attribution and
adjusted tables it writes, each against numbers worked out by hand in this file."""

from __future__ import annotations

import contextlib
import io

import polars as pl
import pytest

from codesign._types import CriterionVerdict, Evaluation, Telemetry, TrialRecord
from codesign.report.__main__ import main as report_main
from codesign.score import task_frame, verdict_frame

LETTERS = {"P": "PASS", "H": "PARTIAL", "F": "FAIL"}


def trial(model: str, task: str, track: str, verdicts: str, *, seed: str = "0", status: str = "ok",
          modality: str | None = None, edit_types: int | None = None, capability: tuple[str, ...] = (),
          attribution: str | None = None, turns: int = 1, cost: float = 0.0) -> TrialRecord:  # fmt: skip
    """A trial of cell (model, native, agentic, probe); ``verdicts`` like "PPHF" (PASS, PARTIAL, FAIL)."""
    cell = {"model": model, "harness": "native", "regime": "agentic", "evaluator": "probe", "seed": seed}
    vs = [CriterionVerdict(f"c{i}", "content", False, LETTERS[ch], "probe", "", []) for i, ch in enumerate(verdicts)]
    labels = {"modality": modality, "n_edit_types": edit_types, "capability": list(capability)}
    record = TrialRecord(f"{model}-{task}-{seed}", "e", task, track, cell, labels, status,
                         telemetry=Telemetry(turns=turns, cost_usd=cost, exit_status="submitted"),
                         evaluation=Evaluation(status, vs) if status == "ok" else None)  # fmt: skip
    if attribution:
        record.attribution = {"category": attribution, "reason": "by hand"}
    return record


# Cell m1: six planned trials, five scored. Per task (strict, graded, full pass):
#   a ME image  PPHF  0.5, 0.625, no       d RE 3 types  PHF   1/3, 0.5, no
#   b ME text   PP    1,   1,     yes      e RE 4 types  infra_error: not scored
#   c RE 2 types FF   0,   0,     no  (attributed to a defective task: out of the adjusted scores)
#   f ME image  FFFF  0,   0,     no  (attributed to the model: stays in)
M1 = [
    trial("m1", "a", "ME", "PPHF", modality="image", capability=("ui_transformation",)),
    trial("m1", "b", "ME", "PP", modality="text", capability=("ui_transformation", "grounded_understanding")),
    trial("m1", "c", "RE", "FF", edit_types=2, capability=("functional_implementation",),
          attribution="starting_artifact_defect"),
    trial("m1", "d", "RE", "PHF", edit_types=3, capability=("functional_implementation",)),
    trial("m1", "e", "RE", "", status="infra_error", edit_types=4, capability=("functional_implementation",)),
    trial("m1", "f", "ME", "FFFF", modality="image", attribution="model_limitation"),
]  # fmt: skip
# Cell m2: two ME tasks × two seeds. Strict per seed: seed 0 (1 + 0.5)/2 = 0.75, seed 1 (0.5 + 0)/2 = 0.25.
M2 = [
    trial("m2", "a", "ME", "PP", seed="0", modality="image", turns=2, cost=0.1),
    trial("m2", "b", "ME", "PF", seed="0", modality="image", turns=4, cost=0.2),
    trial("m2", "a", "ME", "PF", seed="1", modality="image", turns=6, cost=0.3),
    trial("m2", "b", "ME", "FF", seed="1", modality="image", turns=8, cost=0.4),
]
# Cell m3: four RE tasks scoring 0, 0, 0, 1 (the interval is a percentile interval, not the range: below).
M3 = [trial("m3", t, "RE", v, edit_types=1) for t, v in zip("wxyz", ["FF", "FF", "FF", "PP"], strict=True)]


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict[str, pl.DataFrame]:
    root = tmp_path_factory.mktemp("report-numbers")
    run = root / "run"
    run.mkdir()
    records = M1 + M2 + M3
    task_frame(records).write_parquet(run / "tasks.parquet")
    verdict_frame(records).write_parquet(run / "verdicts.parquet")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert report_main([str(run), "--out", str(root / "out" / "report.html"), "--no-plots"]) == 0
    tables = {p.stem: pl.read_parquet(p) for p in (root / "out").glob("*.parquet")}
    tables["html"] = (root / "out" / "report.html").read_text()  # type: ignore[assignment]
    return tables


def row(frame: pl.DataFrame, **where: str) -> dict:
    found = frame.filter(*(pl.col(k) == v for k, v in where.items()))
    assert found.height == 1, (where, found)
    return found.row(0, named=True)


def test_main_table_scores_counts_and_telemetry(report):
    m1 = row(report["main"], model="m1", track="ALL")
    # Task-normalized over the five scored trials: strict (0.5 + 1 + 0 + 1/3 + 0)/5 = 11/30,
    # graded (0.625 + 1 + 0 + 0.5 + 0)/5 = 0.425, full pass 1/5, zero pass (c, f) 2/5.
    assert (m1["planned"], m1["scored"], m1["tasks"], m1["errors"]) == (6, 5, 5, 1)
    assert m1["strict"] == pytest.approx(11 / 30) and m1["graded"] == pytest.approx(0.425)
    assert m1["full_pass"] == pytest.approx(0.2) and m1["zero_pass"] == pytest.approx(0.4)
    me, re_ = row(report["main"], model="m1", track="ME"), row(report["main"], model="m1", track="RE")
    assert me["strict"] == pytest.approx(0.5) and me["graded"] == pytest.approx(1.625 / 3)
    assert re_["strict"] == pytest.approx(1 / 6) and (re_["planned"], re_["scored"], re_["errors"]) == (3, 2, 1)
    m2 = row(report["main"], model="m2", track="ALL")
    assert m2["strict"] == pytest.approx(0.5) and m2["trials"] == 4 and m2["tasks"] == 2
    assert m2["turns_median"] == 5 and m2["cost_usd"] == pytest.approx(1.0)  # median of 2, 4, 6, 8; the sum


def test_intervals_and_spread_over_repeats(report):
    m2 = row(report["main"], model="m2", track="ALL")
    # Repeats: the sd of the per-seed scores 0.75 and 0.25 is sqrt(0.125). Task a fully passed in seed 0 only:
    # pass@2 = 1/2, pass^2 = 0.
    assert m2["repeats"] == 2 and m2["strict_sd"] == pytest.approx(0.125**0.5)
    assert m2["pass_at_k"] == pytest.approx(0.5) and m2["pass_pow_k"] == 0.0
    # Two tasks (means 0.75 and 0.25, over seeds): a resample is both-low with probability 1/4 and both-high
    # with 1/4, far more than the 2.5 % in each tail, so the 95 % interval is exactly [0.25, 0.75].
    assert (m2["strict_lo"], m2["strict_hi"]) == (pytest.approx(0.25), pytest.approx(0.75))
    m3 = row(report["main"], model="m3", track="RE")
    # Four tasks 0, 0, 0, 1: a resample's mean is k/4 with k ~ Binomial(4, 1/4). P(k = 0) = 81/256 fills the
    # lower tail, so lo = 0; P(k = 4) = 1/256 (0.4 %) is under 2.5 % but P(k >= 3) = 13/256 (5.1 %) is over,
    # so hi = 0.75 — neither the range's top (1) nor the mean (0.25).
    assert m3["strict"] == pytest.approx(0.25)
    assert (m3["strict_lo"], m3["strict_hi"]) == (0.0, pytest.approx(0.75))
    one = row(report["main"], model="m1", track="ME")  # no repeats: no spread over them
    assert one["repeats"] == 1 and one["strict_sd"] is None


def test_breakdowns_by_modality_edit_scope_and_capability(report):
    b = report["breakdowns"].filter(pl.col("model") == "m1")
    image = row(b, dimension="modality", group="image")  # a and f
    assert image["tasks"] == 2 and image["strict"] == pytest.approx(0.25) and image["graded"] == pytest.approx(0.3125)
    assert image["zero_pass"] == pytest.approx(0.5) and image["full_pass"] == 0.0
    assert row(b, dimension="modality", group="text")["strict"] == 1.0
    # RE by edit scope: 2 types counts as 1-2, 3 as 3-4; the errored trial (4 types) is in neither.
    low, high = row(b, dimension="edit_types", group="1-2"), row(b, dimension="edit_types", group="3-4")
    assert (low["tasks"], low["strict"], low["zero_pass"]) == (1, 0.0, 1.0)
    assert (high["tasks"], high["strict"], high["graded"]) == (1, pytest.approx(1 / 3), pytest.approx(0.5))
    # Capability: a task counts once in each of its dimensions; f has none and is in no capability group.
    capability = {r["group"]: r for r in b.filter(pl.col("dimension") == "capability").iter_rows(named=True)}
    assert set(capability) == {"ui_transformation", "grounded_understanding", "functional_implementation"}
    assert capability["ui_transformation"]["tasks"] == 2 and capability["ui_transformation"]["strict"] == 0.75
    assert capability["grounded_understanding"]["tasks"] == 1
    assert capability["functional_implementation"]["strict"] == pytest.approx(1 / 6)  # c and d; e not scored
    assert set(report["breakdowns"].filter(pl.col("model") == "m2")["group"]) == {"image"}  # no capability labels


def test_attribution_counts_and_what_the_adjusted_scores_leave_out(report):
    attribution = report["attribution"].filter(pl.col("model") == "m1")
    counts = {r["attribution"]: (r["trials"], r["left_out_of_adjusted"]) for r in attribution.iter_rows(named=True)}
    assert counts == {"starting_artifact_defect": (1, True), "model_limitation": (1, False)}
    adjusted = report["adjusted"].filter(pl.col("model") == "m1")
    all_ = row(adjusted, track="ALL")
    # Without c: (0.5 + 1 + 1/3 + 0)/4 = 11/24; the raw score beside it is unchanged (11/30).
    assert all_["strict"] == pytest.approx(11 / 30) and all_["strict_adjusted"] == pytest.approx(11 / 24)
    assert all_["left_out"] == 1 and all_["graded_adjusted"] == pytest.approx(2.125 / 4)
    re_ = row(adjusted, track="RE")
    assert re_["strict_adjusted"] == pytest.approx(1 / 3) and re_["left_out"] == 1
    me = row(adjusted, track="ME")  # f's low score is the model's own: it stays in
    assert me["strict_adjusted"] == pytest.approx(me["strict"]) and me["left_out"] == 0


def test_the_page_shows_the_same_numbers(report):
    html = report["html"]
    for shown in ("0.367", "0.458", "starting_artifact_defect", "grounded_understanding"):  # 11/30, 11/24
        assert shown in html, shown
