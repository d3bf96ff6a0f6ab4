"""Trial execution: framework overhead per trial, and throughput on latency-bound solving.

Measured side by side in one run, with the `native` harness against the scripted model server:
  overhead   — one trial at a time on a trivial task, the server answering at once: wall time and CPU
               per trial for solving only (workspace, baseline, harness loop, patch, store) and for the
               whole trial (plus build, serve, browser evidence, probes). CPU is this process's and the
               processes it started and waited for (git, sandboxed commands), not the model server's:
               per trial of a run of --batch (the run's own costs spread over them), and the run's fixed
               part and the per-trial part apart (a run of 1 against a run of --batch);
  per turn   — CPU of one more agent turn that runs `true` in the `confined` (bubblewrap) sandbox: this
               process's share (model client, tool call, trajectory), and the command's own processes;
  throughput — N trials (default 200), every model call taking 0.2 s, 64 trials in flight, solving
               only; as a fraction of the reachable rate (64 trials in flight, 2 calls each: 160 trials/s
               at best), for the Ray executor (2 actors × 32) and, as a reference, the inline executor
               (plain asyncio in one process): the whole run of N, and the steady rate — runs of N and 2N,
               the N more trials over the time they added (a pool's start left out).

    python benchmarks/solvers.py [--trials 200]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("CODESIGN_BENCH_KEY", "sk-bench")
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the server subprocess imports this module's policy
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parent),
                                                         os.environ.get("PYTHONPATH")]))  # fmt: skip

from codesign.config import compose_cli
from codesign.runner import run
from codesign.testing.model_server import Reply, ServedRequest, ToolCall, serve_in_subprocess

CALLS_PER_TRIAL = 2

TASK_YAML = """id: {id}
track: ME
title: Trivial
request: Change the heading to "Hello, world".
labels: {{capability: [ui_transformation]}}
"""
CRITERIA_YAML = """criteria:
  - id: heading
    text: The heading reads "Hello, world".
    kind: content
    probe: {expect: [{text: {selector: h1, equals: "Hello, world"}}]}
  - id: keep-paragraph
    text: The paragraph is unchanged.
    kind: preservation
    preserve: true
    probe: {expect: [{text: {selector: p, equals: "Plain page."}}]}
"""
PATCH = """diff --git a/index.html b/index.html
--- a/index.html
+++ b/index.html
@@ -1,2 +1,2 @@
-<h1>Hello</h1>
+<h1>Hello, world</h1>
 <p>Plain page.</p>
"""


def make_suite(root: Path, n: int) -> None:
    for i in range(n):
        task = root / f"trivial-{i:04d}"
        (task / "app").mkdir(parents=True)
        (task / "solution").mkdir()
        (task / "task.yaml").write_text(TASK_YAML.format(id=task.name))
        (task / "criteria.yaml").write_text(CRITERIA_YAML)
        (task / "app" / "index.html").write_text("<h1>Hello</h1>\n<p>Plain page.</p>\n")
        (task / "solution" / "solution.patch").write_text(PATCH)


def policy(req: ServedRequest) -> Reply:
    """Two calls per trial: an edit, then done."""
    if req.turn == 0:
        args = {"path": "index.html", "old_text": "<h1>Hello</h1>", "new_text": "<h1>Hello, world</h1>"}
        return Reply("Editing.", [ToolCall("edit_file", args)])
    return Reply("Done.")


def shell_policy(req: ServedRequest) -> Reply:
    """``scripted-turns-N``: a shell command (`true`) on each of the first N - 2 turns, then the edit and done."""
    after = req.turn - (int(req.model.rsplit("-", 1)[1]) - 2)
    if after < 0:
        return Reply("Looking.", [ToolCall("shell", {"command": "true"})])
    if after == 0:
        args = {"path": "index.html", "old_text": "<h1>Hello</h1>", "new_text": "<h1>Hello, world</h1>"}
        return Reply("Editing.", [ToolCall("edit_file", args)])
    return Reply("Done.")


def cpu_s() -> float:
    """CPU of this process and of the children it has waited for (git, sandboxed commands) so far."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def own_cpu_s() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    return me.ru_utime + me.ru_stime


def cell(server_url: str, suite: Path, store: Path, *overrides: str) -> tuple[float, float, float]:
    """Run one cell; returns (wall s, CPU s of this process and its waited-for children, this process alone)."""
    cfg = compose_cli([
        "model=litellm", "model.name=scripted", "model.model=openai/scripted", f"model.api_base={server_url}/v1",
        "model.api_key_env=CODESIGN_BENCH_KEY", "tasks=all", f"tasks.root={suite}", "tracker=none",
        f"store.root={store}", "store.reuse=false", *overrides,
    ])  # fmt: skip
    with tempfile.TemporaryDirectory() as out:
        start, cpu, own = time.perf_counter(), cpu_s(), own_cpu_s()
        tables = run(cfg, Path(out))
        elapsed, cpu, own = time.perf_counter() - start, cpu_s() - cpu, own_cpu_s() - own
    bad = tables["tasks"].filter(tables["tasks"]["exit_status"] != "submitted")
    assert bad.height == 0, bad.select("task_id", "exit_status", "exit_message").head(3)
    return elapsed, cpu, own


