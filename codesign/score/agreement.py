"""How far the graders agree with each other and with people, each figure with a bootstrap 95 % interval.

An *item* is one criterion of one solve (``trial_key`` × ``criterion_id``): every grader of that solve
judged the same app. A *rater* is one source of verdicts on items:

- ``deterministic`` — the probe, script, spec or command of a criterion that has one;
- ``<evaluator>`` — an LLM evaluator's final verdict (after its verifier);
- ``<evaluator>:judge`` — the same evaluator's judge before the verifier, when the verifier changed any;
- ``human:<reviewer>`` — a person's label (:mod:`codesign.score.labels`).

Only PASS / PARTIAL / FAIL are compared: an ungraded criterion or a "can't tell" is no verdict, counted in
``left_out`` and never in a rate. For each pair of raters, by criterion kind and overall: agreement (same
verdict), Cohen's κ, and — against the pair's *reference* (the person; else the deterministic grader; else
the first by name) — the false-PASS rate (the other says PASS where the reference does not) and the
false-FAIL rate (the other says FAIL where the reference says PASS). Krippendorff's α (ordinal: FAIL <
PARTIAL < PASS) over all raters of each item. Intervals: percentile bootstrap over items, seeded.
"""

from __future__ import annotations

from itertools import combinations

import krippendorff
import numpy as np
import polars as pl

VERDICT_CODE = {"FAIL": 0, "PARTIAL": 1, "PASS": 2}
DETERMINISTIC = ("probe", "script", "spec", "command")
RESAMPLES = 2000  # percentile intervals of 2000 resamples move by < 0.005 between seeds on 100 items
PAIR_SCHEMA: dict[str, type[pl.DataType]] = {
    "reference": pl.String,
    "rater": pl.String,
    "kind": pl.String,
    "items": pl.Int64,
    **{f"{m}{s}": pl.Float64 for m in ("agreement", "kappa", "false_pass", "false_fail") for s in ("", "_lo", "_hi")},
    "left_out": pl.Int64,
    "human_pair": pl.Boolean,
}
ALPHA_SCHEMA: dict[str, type[pl.DataType]] = {
    "kind": pl.String,
    "raters": pl.Int64,
    "items": pl.Int64,
    "alpha": pl.Float64,
    "alpha_lo": pl.Float64,
    "alpha_hi": pl.Float64,
}


