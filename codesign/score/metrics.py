"""The paper's metrics over verdict rows, with polars.

Per task: Strict = PASS share; Graded = (PASS + 0.5·PARTIAL) share; Full-Pass = every criterion PASS.
Averages weight tasks equally (not criteria), per track (ME, RE) and combined (ALL). Trials that
errored, whose grading failed or whose evaluation was aborted are counted and shown, never averaged in as
zeros; ``codesign.score.ledger`` accounts for every one.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Literal

import polars as pl

from codesign._types import TOOL_KINDS, VERDICT_SCORE, TrialRecord, TrialStatus, Ungraded, Verdict
from codesign.evaluate.fingerprint import grading_code
from codesign.redact import redact, redact_data

if TYPE_CHECKING:  # polars' own name for a column type (a class like pl.String or an instance like pl.List(…))
    from polars._typing import PolarsDataType

CELL = ["model", "harness", "regime", "evaluator"]
FAMILIES = ["solver_family", "judge_family", "verifier_family"]  # who made and who judged a cell's work
# Evaluator effort, per trial (LLM evaluators report it; probes cost nothing).
EVAL_TELEMETRY = {
    f"{role}_{k}": t
    for role in ("judge", "verifier")
    for k, t in (
        ("calls", pl.Int64),
        ("input_tokens", pl.Int64),
        ("output_tokens", pl.Int64),
        ("cost_usd", pl.Float64),
        ("abandoned_calls", pl.Int64),
    )
}
EVAL_TELEMETRY["evaluator_errors"] = pl.Int64
_SCORE = {v.value: s for v, s in VERDICT_SCORE.items()}


def graded_by_older_code(r: TrialRecord) -> bool:
    """Whether the trial's evaluation was reused from a store entry graded by other grading code."""
    code = r.evaluation.grading_code if r.evaluation else ""
    return bool(r.cached.get("evaluate") and code and code != grading_code())


def verdict_frame(records: list[TrialRecord]) -> pl.DataFrame:
    rows = []
    for r in records:
        if r.evaluation is None:
            continue
        for v in r.evaluation.verdicts:
            row = {
                **_cell(r),
                "trial_key": r.trial_key,
                "task_id": r.task_id,
                "track": r.track,
                **redact_data(asdict(v)),
            }
            row["score"] = _SCORE.get(v.verdict)  # null for an ungraded criterion: never a zero
            row["refutation"] = json.dumps(v.refutation) if v.refutation is not None else None
            rows.append(row)
    schema: dict[str, PolarsDataType] = {
        **dict.fromkeys([*CELL, "seed", "trial_key", "task_id", "track", "criterion_id", "kind"], pl.String),
        "preserve": pl.Boolean,
        "verdict": pl.String,
        "grader": pl.String,
        "reason": pl.String,
        "evidence_ids": pl.List(pl.String),
        "failure_category": pl.String,
        "original_verdict": pl.String,
        "refutation": pl.String,  # the verifier's trace as JSON
        "ungraded": pl.String,  # why no grader decided (codesign.Ungraded); null: graded
        "samples": pl.List(pl.String),  # every judge sample's verdict (evaluator.judge_samples > 1)
        "score": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema)


def _cell(r: TrialRecord) -> dict[str, str]:
    return {k: str(r.cell.get(k, "")) for k in [*CELL, "seed"]}


