"""A grid whose trials wait on the model: codesign's pooled launcher vs Hydra's basic launcher, side by side.

The same 2 × 2 grid (model.temperature=0,0.2 × model.max_tokens=1000,2000, so every cell has its own solve
keys) over single-page ME tasks of the bundled suite, solved single-shot by a scripted model that answers
every call after a fixed latency with one harmless search/replace edit, graded by probes, run as
``python -m codesign -m …`` in a real subprocess per launcher:
  pooled — ``hydra/launcher=pooled`` (the default): every cell's trials in one executor pool;
  basic  — ``hydra/launcher=basic``: the cells one after another, each waiting for its slowest trial.
Each run has its own fresh store and working folder (nothing is reused); both use the Ray executor, so
both pay Ray's start-up once. With ``--repeats`` above 1 the launchers alternate and medians are printed.
``--solve-only`` leaves out the evaluation (``stages.evaluate=false``): on a small machine grading the
trials in browsers is CPU-bound and takes about as long under either launcher, which narrows the ratio.

    python benchmarks/grid.py [--tasks …] [--latency 2] [--repeats 1] [--solve-only]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("CODESIGN_BENCH_KEY", "sk-bench")  # inherited by the subprocesses and their Ray workers

from codesign.testing.model_server import Reply, ScriptedModelServer, ServedRequest

DEFAULT_TASKS = ["me-bakery-header-mockup", "me-recipe-servings-text"]  # static pages: no npm install or build
GRID = ["model.temperature=0,0.2", "model.max_tokens=1000,2000"]
CELLS = 4
LAUNCHERS = ["pooled", "basic"]
# Every static ME page has exactly one </body>: the edit applies everywhere and changes nothing visible.
EDIT = """<edit path="index.html">
<search>
</body>
</search>
<replace>
<!-- edited -->
</body>
</replace>
</edit>"""
PROGRESS = re.compile(r"^\[\d+/\d+ +[\d.]+s\] (.*?)(?: on \w+)?$", re.M)  # a trial line, without its node


def policy(_: ServedRequest) -> Reply:
    """The single-shot call: one search/replace edit."""
    return Reply(f"Here is the change.\n\n{EDIT}\n")


def grid(
    launcher: str, server: ScriptedModelServer, tasks: list[str], evaluate: bool, tmp: Path, workers: int = 2
) -> tuple[float, int]:
    """One ``python -m codesign -m`` run of the grid in its own folder; returns (wall seconds, trials)."""
    calls = len(server.served)
    cwd = Path(tempfile.mkdtemp(prefix=f"{launcher}-", dir=tmp))
    overrides = [
        "model=litellm", "model.name=scripted", "model.model=openai/scripted", f"model.api_base={server.openai_base}",
        "model.api_key_env=CODESIGN_BENCH_KEY", "regime=single_shot", "evaluator=probe", "tracker=none",
        "executor=ray", "tasks=all", f"tasks.include=[{','.join(tasks)}]", f"store.root={cwd / 'store'}",
        f"stages.evaluate={str(evaluate).lower()}", f"hydra/launcher={launcher}", f"executor.num_workers={workers}",
        *GRID,
    ]  # fmt: skip
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "codesign", "-m", *overrides], cwd=cwd, capture_output=True,
                          text=True)  # fmt: skip
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{launcher} launcher exited with {proc.returncode}:\n{proc.stderr[-3000:]}")
    trials = PROGRESS.findall(proc.stdout)
    # A trial reports "k/n PASS" when evaluated, "solved: " when only solved, else its status and message.
    bad = [t for t in trials if not (t.endswith(" PASS") if evaluate else t.rstrip().endswith(" solved:"))]
    calls = len(server.served) - calls  # one call per trial: nothing was reused
    if len(trials) != CELLS * len(tasks) or bad or calls != len(trials):
        raise RuntimeError(f"{launcher} launcher: {len(trials)} trials and {calls} model calls, expected "
                           f"{CELLS * len(tasks)} trials, all OK, one call each; not OK: {bad[:3]}\n"
                           f"{proc.stdout[-3000:]}")  # fmt: skip
    return wall, len(trials)


def main(tasks: list[str], latency: float, repeats: int, evaluate: bool, workers: int = 2) -> None:
    walls: dict[str, list[float]] = {name: [] for name in LAUNCHERS}
    trials: dict[str, int] = {}
    with ScriptedModelServer(policy, latency_s=latency) as server, tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeats):
            for name in LAUNCHERS:
                wall, trials[name] = grid(name, server, tasks, evaluate, Path(tmp), workers)
                walls[name].append(wall)
    median = {name: statistics.median(w) for name, w in walls.items()}
    runs = f" (median of {repeats})" if repeats > 1 else ""
    stages = "solve + evaluate (probes)" if evaluate else "solve only"
    print(f"2 × 2 grid × {len(tasks)} tasks, single-shot, {latency:g} s per model call, {stages}{runs}:")
    print(f"{'launcher':8} {'wall s':>7} {'trials':>6} {'ratio to pooled':>15}")
    for name in LAUNCHERS:
        print(f"{name:8} {median[name]:>7.1f} {trials[name]:>6} {median[name] / median['pooled']:>14.2f}×")
    print(f"pooled launcher: {median['basic'] / median['pooled']:.1f}× faster than Hydra's basic launcher on a "
          f"2 × 2 grid ({trials['pooled']} trials, latency {latency:g} s)")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", nargs="+", default=DEFAULT_TASKS, help="static ME tasks of the bundled suite")
    parser.add_argument("--latency", type=float, default=2.0, help="seconds the scripted model takes per call")
    parser.add_argument("--repeats", type=int, default=1, help="runs per launcher, alternating; medians printed")
    parser.add_argument("--solve-only", action="store_true", help="stages.evaluate=false: no grading in browsers")
    parser.add_argument("--workers", type=int, default=2, help="Ray actors (each with a browser) per pool")
    args = parser.parse_args()
    main(args.tasks, args.latency, args.repeats, not args.solve_only, args.workers)