def ratings(verdicts: pl.DataFrame, labels: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per item × rater: ``trial_key, criterion_id, kind, rater, verdict`` (verdicts as graded or
    labelled, ungraded and can't-tell included: the pair tables count and drop them)."""
    parts = []
    if verdicts.height:
        base = verdicts.select(
            "evaluator",
            "trial_key",
            "criterion_id",
            "kind",
            "grader",
            "verdict",
            pl.col("original_verdict")
            if "original_verdict" in verdicts.columns
            else pl.lit(None, pl.String).alias("original_verdict"),
        )
        deterministic = base.filter(pl.col("grader").is_in(DETERMINISTIC)).with_columns(rater=pl.lit("deterministic"))
        llm = base.filter(~pl.col("grader").is_in(DETERMINISTIC) & (pl.col("grader") != "none"))
        final = llm.with_columns(rater=pl.col("evaluator"))
        verified = set(llm.filter(pl.col("original_verdict").is_not_null())["evaluator"])
        before = llm.filter(pl.col("evaluator").is_in(sorted(verified))).with_columns(
            rater=pl.col("evaluator") + ":judge", verdict=pl.coalesce("original_verdict", "verdict")
        )
        parts += [deterministic, final, before]
    frame = (
        pl.concat([p.select("trial_key", "criterion_id", "kind", "rater", "verdict") for p in parts])
        if parts
        else pl.DataFrame(schema=dict.fromkeys(["trial_key", "criterion_id", "kind", "rater", "verdict"], pl.String))
    )
    if labels is not None and labels.height:
        kinds = frame.select("trial_key", "criterion_id", "kind").unique(subset=["trial_key", "criterion_id"])
        people = labels.join(kinds, on=["trial_key", "criterion_id"], how="inner").select(
            "trial_key", "criterion_id", "kind", ("human:" + pl.col("reviewer")).alias("rater"), "verdict"
        )
        frame = pl.concat([frame, people])
    # One verdict per item and rater (the same probe graded a solve under several evaluators: the same verdict).
    return frame.unique(subset=["trial_key", "criterion_id", "rater"], keep="first", maintain_order=True)


def _reference_first(a: str, b: str) -> tuple[str, str]:
    rank = lambda r: (0 if r.startswith("human:") else 1 if r == "deterministic" else 2, r)  # noqa: E731
    return (a, b) if rank(a) <= rank(b) else (b, a)


def _interval(samples: np.ndarray) -> tuple[float | None, float | None]:
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return None, None
    lo, hi = np.percentile(finite, [2.5, 97.5])
    return float(lo), float(hi)


def _pair_stats(ref: np.ndarray, other: np.ndarray, rng: np.random.Generator) -> dict[str, float | None]:
    """Point estimates and bootstrap intervals over items of one pair's verdict codes."""
    n = ref.size
    idx = np.vstack([np.arange(n), rng.integers(0, n, size=(RESAMPLES, n))])  # row 0: the data itself
    a, b = ref[idx], other[idx]
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = (a == b).mean(axis=1)
        expected = sum((a == c).mean(axis=1) * (b == c).mean(axis=1) for c in VERDICT_CODE.values())
        kappa = np.where(expected < 1, (observed - expected) / (1 - expected), np.nan)
        not_pass, passed = a != VERDICT_CODE["PASS"], a == VERDICT_CODE["PASS"]
        false_pass = ((b == VERDICT_CODE["PASS"]) & not_pass).sum(axis=1) / not_pass.sum(axis=1)
        false_fail = ((b == VERDICT_CODE["FAIL"]) & passed).sum(axis=1) / passed.sum(axis=1)
    out: dict[str, float | None] = {}
    for name, values in (
        ("agreement", observed),
        ("kappa", kappa),
        ("false_pass", false_pass),
        ("false_fail", false_fail),
    ):
        out[name] = float(values[0]) if np.isfinite(values[0]) else None
        out[f"{name}_lo"], out[f"{name}_hi"] = _interval(values[1:]) if out[name] is not None else (None, None)
    return out


def _codes(verdicts: pl.Series) -> np.ndarray:
    return verdicts.replace_strict(VERDICT_CODE, return_dtype=pl.Int8).to_numpy()


def pairs(rated: pl.DataFrame, seed: int = 0) -> pl.DataFrame:
    """Every pair of raters that rated common items: overall (``kind`` = ``all``) and per kind."""
    rng = np.random.default_rng(seed)
    rows = []
    raters = sorted(set(rated["rater"])) if rated.height else []
    for x, y in combinations(raters, 2):
        ref, other = _reference_first(x, y)
        joined = rated.filter(pl.col("rater") == ref).join(
            rated.filter(pl.col("rater") == other).select("trial_key", "criterion_id", "verdict"),
            on=["trial_key", "criterion_id"],
            suffix="_other",
        )
        if not joined.height:
            continue
        valid = joined.filter(
            pl.col("verdict").is_in(list(VERDICT_CODE)) & pl.col("verdict_other").is_in(list(VERDICT_CODE))
        )
        for kind in ["all", *sorted(set(joined["kind"]))]:
            group = valid if kind == "all" else valid.filter(pl.col("kind") == kind)
            total = joined.height if kind == "all" else joined.filter(pl.col("kind") == kind).height
            people = ref.startswith("human:") and other.startswith("human:")
            row: dict[str, object] = {
                "reference": ref,
                "rater": other,
                "kind": kind,
                "items": group.height,
                "left_out": total - group.height,
                "human_pair": people,
            }
            if group.height:
                row |= _pair_stats(_codes(group["verdict"]), _codes(group["verdict_other"]), rng)
            rows.append(row)
    return pl.DataFrame(rows, schema=PAIR_SCHEMA)


def alpha(rated: pl.DataFrame, seed: int = 0) -> pl.DataFrame:
    """Krippendorff's α (ordinal) over every rater of each item, overall and per kind, with a bootstrap
    interval over items. Items only one rater judged carry no information about agreement and are left out."""
    rng = np.random.default_rng(seed)
    valid = rated.filter(pl.col("verdict").is_in(list(VERDICT_CODE)))
    rows = []
    for kind in ["all", *sorted(set(valid["kind"]))] if valid.height else []:
        group = valid if kind == "all" else valid.filter(pl.col("kind") == kind)
        wide = group.with_columns(code=pl.col("verdict").replace_strict(VERDICT_CODE, return_dtype=pl.Float64)).pivot(
            on="rater", index=["trial_key", "criterion_id"], values="code"
        )
        matrix = wide.drop("trial_key", "criterion_id").to_numpy().T  # raters × items, NaN where not rated
        matrix = matrix[:, (~np.isnan(matrix)).sum(axis=0) >= 2]
        if matrix.shape[0] < 2 or matrix.shape[1] == 0 or len(np.unique(matrix[~np.isnan(matrix)])) < 2:
            value, lo, hi = None, None, None  # undefined: fewer than two raters, or every rating the same
        else:
            value = float(krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal"))
            samples = []
            for _ in range(RESAMPLES // 4):  # α is not vectorised: 500 resamples (interval moves < 0.01)
                cols = matrix[:, rng.integers(0, matrix.shape[1], size=matrix.shape[1])]
                if len(np.unique(cols[~np.isnan(cols)])) >= 2:
                    samples.append(krippendorff.alpha(reliability_data=cols, level_of_measurement="ordinal"))
            lo, hi = _interval(np.array(samples, dtype=float))
        rows.append(
            {
                "kind": kind,
                "raters": matrix.shape[0],
                "items": matrix.shape[1],
                "alpha": value,
                "alpha_lo": lo,
                "alpha_hi": hi,
            }
        )
    return pl.DataFrame(rows, schema=ALPHA_SCHEMA)
