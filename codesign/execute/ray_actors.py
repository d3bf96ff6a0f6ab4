"""The bodies of the Ray actors a run starts: trial workers (one browser, many trials each) and the stage locks
shared by every node of a run."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ray

from codesign._types import TrialRecord
from codesign.execute import open_files_for
from codesign.execute.prerequisites import NodeRequirements


class TrialWorker:
    """A Ray actor body: one shared browser, many concurrent trials."""

    def __init__(
        self,
        browser_executable: str | None,
        max_concurrency: int = 8,
        browser_slots: int | None = None,
        locks: Any = None,
        holder: str = "",
        lease_s: float | None = None,
    ) -> None:
        from codesign import leases
        from codesign.runtime.browser import Browser
        from codesign.store import use_lock_service

        # Ray warns at the first blocking ray.get in an async actor, meaning its event loop; this actor calls
        # it only from threads (solves' endpoint slots, lease renewals), where it blocks nothing else.
        os.environ.setdefault("RAY_WARN_BLOCKING_GET_INSIDE_ASYNC", "0")
        self.browser = Browser(browser_executable, browser_slots)
        self.threads = max_concurrency + 4  # solves run in threads; the default pool is only cores + 4
        open_files_for(max_concurrency)
        self.node = ray.get_runtime_context().get_node_id()
        # Everything this worker holds (endpoint slots, stage locks, lock objects in the store) is held under
        # the pool's name for it, and renewed from a thread of this process while it lives.
        leases.set_holder(holder or leases.holder())
        leases.set_lease_seconds(lease_s)
        if locks is not None:
            use_lock_service(ActorLocks(locks, leases.holder()))
            leases.renewals().add("stage locks", leases.renew_with_actor(locks, leases.holder(), "stage locks"))

    @ray.method
    async def run(self, spec: dict[str, Any], task_archive: bytes | None = None) -> TrialRecord:
        import asyncio
        from concurrent.futures import ThreadPoolExecutor

        from codesign.trial import TrialSpec, run_trial_safely

        if self.threads:  # once, on the actor's own event loop (and node: a killed run's scratch goes)
            asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(self.threads))
            self.threads = 0
            from codesign.sandbox import scratch

            scratch.sweep(spec.get("scratch_root"))
        if task_archive is not None:  # this node's copy of the task, by content
            from codesign.tasks.archive import unpack

            tasks_cache = Path(spec["node_cache"]).expanduser().parent / "tasks"
            spec = {**spec, "task_dir": str(await asyncio.to_thread(unpack, task_archive, tasks_cache))}
        record = await run_trial_safely(TrialSpec(**spec), self.browser)
        record.node = self.node
        return record

    @ray.method
    async def check(self, requirements: dict[str, Any]) -> list[str]:
        """This node's missing prerequisites (empty when ready), the browser launched for real when the run
        grades."""
        import asyncio
        import socket

        from codesign.errors import CodesignError
        from codesign.execute.prerequisites import node_problems

        needs = NodeRequirements(**requirements)
        problems = await asyncio.to_thread(node_problems, needs)
        if needs.browser:
            try:
                await self.browser.get()
            except CodesignError as e:
                problems.append(f"{socket.gethostname()}: Chromium: {e}")
        return problems

    @ray.method
    async def shutdown(self) -> None:
        await self.browser.close()


class StageLocks:
    """A Ray actor body: named exclusive locks, each held by one worker under a lease (``codesign.leases``).
    Object storage has no file locks, so the single flight of a stage across a run's nodes is kept here; a
    dead worker's locks are released by the driver (``release_holder``), or when its lease lapses."""

    def __init__(self, lease_s: float | None = None) -> None:
        from codesign import leases

        self.held: dict[str, str] = {}
        self.leases = leases.LeaseBook(lease_s)

    async def acquire(self, name: str, holder: str) -> bool:
        from codesign import leases

        self.leases.keep_reaping(self._free_holder)
        if self.leases.heard(holder) is leases.Standing.RELEASED:
            raise leases.LeaseLost(f"worker {holder[:12]} was declared dead; it takes no lock")
        if name in self.held:
            return False
        self.held[name] = holder
        return True

    async def release(self, name: str, holder: str) -> None:
        if self.held.get(name) == holder:
            del self.held[name]

    async def renew(self, holder: str) -> str:
        self.leases.keep_reaping(self._free_holder)
        return self.leases.heard(holder).value

    async def released(self, holder: str) -> bool:
        """Whether ``holder`` was declared dead (a lock object it left in the store may be taken over)."""
        return holder in self.leases.released

    async def release_holder(self, holder: str) -> int:
        self.leases.release(holder)
        return self._free_holder(holder)

    def _free_holder(self, holder: str) -> int:
        names = [n for n, h in self.held.items() if h == holder]
        for n in names:
            del self.held[n]
        return len(names)

    async def stats(self) -> dict[str, Any]:
        return {"held": dict(self.held), "longest_silence": self.leases.longest_silence}


@dataclass
class ActorLocks:
    """The store's ``LockService`` on a worker: polls the run's ``StageLocks`` actor."""

    actor: Any
    holder: str

    async def acquire(self, name: str) -> None:
        import asyncio

        from codesign.store import LOCK_POLL_S

        while not await self.actor.acquire.remote(name, self.holder):
            await asyncio.sleep(LOCK_POLL_S)

    async def release(self, name: str) -> None:
        await self.actor.release.remote(name, self.holder)

    async def released(self, holder: str) -> bool:
        return await self.actor.released.remote(holder)