def task_frame(records: list[TrialRecord]) -> pl.DataFrame:
    """One row per trial: scores (null unless status is ok), labels and telemetry columns."""
    rows = []
    for r in records:
        t = r.telemetry
        row: dict[str, Any] = {
            **_cell(r),
            "trial_key": r.trial_key,
            "eval_key": r.eval_key,  # with trial_key: the stored evaluation (store/trials/<trial>/evals/<eval>)
            **{k: r.cell.get(k) for k in FAMILIES},  # provider families (codesign.solve.models.family)
            "task_id": r.task_id,
            "track": r.track,
            "status": r.status,
            "bucket": r.bucket,  # scored, or where the denominators count it (codesign.score.ledger)
            "stage": r.stage or None,
            "message": redact(r.message),
            "modality": r.labels.get("modality"),
            "n_edit_types": r.labels.get("n_edit_types"),
            "capability": ",".join(r.labels.get("capability", [])),
            "exit_status": t.exit_status if t else None,
            "exit_message": redact(t.message) if t else None,
            "turns": t.turns if t else None,
            "tool_calls": sum(t.tool_calls.values()) if t else None,
            **{f"tools_{k}": t.tool_calls.get(k, 0) if t else None for k in TOOL_KINDS},
            "input_tokens": t.input_tokens if t else None,
            "output_tokens": t.output_tokens if t else None,
            "cached_tokens": t.cached_tokens if t else None,
            "cost_usd": t.cost_usd if t else None,
            "cost_source": t.cost_source if t else None,
            "solve_s": t.wall_s if t else None,
            "eval_s": r.evaluation.wall_s if r.evaluation else None,
            "eval_attempts": r.evaluation.attempts if r.evaluation else None,
            "n_grading_failed": len(r.evaluation.grading_failures) if r.evaluation else None,
            "older_code": graded_by_older_code(r),
            **{k: (r.evaluation.telemetry.get(k) if r.evaluation else None) for k in EVAL_TELEMETRY},
            "node": r.node or None,  # where it ran (Ray node id)
            "retries": len(r.infra_events),  # attempts lost to the infrastructure (a dead worker or node) and re-run
            "infra_events": redact("; ".join(r.infra_events)) or None,
            "attribution": (r.attribution or {}).get("category"),
            "attribution_reason": redact((r.attribution or {}).get("reason") or "") or None,
            "n_criteria": None,
            "n_pass": None,
            "n_partial": None,
            "n_not_gradable": None,
            "strict": None,
            "graded": None,
            "full_pass": None,
        }
        if r.status == TrialStatus.OK and r.evaluation and r.evaluation.verdicts:
            verdicts = [v.verdict for v in r.evaluation.verdicts]
            n, n_pass, n_partial = len(verdicts), verdicts.count(Verdict.PASS), verdicts.count(Verdict.PARTIAL)
            not_gradable = sum(v.ungraded == Ungraded.NOT_GRADABLE for v in r.evaluation.verdicts)
            row |= {
                "n_not_gradable": not_gradable,
                "n_criteria": n,
                "n_pass": n_pass,
                "n_partial": n_partial,
                "strict": n_pass / n,
                "graded": (n_pass + 0.5 * n_partial) / n,
                "full_pass": n_pass == n,
            }
        rows.append(row)
    schema = {
        **dict.fromkeys(
            [
                *CELL,
                "seed",
                "trial_key",
                "eval_key",
                *FAMILIES,
                "task_id",
                "track",
                "status",
                "bucket",
                "stage",
                "message",
                "modality",
            ],
            pl.String,
        ),
        "n_edit_types": pl.Int64,
        "capability": pl.String,
        "exit_status": pl.String,
        "exit_message": pl.String,
        "turns": pl.Int64,
        "tool_calls": pl.Int64,
        **{f"tools_{k}": pl.Int64 for k in TOOL_KINDS},
        "input_tokens": pl.Int64,
        "output_tokens": pl.Int64,
        "cached_tokens": pl.Int64,
        "cost_usd": pl.Float64,
        "cost_source": pl.String,
        "solve_s": pl.Float64,
        "eval_s": pl.Float64,
        "eval_attempts": pl.Int64,  # gradings of the workspace in this run (a grading error is graded again)
        "n_grading_failed": pl.Int64,  # criteria whose grader failed (they make the trial a grading_error)
        "older_code": pl.Boolean,  # its evaluation was reused from older grading code (store.reuse=stale)
        **EVAL_TELEMETRY,
        "node": pl.String,
        "retries": pl.Int64,
        "infra_events": pl.String,
        "attribution": pl.String,
        "attribution_reason": pl.String,
        "n_criteria": pl.Int64,
        "n_pass": pl.Int64,
        "n_partial": pl.Int64,
        "n_not_gradable": pl.Int64,  # criteria this evaluator cannot grade (no probe): counted as FAIL
        "strict": pl.Float64,
        "graded": pl.Float64,
        "full_pass": pl.Boolean,
    }
    return pl.DataFrame(rows, schema=schema)


