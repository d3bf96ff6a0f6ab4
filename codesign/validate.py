"""The validation gate for task authors: ``python -m codesign.validate [--repeat K] [tasks=all] [overrides]``.

Runs ``codesign.evaluate.gate`` on every selected task — integrity, install/build, launch/render,
solvability, discrimination, near misses — prints a per-task report with warnings (criteria only an LLM can grade;
with ``--repeat K`` criteria whose verdict on the reference changes over K runs), writes it as parquet,
and exits non-zero on any failure.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

from codesign.config import compose_cli
from codesign.evaluate.gate import TaskReport, print_reports, validate_task, write_reports
from codesign.runtime.browser import Browser
from codesign.tasks.loader import Task
from codesign.tasks.select import select_tasks


async def validate(
    tasks: list[Task],
    node_cache: Path,
    out_dir: Path,
    concurrency: int = 3,
    repeat: int = 1,
    near_misses: bool = True,
) -> list[TaskReport]:
    """The gate on each of ``tasks`` (``concurrency`` at once, in one browser); ``near_misses=False`` leaves
    the near misses out (the task's soundness only: integrity to discrimination)."""
    browser = Browser(os.environ.get("CODESIGN_CHROMIUM"))
    gate = asyncio.Semaphore(concurrency)

    async def one(task: Task) -> TaskReport:
        async with gate:
            report = await validate_task(task, browser, node_cache, out_dir, repeat, near_misses)
        print(f"{'ok  ' if report.ok else 'FAIL'} {task.id} ({report.wall_s:.1f}s)", flush=True)
        return report

    try:
        return list(await asyncio.gather(*(one(t) for t in tasks)))
    finally:
        await browser.close()


def main(argv: list[str] | None = None) -> int:
    args = list(argv if argv is not None else sys.argv[1:])
    repeat = 1
    if "--repeat" in args:
        i = args.index("--repeat")
        try:
            repeat = int(args[i + 1])
        except (IndexError, ValueError):
            raise SystemExit("--repeat takes a number of reference runs, e.g. --repeat 3") from None
        if repeat < 1:
            raise SystemExit("--repeat takes a number ≥ 1")
        del args[i : i + 2]
    cfg = compose_cli(args, default_overrides=["tasks=all"])
    selection = select_tasks(cfg.tasks)
    out_dir = Path("outputs") / "validate" / time.strftime("%Y-%m-%d_%H-%M-%S")
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    reports = asyncio.run(validate(selection.tasks, Path(cfg.paths.node_cache).expanduser(), out_dir, repeat=repeat))
    for error in selection.errors:
        r = TaskReport(error.task_id)
        r.fail("integrity", str(error))
        reports.append(r)
    write_reports(reports, out_dir)
    print_reports(reports)
    failed = sum(not r.ok for r in reports)
    print(
        f"\n{len(reports) - failed}/{len(reports)} tasks pass the gate in {time.monotonic() - start:.1f}s; "
        f"report: {out_dir / 'validation.parquet'}"
    )
    return 1 if failed or not reports else 0


if __name__ == "__main__":
    sys.exit(main())
