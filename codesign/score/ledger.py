"""The ledger: every planned trial and every criterion, scored or not, with who graded it or why nothing did.

A number in a paper needs its denominator. ``ledger_frame`` has one row per trial × criterion (one row
with no criterion for a trial that never reached grading): the trial's status and, when it is left out of
the scores, its bucket and cause; the criterion's grader, verdict and, when no grader decided it, why.
``denominators_frame`` sums it per cell: trials planned, scored, and each unscored bucket; criteria by
grader. Nothing planned is missing from it: every trial spec ends as exactly one record (README, *Metrics*).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from codesign._types import TrialRecord, TrialStatus, Ungraded
from codesign.redact import redact
from codesign.score.metrics import CELL, graded_by_older_code

# Unscored buckets, in the order the tables show them: trial status (and, for errors, where or why).
INFRA_STAGES = ("solve", "evaluate", "worker")  # an infra_error's stage ("worker": its worker was lost)
GRADING_CAUSES = (Ungraded.GRADER_ERROR.value, Ungraded.INFRA.value, Ungraded.UNDECIDED_TIMEOUT.value)
GRADERS = ("probe", "script", "spec", "command", "judge")

SCHEMA: dict[str, Any] = {
    **dict.fromkeys(
        [*CELL, "seed", "trial_key", "eval_key", "task_id", "track", "status", "bucket", "cause"], pl.String
    ),
    "scored": pl.Boolean,  # the trial is in the scores (status ok)
    "attempts": pl.Int64,  # gradings of its workspace in this run
    "grading_code": pl.String,  # the grading code that decided its verdicts (codesign.evaluate.fingerprint)
    "older_code": pl.Boolean,  # reused (store.reuse=stale) from grading code other than this run's
    **dict.fromkeys(
        ["criterion_id", "kind", "grader", "verdict", "ungraded", "failure_category", "original_verdict"], pl.String
    ),
}


def ledger_frame(records: list[TrialRecord]) -> pl.DataFrame:
    rows: list[dict[str, Any]] = []
    for r in records:
        verdicts = r.evaluation.verdicts if r.evaluation else []
        trial = {
            **{k: str(r.cell.get(k, "")) for k in [*CELL, "seed"]},
            "trial_key": r.trial_key or None,
            "eval_key": r.eval_key,
            "task_id": r.task_id,
            "track": r.track,
            "status": r.status,
            "bucket": r.bucket,
            "scored": r.status == TrialStatus.OK,
            "cause": None if r.status == TrialStatus.OK else (redact(r.message).split("\n")[0][:500] or None),
            "attempts": r.evaluation.attempts if r.evaluation else None,
            "grading_code": (r.evaluation.grading_code or None) if r.evaluation else None,
            "older_code": graded_by_older_code(r),
        }
        if not verdicts:
            rows.append(trial)
            continue
        for v in verdicts:
            rows.append(
                {
                    **trial,
                    "criterion_id": v.criterion_id,
                    "kind": v.kind,
                    "grader": v.grader,
                    "verdict": v.verdict,
                    "ungraded": v.ungraded,
                    "failure_category": v.failure_category,
                    "original_verdict": v.original_verdict,
                }
            )
    return pl.DataFrame(rows, schema=SCHEMA)


def criteria_of(tasks: pl.DataFrame, verdicts: pl.DataFrame) -> pl.DataFrame:
    """The ledger's criterion rows rebuilt from a run's ``tasks`` and ``verdicts`` tables (a cross-run report
    reads those): each verdict with whether its trial is scored. Older tables lack ``ungraded``: null then."""
    if verdicts.is_empty():
        return pl.DataFrame(
            schema={
                k: SCHEMA[k]
                for k in [*CELL, "seed", "task_id", "scored", "criterion_id", "grader", "ungraded", "original_verdict"]
            }
        )
    if "ungraded" not in verdicts.columns:
        verdicts = verdicts.with_columns(ungraded=pl.lit(None, pl.String))
    keys = [*CELL, "seed", "task_id", *(["run"] if "run" in tasks.columns and "run" in verdicts.columns else [])]
    status = tasks.select(*keys, scored=pl.col("status") == TrialStatus.OK.value)
    return verdicts.join(status, on=keys, how="inner")


def denominators_frame(tasks: pl.DataFrame, ledger: pl.DataFrame) -> pl.DataFrame:
    """Per cell: trials ``planned`` = ``scored`` + every unscored bucket (``task_error``, ``infra_error`` by
    stage, ``grading_error`` — and, per cause, the grading errors with a criterion of that cause, so those
    columns may add up to more —, ``aborted``, ``skipped``, ``solved`` only); then the criteria of the scored
    trials by grader (``by_probe`` … ``by_judge``, of which ``verifier_lowered``; ``not_gradable`` ones count as
    FAIL) and the criteria of grading-error trials no grader decided (``ungraded_<cause>``). ``tasks`` is the
    run's one row per trial (``codesign.score.task_frame``), ``ledger`` its :func:`ledger_frame` (or
    :func:`criteria_of`)."""
    per_trial = tasks.group_by(CELL).agg(
        planned=pl.len(),
        scored=(pl.col("status") == TrialStatus.OK.value).sum(),
        task_error=(pl.col("status") == TrialStatus.TASK_ERROR.value).sum(),
        **{f"infra_error_{s}": (pl.col("bucket") == f"infra_error:{s}").sum() for s in INFRA_STAGES},
        infra_error_other=(
            pl.col("bucket").str.starts_with("infra_error:")
            & ~pl.col("bucket").is_in([f"infra_error:{s}" for s in INFRA_STAGES])
        ).sum(),
        grading_error=(pl.col("status") == TrialStatus.GRADING_ERROR.value).sum(),
        **{
            f"grading_error_{c}": (
                (pl.col("status") == TrialStatus.GRADING_ERROR.value) & pl.col("bucket").str.contains(c, literal=True)
            ).sum()
            for c in GRADING_CAUSES
        },
        aborted=(pl.col("status") == TrialStatus.ABORTED.value).sum(),
        skipped=(pl.col("status") == TrialStatus.SKIPPED.value).sum(),
        solved_only=(pl.col("status") == TrialStatus.SOLVED.value).sum(),
        older_code=pl.col("older_code").fill_null(False).sum(),  # reused from older grading code (reuse=stale)
    )
    criteria = ledger.filter(pl.col("criterion_id").is_not_null())
    in_scores = pl.col("scored")
    graded = in_scores & pl.col("ungraded").is_null()
    per_criterion = criteria.group_by(CELL).agg(
        criteria_scored=in_scores.sum(),
        **{f"by_{g}": (graded & (pl.col("grader") == g)).sum() for g in ("probe", "script", "spec", "command")},
        by_judge=(graded & pl.col("grader").is_in(["judge", "verifier"])).sum(),
        verifier_lowered=(graded & (pl.col("grader") == "verifier") & pl.col("original_verdict").is_not_null()).sum(),
        not_gradable=(in_scores & (pl.col("ungraded") == Ungraded.NOT_GRADABLE.value)).sum(),
        **{f"ungraded_{c}": (pl.col("ungraded") == c).sum() for c in GRADING_CAUSES},
    )
    out = per_trial.join(per_criterion, on=CELL, how="left").fill_null(0)
    return out.sort(CELL)


# The unscored buckets of a cell, as denominators_frame names them; grading errors are split by cause after.
UNSCORED = (
    "task_error",
    *(f"infra_error_{s}" for s in INFRA_STAGES),
    "infra_error_other",
    "grading_error",
    "aborted",
    "skipped",
    "solved_only",
)


def format_denominators(denominators: pl.DataFrame) -> str:
    """One line per cell: planned, scored, the unscored buckets that are not empty, the criteria by grader."""
    lines = []
    for row in denominators.iter_rows(named=True):
        unscored = []
        for k in UNSCORED:
            if row[k]:
                causes = [f"{c} {row[f'grading_error_{c}']}" for c in GRADING_CAUSES if row[f"grading_error_{c}"]]
                unscored.append(f"{k} {row[k]}" + (f" ({', '.join(causes)})" if k == "grading_error" else ""))
        graders = [f"{g} {row[f'by_{g}']}" for g in GRADERS if row[f"by_{g}"]]
        if row["verifier_lowered"]:
            graders.append(f"{row['verifier_lowered']} of the judge's lowered by the verifier")
        if row["not_gradable"]:
            graders.append(f"not gradable (FAIL) {row['not_gradable']}")
        ungraded = [f"{c} {row[f'ungraded_{c}']}" for c in GRADING_CAUSES if row[f"ungraded_{c}"]]
        lines.append(
            f"{' · '.join(str(row[k]) for k in CELL)}: {row['planned']} planned, {row['scored']} scored"
            + (f"; left out: {', '.join(unscored)}" if unscored else "")
            + f"; criteria in the scores: {row['criteria_scored']}"
            + (f" ({', '.join(graders)})" if graders else "")
            + (f"; criteria no grader decided: {', '.join(ungraded)}" if ungraded else "")
            + (
                f"; {row['older_code']} evaluations reused from older grading code (store.reuse=stale)"
                if row["older_code"]
                else ""
            )
        )
    return "\n".join(lines)