def summary_frame(tasks: pl.DataFrame) -> pl.DataFrame:
    """Per cell and track (ME, RE, ALL): task-normalized means plus error and abort counts."""
    # A task that failed to load has no known track: it shows in ALL only.
    both = pl.concat([tasks.filter(pl.col("track").is_in(["ME", "RE"])), tasks.with_columns(track=pl.lit("ALL"))])
    scored = pl.col("status") == TrialStatus.OK.value
    out = (
        both.group_by([*CELL, "track"])
        .agg(
            planned=pl.len(),  # trials planned: scored + every unscored one (the run's ledger says why)
            scored=scored.sum(),
            tasks=pl.col("task_id").filter(scored).n_unique(),  # tasks, not trials: repeats count once
            strict=pl.col("strict").filter(scored).mean(),
            graded=pl.col("graded").filter(scored).mean(),
            full_pass=pl.col("full_pass").filter(scored).cast(pl.Float64).mean(),
            zero_pass=(pl.col("n_pass") == 0).filter(scored).cast(pl.Float64).mean(),
            errors=pl.col("status").is_in([TrialStatus.TASK_ERROR.value, TrialStatus.INFRA_ERROR.value]).sum(),
            grading_errors=(pl.col("status") == TrialStatus.GRADING_ERROR.value).sum(),
            aborted=(pl.col("status") == TrialStatus.ABORTED.value).sum(),
            skipped=(pl.col("status") == TrialStatus.SKIPPED.value).sum(),
            capped=pl.col("exit_status").is_in(["turn_cap", "time_cap", "cost_cap"]).sum(),
            not_gradable=pl.col("n_not_gradable").filter(scored).sum(),
        )
        .with_columns(track_order=pl.col("track").replace_strict({"ME": 0, "RE": 1, "ALL": 2}, default=3))
        .sort([*CELL, "track_order"])
        .drop("track_order")
    )
    spread = pl.DataFrame(
        [
            {**dict(zip([*CELL, "track"], key, strict=True)), **_spread(group)}
            for key, group in both.filter(scored).group_by([*CELL, "track"])
        ],
        schema={**dict.fromkeys([*CELL, "track"], pl.String), **SPREAD},
    )
    return out.join(spread, on=[*CELL, "track"], how="left")


BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED = 1000, 0
SPREAD = {
    "repeats": pl.Int64,
    "strict_sd": pl.Float64,
    "strict_lo": pl.Float64,
    "strict_hi": pl.Float64,
    "pass_at_k": pl.Float64,
    "pass_pow_k": pl.Float64,
}


def _spread(trials: pl.DataFrame) -> dict[str, Any]:
    """Spread of one cell and track over its repeats (seeds) and tasks:
    - ``strict_sd``: standard deviation over repeats of the repeat's task-normalized strict score;
    - ``strict_lo``/``strict_hi``: a 95 % bootstrap interval over tasks (tasks resampled with replacement,
      each task's strict score averaged over its repeats; 1000 resamples, a fixed seed: reproducible);
    - ``pass_at_k`` / ``pass_pow_k``: share of tasks fully passed in at least one / in every one of k repeats.
    """
    import random
    import statistics

    by_task: dict[str, list[tuple[float, bool]]] = {}
    for r in trials.iter_rows(named=True):
        by_task.setdefault(r["task_id"], []).append((r["strict"], bool(r["full_pass"])))
    by_seed = trials.group_by("seed").agg(pl.col("strict").mean())["strict"].to_list()
    task_means = [statistics.fmean(s for s, _ in runs) for runs in by_task.values()]
    rng = random.Random(BOOTSTRAP_SEED)
    means = sorted(statistics.fmean(rng.choices(task_means, k=len(task_means))) for _ in range(BOOTSTRAP_RESAMPLES))
    return {
        "repeats": max(len(runs) for runs in by_task.values()),
        "strict_sd": statistics.stdev(by_seed) if len(by_seed) > 1 else None,
        "strict_lo": means[int(0.025 * BOOTSTRAP_RESAMPLES)],
        "strict_hi": means[int(0.975 * BOOTSTRAP_RESAMPLES) - 1],
        "pass_at_k": statistics.fmean(any(f for _, f in runs) for runs in by_task.values()),
        "pass_pow_k": statistics.fmean(all(f for _, f in runs) for runs in by_task.values()),
    }


# Low scores the solver is not to blame for: left out of the environment-adjusted scores.
NOT_THE_SOLVER = ("starting_artifact_defect", "environment_blockage", "not_gradable")


def adjusted_frame(tasks: pl.DataFrame) -> pl.DataFrame:
    """Environment-adjusted scores (kept apart from the raw ones): the summary without trials whose low
    score was attributed to a defective task or to a blocked environment, with how many were left out."""
    excluded = pl.col("attribution").is_in(list(NOT_THE_SOLVER)).fill_null(False)
    marked = tasks.with_columns(status=pl.when(excluded).then(pl.lit("left_out")).otherwise(pl.col("status")))
    left_out = (
        pl.concat([marked.filter(pl.col("track").is_in(["ME", "RE"])), marked.with_columns(track=pl.lit("ALL"))])
        .group_by([*CELL, "track"])
        .agg(left_out=(pl.col("status") == "left_out").sum())
    )
    return summary_frame(marked).join(left_out, on=[*CELL, "track"], how="left")


