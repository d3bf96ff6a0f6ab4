"""The same grid on a one-node and a two-node local Ray cluster, side by side: trials per second for each.

Each node has the same capacity (``--cpus`` CPUs, one ``browser``: one trial actor running up to
``--concurrency`` trials), so the second node doubles the actors and the trials in flight. The trials are
single-shot solves by a scripted model that answers after ``--latency`` seconds with one harmless edit,
graded by probes (``--solve-only``: not graded). Both clusters run on this machine: grading in browsers
is CPU work, and two nodes here share the same cores — the ratio measures placement and recovery
overhead plus what more trials in flight buy, not more hardware. Every run has a fresh store.

    python benchmarks/cluster.py [--tasks …] [--seeds 4] [--latency 2] [--concurrency 4] [--solve-only]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("CODESIGN_BENCH_KEY", "sk-bench-cluster")  # passed to the workers by name (api_key_env)

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: its sibling grid.py
from grid import policy  # the scripted model's one harmless edit

from codesign.testing.cluster import LocalCluster
from codesign.testing.model_server import ScriptedModelServer

DEFAULT_TASKS = ["me-bakery-header-mockup", "me-recipe-servings-text"]  # static pages: no npm install or build
PROGRESS = re.compile(r"^\[\d+/\d+ +[\d.]+s\] (.*) on (\w+)", re.M)


def run_grid(nodes: int, server: ScriptedModelServer, args: argparse.Namespace, tmp: Path) -> tuple[float, int, int]:
    """One ``python -m codesign`` run on a fresh ``nodes``-node cluster: (wall seconds, trials, nodes used)."""
    cwd = Path(tempfile.mkdtemp(prefix=f"nodes{nodes}-", dir=tmp))
    seeds = ",".join(str(s) for s in range(args.seeds))
    overrides = [
        "model=litellm", "model.name=scripted", "model.model=openai/scripted", f"model.api_base={server.openai_base}",
        "model.api_key_env=CODESIGN_BENCH_KEY", "regime=single_shot", "evaluator=probe", "tracker=none",
        "executor=ray", "executor.num_workers=null", f"executor.max_concurrency={args.concurrency}", "tasks=all",
        f"tasks.include=[{','.join(args.tasks)}]", f"seeds=[{seeds}]", f"store.root={cwd / 'store'}",
        f"stages.evaluate={str(not args.solve_only).lower()}", f"hydra.run.dir={cwd / 'run'}",
    ]  # fmt: skip
    with LocalCluster(nodes=nodes, cpus=args.cpus, browsers=1) as cluster:
        env = {k: v for k, v in os.environ.items() if k != "RAY_AUTH_MODE"} | cluster.client_env()
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "codesign", *overrides], cwd=cwd, env=env, capture_output=True,
                              text=True)  # fmt: skip
        wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{nodes}-node run exited with {proc.returncode}:\n{proc.stderr[-3000:]}")
    trials = PROGRESS.findall(proc.stdout)
    expected = len(args.tasks) * args.seeds
    ok = [t for t, _ in trials if t.endswith(" PASS") or t.rstrip().endswith(" solved:")]
    if len(trials) != expected or len(ok) != expected:
        raise RuntimeError(f"{nodes}-node run: {len(ok)} of {expected} trials OK\n{proc.stdout[-3000:]}")
    return wall, len(trials), len({node for _, node in trials})


def main(args: argparse.Namespace) -> None:
    results: dict[int, tuple[float, int, int]] = {}
    with ScriptedModelServer(policy, latency_s=args.latency) as server, tempfile.TemporaryDirectory() as tmp:
        for nodes in (1, 2):
            results[nodes] = run_grid(nodes, server, args, Path(tmp))
    stages = "solve only" if args.solve_only else "solve + evaluate (probes)"
    print(
        f"{len(args.tasks)} tasks × {args.seeds} seeds, single-shot, {args.latency:g} s per model call, {stages}; "
        f"each node: {args.cpus:g} CPUs, 1 actor × {args.concurrency} trials in flight (one machine: shared cores)"
    )
    print(f"{'nodes':5} {'used':>4} {'trials':>6} {'wall s':>7} {'trials/s':>8}")
    rate = {n: trials / wall for n, (wall, trials, _) in results.items()}
    for n, (wall, trials, used) in results.items():
        print(f"{n:5} {used:>4} {trials:>6} {wall:>7.1f} {rate[n]:>8.3f}")
    print(f"two local nodes: {rate[2] / rate[1]:.2f}× the trials/s of one (wall time includes Ray's start-up)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", nargs="+", default=DEFAULT_TASKS, help="static ME tasks of the bundled suite")
    parser.add_argument("--seeds", type=int, default=4, help="seeds per task (trials = tasks × seeds)")
    parser.add_argument("--latency", type=float, default=2.0, help="seconds the scripted model takes per call")
    parser.add_argument("--concurrency", type=int, default=4, help="trials in flight per actor (one per node)")
    parser.add_argument("--cpus", type=float, default=2, help="CPUs each node declares")
    parser.add_argument("--solve-only", action="store_true", help="stages.evaluate=false: no grading in browsers")
    main(parser.parse_args())
