"""Evidence collection vs the bare floor, measured side by side in one run.

For each bundled task (the reference solution applied, built and served once), alternately:
  floor    — the same reused browser and one reused page per viewport: goto + full-page PNG per route;
  evidence — codesign's collection: per route × viewport a fresh page with console/network capture,
             settle, full-page PNG, DOM snapshot, route status (EvidenceSession.collect);
  graded   — evidence plus grading every criterion's probe (the whole evaluation after the build).
Prints medians and the ratios to the floor.

    python benchmarks/evidence.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from codesign.config import bundled_suite
from codesign.evaluate.evaluators import ProbeEvaluator
from codesign.evaluate.evidence import EvidenceSession
from codesign.evaluate.run import DEFAULT_SANDBOX, VIEWPORTS
from codesign.runtime.browser import Browser
from codesign.runtime.serve import serve
from codesign.sandbox.candidate import build_app, build_candidate_sandbox
from codesign.tasks.loader import load_suite
from codesign.workspace import apply_patch, copy_tree


async def floor(browser: Browser, base: str, routes: list[str]) -> float:
    start = time.perf_counter()
    for viewport in VIEWPORTS:
        ctx = await browser.context(viewport)
        page = await ctx.new_page()
        for route in routes:
            await page.goto(base + route, wait_until="load")
            await page.screenshot(full_page=True, type="png")
        await ctx.close()
    return time.perf_counter() - start


async def evidence(browser: Browser, base: str, ws: Path, task, grade: bool) -> float:
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        session = EvidenceSession(browser, base, Path(out), ws)
        await session.collect(list(task.manifest.environment.routes), VIEWPORTS, "", "")
        if grade:
            await ProbeEvaluator().evaluate(task, session)
        await session.close()
        return time.perf_counter() - start


async def main(repeats: int, only: list[str] | None = None) -> None:
    node_cache = Path("~/.cache/codesign/node_modules").expanduser()
    browser = Browser()
    await browser.get()
    print(f"{'task':34} {'routes':>6} {'floor s':>8} {'evidence s':>10} {'ratio':>6} {'+probes s':>9} {'ratio':>6}")
    ratios, graded_ratios = [], []
    for task in load_suite(bundled_suite(), include=only).tasks:
        with tempfile.TemporaryDirectory() as tmp:
            ws = Path(tmp) / "ws"
            copy_tree(task.app_dir, ws)
            apply_patch(ws, task.reference_patch())
            env = task.manifest.environment
            box = build_candidate_sandbox(DEFAULT_SANDBOX, ws, Path(tmp) / "home")
            assert (await asyncio.to_thread(build_app, ws, env, node_cache, box)).ok
            routes = list(env.routes)
            with serve(ws, env, box) as base:
                await floor(browser, base, routes)  # warm-up: caches, first paint
                f, e, g = [], [], []
                for _ in range(repeats):
                    f.append(await floor(browser, base, routes))
                    e.append(await evidence(browser, base, ws, task, grade=False))
                    g.append(await evidence(browser, base, ws, task, grade=True))
        fm, em, gm = statistics.median(f), statistics.median(e), statistics.median(g)
        ratios.append(em / fm)
        graded_ratios.append(gm / fm)
        print(f"{task.id:34} {len(routes):>6} {fm:>8.2f} {em:>10.2f} {em / fm:>6.2f} {gm:>9.2f} {gm / fm:>6.2f}")
    print(
        f"median ratio to the floor: evidence {statistics.median(ratios):.2f}x, "
        f"evidence + probes {statistics.median(graded_ratios):.2f}x  ({repeats} repeats, medians)"
    )
    await browser.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tasks", nargs="*", help="task ids (default: every bundled task)")
    args = parser.parse_args()
    asyncio.run(main(args.repeats, args.tasks))
