"""Do verdicts survive load, and what does load cost? Measured side by side in one run.

    python benchmarks/load.py [--levels 1 8 32] [--tasks …] [--burn 0]

For each level N, N evaluations of the tasks' reference solutions (cycling through the tasks) are started
at once in one process with one browser — as a Ray actor runs them — and each one's verdicts are compared
with the same task's verdicts at level 1. Printed per level: wall time, mean latency of one evaluation and
its slowdown against level 1, throughput, and the share of verdicts equal to level 1's. ``--burn K`` adds K
busy processes per core for the whole run (a loaded cluster node).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from codesign.config import bundled_suite
from codesign.evaluate.evaluators import ProbeEvaluator
from codesign.evaluate.run import evaluate_patch
from codesign.runtime.browser import Browser
from codesign.tasks.loader import load_suite

DEFAULT_TASKS = ["re-kanban-wip-limits", "re-recipes-search", "me-bakery-header-mockup", "me-pricing-annual-toggle"]
BURN = "import time\nend = time.monotonic() + 3600\nwhile time.monotonic() < end: pass\n"


async def level(n: int, tasks: list, browser: Browser, out: Path, node_cache: Path) -> list[tuple]:
    async def one(i: int) -> tuple:
        task = tasks[i % len(tasks)]
        start = time.perf_counter()
        ev = await evaluate_patch(task, task.reference_patch(), ProbeEvaluator(), browser,
                                  out / f"{n}-{i}", node_cache)  # fmt: skip
        return task.id, {v.criterion_id: v.verdict for v in ev.verdicts}, time.perf_counter() - start

    return list(await asyncio.gather(*(one(i) for i in range(n))))


async def main(levels: list[int], task_ids: list[str]) -> None:
    node_cache = Path("~/.cache/codesign/node_modules").expanduser()
    tasks = load_suite(bundled_suite(), include=task_ids).tasks
    browser = Browser()
    await browser.get()
    reference: dict[str, dict[str, str]] = {}
    base_latency = base_rate = None
    print(f"{'in flight':>9} {'wall s':>7} {'latency s':>9} {'slowdown':>8} {'evals/s':>8} {'agreement':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in sorted(set([1, *levels])):
            if n == 1:  # level 1 is every task once, alone: the verdicts everything is compared with
                results = []
                for task in tasks:
                    results += await level(1, [task], browser, Path(tmp), node_cache)
                reference = {task_id: verdicts for task_id, verdicts, _ in results}
            start = time.perf_counter()
            results = results if n == 1 else await level(n, tasks, browser, Path(tmp), node_cache)
            wall = sum(r[2] for r in results) if n == 1 else time.perf_counter() - start
            latency = statistics.mean(r[2] for r in results)
            rate = len(results) / wall
            same = sum(v == reference[t].get(c) for t, vs, _ in results for c, v in vs.items())
            total = sum(len(vs) for _, vs, _ in results)
            base_latency, base_rate = base_latency or latency, base_rate or rate
            print(f"{n:>9} {wall:>7.1f} {latency:>9.2f} {latency / base_latency:>7.1f}x {rate:>8.2f} "
                  f"{same / total:>9.1%}")  # fmt: skip
    await browser.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--tasks", nargs="+", default=DEFAULT_TASKS)
    parser.add_argument("--burn", type=int, default=0, help="busy processes per core for the whole run")
    args = parser.parse_args()
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(args.burn * (os.cpu_count() or 1))]
    try:
        asyncio.run(main(args.levels, args.tasks))
    finally:
        for b in burners:
            b.kill()
