"""Calibrate an LLM evaluator against the deterministic probes:

    python -m codesign.calibrate evaluator=judge_a [tasks=all] [calibrate.solvers=[oracle,noop,near_misses]]

The final workspaces of ``calibrate.solvers`` (by default the oracle and the noop — every change both
satisfied and not — and every task's near misses, wrong or partial solutions whose verdicts the gate has
checked: where judges go wrong) are graded twice — by the probes and by the LLM evaluator — reusing
stored solves, and every criterion that carries a probe is compared. Reported per criterion kind and
overall, each with a bootstrap 95 % interval (codesign.score.agreement): agreement (exact verdict
match), Cohen's κ over PASS / PARTIAL / FAIL, the false-PASS rate (the LLM says PASS where the probe
does not: the error that inflates scores) and the false-FAIL rate; the judge before its verifier is a
rater of its own when the verifier changed any verdict. Criteria either side could not grade
(``UNGRADED``) are left out of the comparison and counted.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import polars as pl

from codesign.config import compose_cli
from codesign.errors import ConfigError
from codesign.score.agreement import pairs as agreement_pairs
from codesign.score.agreement import ratings
from codesign.score.metrics import whole_tables
from codesign.tasks.select import select_tasks


def _solvers(base: Any) -> list[tuple[str, list[str]]]:
    """``calibrate.solvers`` as (name, overrides): ``near_misses`` is every near miss of the selected tasks —
    the k-th of each task that has one (solution/near-misses/, in name order), k = 1, 2, …"""
    out = []
    for solver in base.calibrate.solvers:
        if solver != "near_misses":
            out.append((solver, [f"model={solver}"]))
            continue
        tasks = select_tasks(base.tasks).tasks
        counts = {t.id: len(t.near_misses()) for t in tasks}
        for k in range(1, max(counts.values(), default=0) + 1):
            having = ",".join(sorted(t for t, n in counts.items() if n >= k))
            out.append(
                (
                    f"near_miss_{k}",
                    [
                        "model=near_miss_1",
                        f"model.near_miss={k}",
                        f"model.name=near_miss_{k}",
                        f"tasks.include=[{having}]",
                    ],
                )
            )
    return out


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
    for solver, solver_overrides in _solvers(base):
        for evaluator in ("probe", base.evaluator.name):
            cell_dir = out / f"{solver}_{evaluator}"
            cell_dir.mkdir(parents=True, exist_ok=True)
            if evaluator == "probe":  # the LLM evaluator's own settings do not apply to the probes
                overrides = [a for a in argv if not a.startswith(("evaluator=", "evaluator.", "evaluator/"))]
                overrides += ["evaluator=probe"]
            else:
                overrides = list(argv)
            cfg = compose_cli([*overrides, *solver_overrides], default_overrides=["evaluator=llm", "tracker=none"])
            graded = run(cfg, cell_dir)["verdicts"]
            # Only criteria that carry a probe are compared: the rest have no deterministic verdict.
            frames.append(
                graded if evaluator == "probe" else graded.filter(pl.col("grader").is_in(["judge", "verifier"]))
            )
    rated = ratings(pl.concat(frames, how="diagonal_relaxed"))
    probed = rated.filter(pl.col("rater") == "deterministic").select("trial_key", "criterion_id")
    rated = rated.join(probed, on=["trial_key", "criterion_id"], how="semi")
    table = agreement_pairs(rated)
    rated.write_parquet(out / "ratings.parquet")
    table.write_parquet(out / "agreement.parquet")
    overall = table.filter(pl.col("kind") == "all").to_dicts()
    compared = max((r["items"] for r in overall), default=0)
    with whole_tables(float_precision=3):
        print(f"{base.evaluator.name} vs probes on {compared} criteria ({', '.join(base.calibrate.solvers)}):")
        print(table.drop("human_pair"))
    left_out = max((r["left_out"] for r in overall), default=0)
    if left_out:
        print(f"left out: {left_out} criteria a grader could not grade (see the runs' ledger.parquet)")
    print(f"report: {out / 'agreement.parquet'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