def breakdown_frame(tasks: pl.DataFrame) -> pl.DataFrame:
    """The paper's breakdowns, task-normalized per cell: ME by attachment modality, RE by edit-type count
    (1-2 vs 3-4), and both tracks by capability dimension (a task counts once in each of its dimensions)."""
    scored = tasks.filter(pl.col("status") == TrialStatus.OK.value)
    metrics = [
        pl.len().alias("tasks"),
        pl.col("strict").mean(),
        pl.col("graded").mean(),
        pl.col("full_pass").cast(pl.Float64).mean(),
        (pl.col("n_pass") == 0).cast(pl.Float64).mean().alias("zero_pass"),
    ]
    parts = [
        scored.filter(pl.col("track") == "ME").with_columns(dimension=pl.lit("modality"), group=pl.col("modality")),
        scored.filter(pl.col("track") == "RE").with_columns(
            dimension=pl.lit("edit_types"),
            group=pl.when(pl.col("n_edit_types") <= 2).then(pl.lit("1-2")).otherwise(pl.lit("3-4")),
        ),
        # A task without capability labels is in no capability group (not in one named "").
        scored.with_columns(dimension=pl.lit("capability"), group=pl.col("capability").str.split(","))
        .explode("group")
        .filter(pl.col("group") != ""),
    ]
    both = pl.concat(
        [p.select([*CELL, "dimension", "group", "strict", "graded", "full_pass", "n_pass"]) for p in parts]
    )
    return both.group_by([*CELL, "dimension", "group"]).agg(metrics).sort([*CELL, "dimension", "group"])


def format_summary(summary: pl.DataFrame) -> str:
    """The console table: scores with their 95 % interval; spread over repeats when there are repeats."""
    shown = summary.with_columns(pl.col(c).round(3) for c in ("strict", "graded", "full_pass", "zero_pass"))
    if "strict_lo" in shown.columns:
        interval = pl.format("{}–{}", pl.col("strict_lo").round(2), pl.col("strict_hi").round(2))
        shown = shown.with_columns(strict_95ci=interval).drop("strict_lo", "strict_hi")
        if (shown["repeats"] > 1).any():
            shown = shown.with_columns(pl.col("strict_sd", "pass_at_k", "pass_pow_k").round(3))
        else:
            shown = shown.drop("repeats", "strict_sd", "pass_at_k", "pass_pow_k")
    with whole_tables():
        return str(shown)


def whole_tables(
    formatting: Literal["ASCII_MARKDOWN", "MARKDOWN"] = "ASCII_MARKDOWN", width: int = 1000, text: int = 40, **more: Any
) -> pl.Config:
    """polars' settings for printing a table whole, as Markdown: every row and column, no shape, no dtypes."""
    return pl.Config(
        tbl_formatting=formatting,
        tbl_hide_dataframe_shape=True,
        tbl_hide_column_data_types=True,
        tbl_rows=-1,
        tbl_cols=-1,
        tbl_width_chars=width,
        fmt_str_lengths=text,
        **more,
    )


def format_errors(tasks: pl.DataFrame) -> str:
    """The trials left out of the scores, each kind with its cause: ``errors`` and ``aborted`` in the summary
    are counts; this says why (one line per status and cause, with the tasks it hit)."""
    left_out = [
        TrialStatus.TASK_ERROR.value,
        TrialStatus.INFRA_ERROR.value,
        TrialStatus.GRADING_ERROR.value,
        TrialStatus.ABORTED.value,
    ]
    rows = (
        tasks.filter(pl.col("status").is_in(left_out))
        .with_columns(cause=pl.col("message").fill_null("").str.split("\n").list.first().str.slice(0, 200))
        .with_columns(
            status=pl.when(pl.col("stage").is_not_null())
            .then(pl.format("{} ({})", pl.col("status"), pl.col("stage")))
            .otherwise(pl.col("status"))
        )
        .group_by("status", "cause")
        .agg(pl.len().alias("n"), pl.col("task_id").unique().sort())
        .sort("status", "n", descending=[False, True])
    )
    return "\n".join(
        f"{r['status']} ×{r['n']}: {r['cause']} [{', '.join(r['task_id'][:5])}{' …' * (len(r['task_id']) > 5)}]"
        for r in rows.iter_rows(named=True)
    )
