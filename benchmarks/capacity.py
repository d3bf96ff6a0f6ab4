"""Node capacity: how many trials one node keeps in flight, what codesign spends per trial, and on what.

The scripted model server answers after --latency seconds (default 5); each trial makes --calls model
calls (default 30) with the `native` harness: a shell command (`true`) in the `confined` sandbox on every
turn but the last two, then the task's reference patch applied with `git apply`, then done. Every trial is
graded with probes (evaluator=probe). Trials are copies of bundled tasks under their own ids, so nothing is
shared between them through the store. Two parts, one run:

  stages    — --split-trials trials one at a time, the model answering at once: CPU per trial split by
              stage. Sequential on purpose, so every CPU-second (codesign's threads, the processes it
              waits for, Chromium's processes) belongs to the one stage running. Judge I/O is zero with
              evaluator=probe (no judge).
  in flight — for each --in-flight level N, --rounds × N trials (default 2 N) with N in flight
              (the inline executor: one process, one browser): trials per node-hour, CPU per trial, the
              peak memory (PSS of codesign, Chromium and the sandboxes, sampled every second) in all and
              per trial in flight; codesign's own RSS at each quarter of the level's run shows whether
              memory grows with the trials it has run.

    python benchmarks/capacity.py [--latency 5] [--calls 30] [--in-flight 64 128 256]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import io
import os
import re
import resource
import shutil
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("CODESIGN_BENCH_KEY", "sk-bench")
HERE = Path(__file__).resolve().parent
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))

import psutil  # noqa: E402

from codesign.config import bundled_suite, compose_cli  # noqa: E402
from codesign.runner import run  # noqa: E402
from codesign.testing.model_server import Reply, ServedRequest, ToolCall, serve_in_subprocess  # noqa: E402

DEFAULT_TASKS = ["me-bakery-header-mockup", "re-docs-rename-release"]
SERVERS: set[int] = set()  # the scripted model servers: the "provider", not codesign — left out of every figure


def _descendants() -> list[psutil.Process]:
    return [c for c in psutil.Process().children(recursive=True) if c.pid not in SERVERS]


def serve(latency: float) -> tuple[Any, str]:
    proc, url = serve_in_subprocess("capacity:policy", latency)
    SERVERS.add(proc.pid)
    return proc, url


@functools.cache
def _patches() -> dict[str, str]:
    """The reference patch of each task, by its title (the prompt's first line names it)."""
    import yaml

    suite = Path(os.environ["CODESIGN_CAPACITY_SUITE"])
    return {
        yaml.safe_load((d / "task.yaml").read_text())["title"]: (d / "solution" / "solution.patch").read_text()
        for d in suite.iterdir()
        if (d / "solution" / "solution.patch").is_file()
    }


def policy(req: ServedRequest) -> Reply:
    """``capacity-calls-N``: `true` in the sandbox on each of the first N - 2 turns, the patch, then done."""
    after = req.turn - (int(req.model.rsplit("-", 1)[1]) - 2)
    if after < 0:
        return Reply("Looking.", [ToolCall("shell", {"command": "true"})])
    if after == 0:
        title = re.search(r"# Revision request: (.+)", str(req.messages[1]["content"]))
        patch = _patches()[title.group(1).strip()] if title else ""
        return Reply("Applying.", [ToolCall("shell", {"command": f"git apply <<'PATCH'\n{patch}PATCH"})])
    return Reply("Done.")


def make_suite(root: Path, tasks: list[str], copies: int) -> None:
    """``copies`` copies of each task, each under its own id (no stage shared between them)."""
    for name in tasks:
        for i in range(copies):
            target = root / f"{name}-{i:04d}"
            shutil.copytree(bundled_suite() / name, target)
            manifest = target / "task.yaml"
            manifest.write_text(manifest.read_text().replace(f"id: {name}\n", f"id: {target.name}\n", 1))


def tree_cpu_s() -> float:
    """CPU of this process, of the children it waited for, and of its live descendants (Chromium, the driver)."""
    me, reaped = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    total = me.ru_utime + me.ru_stime + reaped.ru_utime + reaped.ru_stime
    for child in _descendants():
        with contextlib.suppress(psutil.Error):
            t = child.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
    return total


def tree_memory() -> tuple[int, int]:
    """(RSS of this process, PSS of it and every descendant) in bytes. PSS, not RSS, for the sum: Chromium's
    processes share most of their pages, and summing their RSS would count those once per process."""
    own = psutil.Process().memory_info().rss
    total = 0
    for proc in [psutil.Process(), *_descendants()]:
        with contextlib.suppress(psutil.Error):
            total += proc.memory_full_info().pss
    return own, total


TRIAL, RUN, SOLVE, EVALUATE = "trial", "scoring and tracking", "solve", "evaluation"
INSIDE = {
    SOLVE: ["workspace and baseline", "sandbox commands", "model client", "patch"],
    EVALUATE: ["build", "evidence", "probes"],
}


class Stages:
    """CPU per stage while trials run one at a time: wrappers around the functions that do each stage."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = defaultdict(float)
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def measure(self, stage: str) -> Iterator[None]:
        start = tree_cpu_s()
        try:
            yield
        finally:
            with self._lock:
                self.cpu[stage] += tree_cpu_s() - start

    def wrap(self, owner: Any, name: str, stage: str) -> None:
        original = getattr(owner, name)
        if asyncio.iscoroutinefunction(original):

            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                with self.measure(stage):
                    return await original(*args, **kwargs)

            setattr(owner, name, functools.wraps(original)(timed_async))
        else:

            def timed(*args: Any, **kwargs: Any) -> Any:
                with self.measure(stage):
                    return original(*args, **kwargs)

            setattr(owner, name, functools.wraps(original)(timed))

    def install(self) -> Callable[[], None]:
        """Wrap each stage's functions where the trial calls them; returns what undoes it."""
        import codesign.evaluate.run as evaluate_run
        import codesign.execute.inline as inline
        import codesign.runner as runner
        import codesign.solve.run as solve_run
        import codesign.trial as trial
        from codesign.evaluate.evaluators import ProbeEvaluator
        from codesign.evaluate.evidence import EvidenceSession
        from codesign.sandbox.local import LocalSandbox
        from codesign.solve.models.litellm_model import LitellmModel
        from codesign.store import Store
        from codesign.workspace import Baseline

        targets = [
            (inline, "run_trial_safely", TRIAL),  # the whole trial: what the stages below leave is "other"
            (trial, "load_task", "task load"),
            (trial, "solve_task", SOLVE),  # contains the four below
            (trial, "evaluate_patch", EVALUATE),  # contains build, evidence, probes
            (solve_run, "prepare_workspace", "workspace and baseline"),
            (LocalSandbox, "execute", "sandbox commands"),
            (LitellmModel, "complete", "model client"),
            (Baseline, "diff", "patch"),
            (trial, "write_json", "store"),
            (trial, "write_atomic", "store"),
            (Store, "push", "store"),
            (Store, "pull", "store"),
            (evaluate_run, "build_app", "build"),
            (EvidenceSession, "collect", "evidence"),
            (ProbeEvaluator, "evaluate", "probes"),
            (runner, "_conclude", RUN),
        ]
        saved = [(owner, name, getattr(owner, name)) for owner, name, _ in targets]
        for owner, name, stage in targets:
            self.wrap(owner, name, stage)
        return lambda: [setattr(owner, name, original) for owner, name, original in saved]  # type: ignore[func-returns-value]


@contextlib.contextmanager
def cpu_until_browser_close() -> Iterator[list[float]]:
    """The tree's CPU just before the run closes its browser: Chromium's processes, and the CPU they spent,
    are gone after it."""
    from codesign.runtime.browser import Browser

    seen: list[float] = []
    original = Browser.close

    async def close(self: Browser) -> None:
        seen.append(tree_cpu_s())
        await original(self)

    Browser.close = close  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        Browser.close = original  # type: ignore[method-assign]


def cell(url: str, suite: Path, store: Path, calls: int, *overrides: str) -> tuple[float, Any]:
    cfg = compose_cli([
        "model=litellm", "model.name=scripted", f"model.model=openai/capacity-calls-{calls}",
        f"model.api_base={url}/v1", "model.api_key_env=CODESIGN_BENCH_KEY", "model.timeout_s=3600",
        "harness=native", "sandbox=confined", "evaluator=probe", "tasks=all", f"tasks.root={suite}",
        "tracker=none", f"store.root={store}", "store.reuse=false", "attribution.below=null",
        "executor=inline", *overrides,
    ])  # fmt: skip
    with tempfile.TemporaryDirectory() as out, contextlib.redirect_stdout(io.StringIO()):
        start = time.perf_counter()
        tables = run(cfg, Path(out))
        wall = time.perf_counter() - start
    tasks = tables["tasks"]
    bad = tasks.filter((tasks["status"] != "ok") | (tasks["strict"] < 1.0))
    assert bad.height == 0, bad.select("task_id", "status", "exit_status", "message", "strict").head(5)
    return wall, tasks


def split(tmp: Path, tasks: list[str], trials: int, calls: int) -> None:
    """CPU per trial by stage, trials one at a time, the model answering at once."""
    suite = tmp / "split"
    make_suite(suite, tasks, trials)
    os.environ["CODESIGN_CAPACITY_SUITE"] = str(suite)
    proc, url = serve(0.0)
    try:
        warm = tmp / "warm"
        make_suite(warm, tasks, 1)
        cell(url, warm, tmp / "s-warm", calls, "executor.max_concurrency=1")  # imports, dependency cache, browser
        stages = Stages()
        undo = stages.install()
        try:
            cell(url, suite, tmp / "s-split", calls, "executor.max_concurrency=1")
        finally:
            undo()
    finally:
        proc.kill()
    n = trials * len(tasks)
    cpu = defaultdict(float, stages.cpu)
    trial_cpu, run_cpu = cpu.pop(TRIAL), cpu.pop(RUN, 0.0)
    total = trial_cpu + run_cpu
    print(f"CPU per trial by stage ({n} trials of {', '.join(tasks)}, one at a time, {calls} calls each, "
          f"the model answering at once; the browser's launch is in the first trial's evidence): "
          f"{total / n:.2f} CPU-s")  # fmt: skip
    # Containers keep only what their parts leave: the harness loop, trajectory and sandbox set-up of a solve;
    # applying the patch, the candidate sandbox and serving the app of an evaluation.
    rest = {
        "solve: harness loop, trajectory, set-up": cpu.pop(SOLVE) - sum(cpu[k] for k in INSIDE[SOLVE]),
        "evaluation: patch, sandbox, serving": cpu.pop(EVALUATE) - sum(cpu[k] for k in INSIDE[EVALUATE]),
    }
    rest["trial: locks, keys, records"] = trial_cpu - sum(cpu.values()) - sum(rest.values())
    cpu |= rest
    cpu[RUN + " (per run)"] = run_cpu
    cpu["judge I/O (evaluator=probe: none)"] = 0.0
    for stage, spent in sorted(cpu.items(), key=lambda kv: -kv[1]):
        print(f"  {stage:40s} {spent / n * 1000:8.1f} ms  {spent / total:6.1%}")


def in_flight(tmp: Path, tasks: list[str], level: int, trials: int, calls: int, latency: float) -> None:
    suite = tmp / f"level-{level}"
    make_suite(suite, tasks, -(-trials // len(tasks)))
    os.environ["CODESIGN_CAPACITY_SUITE"] = str(suite)
    proc, url = serve(latency)
    samples: list[tuple[float, int, int]] = []
    fds: list[int] = []  # codesign's open file descriptors
    done = threading.Event()

    def sample() -> None:
        start = time.perf_counter()
        while not done.wait(1.0):
            samples.append((time.perf_counter() - start, *tree_memory()))
            fds.append(psutil.Process().num_fds())

    sampler = threading.Thread(target=sample, daemon=True)
    try:
        cpu = tree_cpu_s()
        sampler.start()
        with cpu_until_browser_close() as at_close:
            wall, tasks_table = cell(url, suite, tmp / f"s-{level}", calls, f"executor.max_concurrency={level}")
        cpu = at_close[0] - cpu
    finally:
        done.set()
        proc.kill()
    n = tasks_table.height
    peak = max(total for _, _, total in samples) if samples else 0
    quarters = [samples[min(len(samples) - 1, int(len(samples) * q))][1] / 1e6 for q in (0.25, 0.5, 0.75, 1.0)]
    ideal = n / level * calls * latency
    print(
        f"{level:9d} {n:7d} {wall:8.1f} {ideal:8.1f} {n / wall * 3600:14.0f} {cpu / n:12.2f} "
        f"{peak / 1e6:8.0f} {peak / 1e6 / level:8.1f} {max(fds, default=0):9d}   "
        f"{' '.join(f'{q:.0f}' for q in quarters)}",
        flush=True,
    )


def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if args.split_trials:
            split(root, args.tasks, args.split_trials, args.calls)
        print(f"\nin flight (model latency {args.latency:g} s, {args.calls} calls per trial, graded by probes; "
              f"tasks {', '.join(args.tasks)}):")  # fmt: skip
        print("in flight  trials   wall s  ideal s  trials/node-h   CPU-s/trial  peak MB  per trial  peak fds  "
              "codesign RSS MB at 25/50/75/100 %")  # fmt: skip
        for level in args.in_flight:
            in_flight(root, args.tasks, level, args.trials_per_level or args.rounds * level, args.calls, args.latency)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=5.0, help="seconds per model call")
    parser.add_argument("--calls", type=int, default=30, help="model calls per trial (at least 2)")
    parser.add_argument("--in-flight", type=int, nargs="+", default=[64, 128, 256])
    parser.add_argument("--rounds", type=int, default=2, help="trials per level, as a multiple of the level")
    parser.add_argument("--trials-per-level", type=int, default=None, help="instead of --rounds: this many")
    parser.add_argument("--split-trials", type=int, default=3, help="trials per task for the stage split (0: none)")
    parser.add_argument("--tasks", nargs="+", default=DEFAULT_TASKS)
    main(parser.parse_args())
