"""Run trials on Ray: a few async actors per node, each running many trials as coroutines.

Trials wait on models and browsers, not CPUs. Measured here on latency-bound work: one Ray task per
trial reached 6% of ideal throughput, an async actor ~90%. So each actor keeps one browser and runs
up to ``max_concurrency`` trials at once; results stream back as they finish.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import Field

from codesign._types import Count, NonNegative, TrialRecord, TrialStatus
from codesign.errors import EnvironmentSetupError
from codesign.execute import Budget
from codesign.solve.models.limits import endpoint_limits, start_slot_keepers


class TrialWorker:
    """A Ray actor body: one shared browser, many concurrent trials."""

    def __init__(self, browser_executable: str | None, max_concurrency: int = 8, browser_slots: int | None = None):
        from codesign.runtime.browser import Browser

        self.browser = Browser(browser_executable, browser_slots)
        self.threads = max_concurrency + 4  # solves run in threads; the default pool is only cores + 4

    async def run(self, spec: dict[str, Any]) -> TrialRecord:
        import asyncio
        from concurrent.futures import ThreadPoolExecutor

        from codesign.trial import TrialSpec, run_trial_safely

        if self.threads:  # once, on the actor's own event loop (and node: a killed run's scratch goes)
            asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(self.threads))
            self.threads = 0
            from codesign.sandbox import scratch

            scratch.sweep(spec.get("scratch_root"))
        return await run_trial_safely(TrialSpec(**spec), self.browser)

    async def check(self, store_root: str, scratch_root: str | None, node_cache: str) -> list[str]:
        """This node's missing prerequisites (empty when ready), the browser launched for real."""
        import asyncio
        import socket

        from codesign.errors import CodesignError
        from codesign.execute.prerequisites import node_problems

        problems = await asyncio.to_thread(node_problems, store_root, scratch_root, node_cache)
        try:
            await self.browser.get()
        except CodesignError as e:
            problems.append(f"{socket.gethostname()}: Chromium: {e}")
        return problems

    async def shutdown(self) -> None:
        await self.browser.close()


def ensure_ray(address: str | None, num_cpus: int | None = None, runtime_env: dict | None = None) -> None:
    """Connect once per process: ``address`` / ``$RAY_ADDRESS`` for a cluster, else a new local instance.

    ``address="local"`` is explicit on purpose: a stale cluster file from a killed ``ray start`` makes a
    plain ``ray.init()`` hang for minutes (ENVIRONMENT.md).
    """
    import ray

    if ray.is_initialized():
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    target = address or os.environ.get("RAY_ADDRESS") or "local"
    kwargs: dict[str, Any] = {"address": target, "logging_level": logging.WARNING, "runtime_env": runtime_env}
    if target == "local":
        kwargs |= {"include_dashboard": False, "num_cpus": num_cpus}
    # A loaded machine can miss Ray's own start-up deadline (30 s, fixed in Ray): one more try, then a hint.
    for attempt in (1, 2):
        try:
            ray.init(**kwargs)
            return
        except Exception as e:
            ray.shutdown()
            if attempt == 2:
                raise EnvironmentSetupError(
                    f"Ray did not start ({target}): {type(e).__name__}: {str(e)[:500]}",
                    "on a busy machine run without Ray (executor=inline); for a cluster check RAY_ADDRESS / "
                    "executor.address",
                ) from e


@dataclass
class RayExecutor:
    address: str | None = None  # None: $RAY_ADDRESS, else a new local instance
    num_workers: Count = 2  # actors (each with its own browser)
    max_concurrency: Count = 8  # trials in flight per actor
    worker_num_cpus: Annotated[float, Field(ge=0)] = 0.5
    local_num_cpus: Count | None = None  # CPUs of the local instance (None: all)
    max_retries: NonNegative = 2  # re-runs of a trial whose actor died (infrastructure), never of agent failures
    browser_executable: str | None = None
    browser_slots: Count | None = None  # evaluations at once per actor (None: the CPU count)
    runtime_env: dict[str, Any] | None = None  # e.g. {working_dir: ., pip: [...]} for a remote cluster
    resources: dict[str, float] = field(default_factory=dict)  # custom resources per actor, e.g. {browser: 1}

    def run(self, specs: list[dict[str, Any]], on_result: Callable[[TrialRecord], None],
            budget: Budget | None = None) -> list[TrialRecord]:  # fmt: skip
        import ray

        budget = budget or Budget()
        ensure_ray(self.address, self.local_num_cpus, self.runtime_env)
        actor_cls = ray.remote(TrialWorker).options(
            max_concurrency=self.max_concurrency,
            num_cpus=self.worker_num_cpus,
            resources=self.resources or None,
            max_restarts=1,
        )
        n = max(1, min(self.num_workers, len(specs)))
        keepers = start_slot_keepers(endpoint_limits(specs))  # per-endpoint limits shared by every actor
        workers = [
            actor_cls.remote(self.browser_executable, self.max_concurrency, self.browser_slots) for _ in range(n)
        ]
        pending: dict[Any, tuple[dict[str, Any], int]] = {}
        queue = list(reversed(specs))
        # Bounded submission: the budget is checked before each trial is handed to an actor.
        in_flight = len(workers) * self.max_concurrency
        submitted = 0

        def submit_more() -> None:
            nonlocal submitted
            while queue and len(pending) < in_flight and not budget.exhausted:
                spec = queue.pop()
                pending[workers[submitted % len(workers)].run.remote(spec)] = (spec, 0)
                submitted += 1

        records: list[TrialRecord] = []
        try:  # every node that will run trials checks itself before the first (paid) solve
            where = (specs[0]["store_root"], specs[0].get("scratch_root"), specs[0]["node_cache"]) if specs else None
            checks = [w.check.remote(*where) for w in workers] if where else []
            problems = sorted({p for found in ray.get(checks) for p in found})
        except Exception:
            self._stop(workers, keepers)
            raise
        if problems:
            self._stop(workers, keepers)
            raise EnvironmentSetupError("nodes are not ready to run trials:\n  " + "\n  ".join(problems),
                                        "run `make setup` (python -m codesign.install run) on those nodes")  # fmt: skip
        submit_more()
        try:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                ref = done[0]
                spec, attempt = pending.pop(ref)
                try:
                    record = ray.get(ref)
                except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError) as e:
                    if attempt < self.max_retries:
                        pending[workers[(attempt + 1) % len(workers)].run.remote(spec)] = (spec, attempt + 1)
                        continue
                    record = TrialRecord.unrun(spec["task_id"], spec["cell"], TrialStatus.INFRA_ERROR,
                                               f"worker died {attempt + 1}×: {e}")  # fmt: skip
                budget.charge(record)
                records.append(record)
                on_result(record)
                submit_more()
            for spec in reversed(queue):  # left over: the budget is spent
                record = budget.skipped(spec)
                records.append(record)
                on_result(record)
        finally:
            self._stop(workers, keepers)
        return records

    @staticmethod
    def _stop(workers: list[Any], keepers: list[Any]) -> None:
        import ray

        for w in workers:
            with contextlib.suppress(Exception):  # a dead actor has nothing left to close
                ray.get(w.shutdown.remote(), timeout=10)
            ray.kill(w)
        for k in keepers:
            ray.kill(k)
