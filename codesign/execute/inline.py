"""Run trials as coroutines in this process, sharing one browser. For debugging and small runs."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from codesign._types import Count, TrialRecord
from codesign.errors import EnvironmentSetupError
from codesign.execute import Budget, open_files_for
from codesign.execute.prerequisites import NodeRequirements, node_problems
from codesign.runtime.browser import Browser
from codesign.trial import TrialSpec, run_trial_safely


@dataclass
class InlineExecutor:
    max_concurrency: Count = 4  # trials in flight at once
    browser_executable: str | None = None
    browser_slots: Count | None = None  # evaluations at once (None: the CPU count)

    def run(
        self,
        specs: list[dict[str, Any]],
        on_result: Callable[[TrialRecord], None],
        budget: Budget | None = None,
        on_start: Callable[[dict[str, Any]], None] | None = None,
    ) -> list[TrialRecord]:
        if specs:
            first = specs[0]
            needs = NodeRequirements(first["store_root"], first.get("scratch_root"), first["node_cache"])
            problems = node_problems(needs)
            if problems:
                raise EnvironmentSetupError(
                    "this machine is not ready to run trials:\n  " + "\n  ".join(problems),
                    "run `make setup` (python -m codesign.install run)",
                )
        return asyncio.run(self._run(specs, on_result, budget or Budget(), on_start or (lambda spec: None)))

    async def _run(
        self,
        specs: list[dict[str, Any]],
        on_result: Callable[[TrialRecord], None],
        budget: Budget,
        on_start: Callable[[dict[str, Any]], None],
    ) -> list[TrialRecord]:
        browser = Browser(self.browser_executable, self.browser_slots)
        open_files_for(self.max_concurrency)
        gate = asyncio.Semaphore(self.max_concurrency)
        # Solves run in threads: the default pool (cores + 4) would cap trials in flight far below the gate.
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(self.max_concurrency + 4))

        async def one(spec: dict[str, Any]) -> TrialRecord:
            async with gate:
                if budget.exhausted:
                    record = budget.skipped(spec)
                else:
                    on_start(spec)
                    record = await run_trial_safely(TrialSpec(**spec), browser)
                    record.node = socket.gethostname()
                    budget.charge(record)
            on_result(record)
            return record

        try:
            return list(await asyncio.gather(*(one(s) for s in specs)))
        finally:
            await browser.close()
