"""codesign's own gate on a draft's environment: integrity, install and build, launch and render on every
route — in the candidate sandbox, offline except installs — before any criterion exists. The draft is loaded
as a task with one stand-in criterion (the page shows its body) that the gate never grades past rendering."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from pathlib import Path

from codesign.curate.drafts import Draft
from codesign.evaluate.gate import validate_task
from codesign.runtime.browser import Browser
from codesign.tasks.loader import load_task

STAND_IN = """criteria:
  - id: renders
    text: The page renders.
    kind: visual
    preserve: true
    probe: {expect: [{visible: body}]}
"""


async def gate_drafts(drafts: list[Draft], node_cache: Path, out: Path, concurrency: int,
                      executable: str | None = None) -> dict[str, str]:  # fmt: skip
    browser = Browser(executable or os.environ.get("CODESIGN_CHROMIUM"))
    limit = asyncio.Semaphore(concurrency)

    async def one(draft: Draft) -> tuple[str, str]:
        async with limit:
            return draft.task_id, await _check(draft, browser, node_cache, out)

    try:
        return dict(await asyncio.gather(*(one(d) for d in drafts)))
    finally:
        await browser.close()


async def _check(draft: Draft, browser: Browser, node_cache: Path, out: Path) -> str:
    """'' when the gate passes; ``undecided: why`` when it could not decide (the machine's failure, not the
    app's: the draft is kept and says so); else ``step: why``."""
    with tempfile.TemporaryDirectory(prefix="codesign-draft-gate-") as tmp:
        copy = Path(tmp) / draft.task_id
        shutil.copytree(draft.folder, copy, symlinks=True)
        (copy / "criteria.yaml").write_text(STAND_IN)
        try:
            task = load_task(copy)
        except Exception as e:
            return f"integrity: {e}"
        report = await validate_task(task, browser, node_cache, out, near_misses=False, environment_only=True)
    if report.transient:
        return f"undecided: {report.transient}"
    if report.ok:
        return ""
    step = next(s for s, v in report.steps.items() if v.startswith("FAIL"))
    return f"{step}: {report.steps[step][len('FAIL: ') :]}"
