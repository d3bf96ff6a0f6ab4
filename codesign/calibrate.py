"""Calibrate an LLM evaluator against the deterministic probes:

    python -m codesign.calibrate evaluator=judge_a [tasks=all] [calibrate.solvers=[oracle,noop]]

The final workspaces of ``calibrate.solvers`` (oracle and noop by default: every change both satisfied
and not) are graded twice — by the probes and by the LLM evaluator — reusing stored solves, and every
criterion that carries a probe is compared. Reported per criterion kind and overall: accuracy (exact
verdict match), Cohen's κ over PASS / PARTIAL / FAIL, and the false-PASS rate (the LLM says PASS where
the probe does not): the error that inflates scores. Criteria either side could not grade (``UNGRADED``)
are left out of the comparison and counted.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import polars as pl

from codesign.config import compose_cli
from codesign.errors import ConfigError
from codesign.score.metrics import whole_tables

LABELS = ("PASS", "PARTIAL", "FAIL")


def cohen_kappa(a: list[str], b: list[str]) -> float | None:
    """Cohen's κ of two raters over the same items; None when it is undefined (one label only)."""
    n = len(a)
    if n == 0:
        return None
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    expected = sum((a.count(label) / n) * (b.count(label) / n) for label in LABELS)
    return None if expected == 1 else (observed - expected) / (1 - expected)


def agreement(pairs: pl.DataFrame) -> pl.DataFrame:
    """``pairs`` has columns kind, probe, llm (verdicts). One row per kind plus ``all``."""
    rows = []
    groups = [("all", pairs), *((kind, pairs.filter(pl.col("kind") == kind)) for kind in sorted(set(pairs["kind"])))]
    for kind, g in groups:
        probe, llm = g["probe"].to_list(), g["llm"].to_list()
        negatives = [x for p, x in zip(probe, llm, strict=True) if p != "PASS"]
        rows.append(
            {
                "kind": kind,
                "criteria": g.height,
                "accuracy": sum(p == x for p, x in zip(probe, llm, strict=True)) / g.height if g.height else None,
                "kappa": cohen_kappa(probe, llm),
                "false_pass_rate": sum(x == "PASS" for x in negatives) / len(negatives) if negatives else None,
                "probe_pass": probe.count("PASS"),
                "llm_pass": llm.count("PASS"),
            }
        )
    return pl.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    from codesign.runner import run

    argv = list(sys.argv[1:] if argv is None else argv)
    base = compose_cli(argv, default_overrides=["evaluator=llm", "tracker=none"])
    if base.evaluator.get("use_probes") or base.evaluator._target_.endswith("ProbeEvaluator"):
        raise ConfigError(
            "calibration compares an LLM evaluator with the probes",
            "choose evaluator=llm or judge_a … judge_d (not probe or hybrid)",
        )
    out = Path("outputs") / "calibrate" / time.strftime("%Y-%m-%d_%H-%M-%S")
    frames = []
    for solver in base.calibrate.solvers:
        graded = {}
        for evaluator in ("probe", base.evaluator.name):
            cell_dir = out / f"{solver}_{evaluator}"
            cell_dir.mkdir(parents=True, exist_ok=True)
            if evaluator == "probe":  # the LLM evaluator's own settings do not apply to the probes
                overrides = [a for a in argv if not a.startswith(("evaluator=", "evaluator.", "evaluator/"))]
                overrides += ["evaluator=probe"]
            else:
                overrides = list(argv)
            cfg = compose_cli([*overrides, f"model={solver}"], default_overrides=["evaluator=llm", "tracker=none"])
            graded[evaluator] = run(cfg, cell_dir)["verdicts"]
        probe = graded["probe"].filter(pl.col("grader") == "probe")
        llm = graded[base.evaluator.name].filter(pl.col("grader").is_in(["judge", "verifier"]))
        frames.append(
            probe.select("trial_key", "task_id", "criterion_id", "kind", pl.col("verdict").alias("probe"))
            .join(
                llm.select("trial_key", "criterion_id", pl.col("verdict").alias("llm")),
                on=["trial_key", "criterion_id"],
            )
            .with_columns(solver=pl.lit(solver))
        )
    pairs = pl.concat(frames)
    ungraded = pairs.filter((pl.col("probe") == "UNGRADED") | (pl.col("llm") == "UNGRADED"))
    pairs = pairs.filter((pl.col("probe") != "UNGRADED") & (pl.col("llm") != "UNGRADED"))  # no verdict to compare
    table = agreement(pairs)
    pairs.write_parquet(out / "pairs.parquet")
    table.write_parquet(out / "agreement.parquet")
    with whole_tables(float_precision=3):
        print(f"{base.evaluator.name} vs probes on {pairs.height} criteria ({', '.join(base.calibrate.solvers)}):")
        print(table)
    if ungraded.height:
        print(f"left out: {ungraded.height} criteria a grader could not grade (see the runs' ledger.parquet)")
    print(f"report: {out / 'agreement.parquet'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