def main(trials: int, runs: int = 3, batch: int = 10, turns: int = 12) -> None:
    import contextlib
    import io

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name, n in (("one", 1), ("batch", batch), ("many", trials)):
            make_suite(tmp / name, n)
        quiet = contextlib.redirect_stdout(io.StringIO())
        instant_proc, instant = serve_in_subprocess("solvers:policy")  # a real endpoint is another process
        seq = ["executor=inline", "executor.max_concurrency=1"]  # one trial at a time
        with quiet:
            cell(instant, tmp / "one", tmp / "s0", "executor=inline")  # warm-up: imports
            solve_only = [cell(instant, tmp / "batch", tmp / f"a{i}", *seq, "stages.evaluate=false")
                          for i in range(runs)]  # fmt: skip
            single = [cell(instant, tmp / "one", tmp / f"o{i}", *seq, "stages.evaluate=false") for i in range(runs)]
            whole = [cell(instant, tmp / "batch", tmp / f"b{i}", *seq) for i in range(runs)]
        instant_proc.kill()
        per = lambda runs_, k: statistics.median(r[k] for r in runs_) / batch * 1000  # noqa: E731  ms per trial
        one = statistics.median(r[1] for r in single) * 1000
        slope = (statistics.median(r[1] for r in solve_only) * 1000 - one) / (batch - 1)
        print(f"framework overhead per trial (trivial task, instant model, 2 calls, one at a time; medians of {runs} "
              f"runs of {batch}):")  # fmt: skip
        print(f"  solve:            {per(solve_only, 0):5.0f} ms wall, {per(solve_only, 1):5.1f} ms CPU "
              f"(a run's fixed part {one - slope:.0f} ms, then {slope:.1f} ms per trial)")  # fmt: skip
        print(f"  solve + evaluate: {per(whole, 0):5.0f} ms wall, {per(whole, 1):5.1f} ms CPU")

        # One agent turn more: trials of `turns` turns against trials of 2, the shell command confined.
        turns_proc, turns_url = serve_in_subprocess("solvers:shell_policy")
        confined = [*seq, "stages.evaluate=false", "sandbox=confined"]
        with quiet:
            cell(turns_url, tmp / "one", tmp / "t0", *confined, "model.model=openai/scripted-turns-2")  # warm-up
            short = [cell(turns_url, tmp / "batch", tmp / f"t{i}", *confined, "model.model=openai/scripted-turns-2")
                     for i in range(runs)]  # fmt: skip
            long = [cell(turns_url, tmp / "batch", tmp / f"u{i}", *confined,
                         f"model.model=openai/scripted-turns-{turns}") for i in range(runs)]  # fmt: skip
        turns_proc.kill()
        extra = batch * (turns - 2)
        own = (statistics.median(r[2] for r in long) - statistics.median(r[2] for r in short)) / extra * 1000
        total = (statistics.median(r[1] for r in long) - statistics.median(r[1] for r in short)) / extra * 1000
        print(f"CPU per agent turn (a model call, then `true` in the confined sandbox): {own:.1f} ms in codesign's "
              f"process, {total - own:.1f} ms in the command's processes (bubblewrap, bash)")  # fmt: skip

        # Runs of N and 2N trials: their difference is the pool's steady rate, without its start (Ray's actors
        # are new processes that import litellm, ~3 CPU-s each; the inline executor's process has it already).
        make_suite(tmp / "double", 2 * trials)
        reachable = 64 / (CALLS_PER_TRIAL * 0.2)  # trials per second at best
        slow_proc, slow = serve_in_subprocess("solvers:policy", 0.2)
        inline = ["executor=inline", "executor.max_concurrency=64", "stages.evaluate=false"]
        ray = ["executor=ray", "executor.num_workers=2", "executor.max_concurrency=32", "stages.evaluate=false"]
        walls: dict[str, list[float]] = {}
        with quiet:
            cell(slow, tmp / "one", tmp / "warm", "executor=ray", "stages.evaluate=false")  # Ray start-up
            for name, overrides in (("ray", ray), ("inline", inline)):
                walls[name] = [cell(slow, tmp / suite, tmp / f"{name}-{suite}", *overrides)[0]
                               for suite in ("many", "double")]  # fmt: skip
        slow_proc.kill()
        print(f"throughput, native trials, 0.2 s per model call, 64 in flight (reachable: {reachable:.0f} trials/s):")
        labels = {"ray": "ray executor (2 actors x 32)", "inline": "inline executor (asyncio)"}
        for name, (n_s, double_s) in walls.items():
            added = double_s - n_s  # a tiny run (the smoke test's) can take no longer at 2N: no rate then
            steady = f"{trials / added / reachable:.2f}" if added > 0 else "n/a"
            whole = f"{trials} trials {n_s:5.1f} s = {trials / n_s / reachable:.2f} of the reachable rate"
            print(f"  {labels[name]:30s} {whole}; steady ({2 * trials} - {trials} trials): {steady} of it")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3, help="runs of --batch sequential trials for the overhead")
    parser.add_argument("--batch", type=int, default=10, help="sequential trials per overhead run")
    parser.add_argument("--turns", type=int, default=12, help="turns of the long trials of the per-turn figure")
    args = parser.parse_args()
    main(args.trials, args.runs, args.batch, args.turns)
