"""Per-endpoint concurrency: at most ``max_concurrency`` calls in flight to one provider endpoint across the
whole pool, whatever the number of cells, actors and nodes sending to it.

A pooled grid runs the trials of many cells at once; several cells (and their judges) may call one
provider, whose rate limit is per account, not per cell. So a model config may set ``max_concurrency``; the
Ray executor then starts one slot keeper per endpoint (a named async actor) before the first trial, and
every call takes a slot from it. Without Ray (``executor=inline``) the pool is this process, and a
process-wide semaphore does the same. An endpoint is its litellm model string plus its ``api_base``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

from codesign.runtime.clock import waiting

ACTOR_PREFIX = "codesign-endpoint-"
HOLDER = ""  # this process's name with the slot keepers (a trial worker's), so its slots can be freed if it dies
MODEL_TARGET = "LitellmModel"

_local: dict[str, threading.BoundedSemaphore] = {}
_local_lock = threading.Lock()


def endpoint_key(model: str, api_base: str | None) -> str:
    return hashlib.sha256(f"{model}\n{api_base or ''}".encode()).hexdigest()[:16]


class EndpointSlots:
    """Ray actor body: a semaphore that callers on any node acquire and release by name."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._free = asyncio.Semaphore(limit)
        self.in_flight = 0
        self.peak = 0
        self.held: dict[str, int] = {}  # holder (a trial worker) -> slots it holds

    async def acquire(self, holder: str = "") -> None:
        await self._free.acquire()
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        self.held[holder] = self.held.get(holder, 0) + 1

    async def release(self, holder: str = "") -> None:
        if self.held.get(holder, 0) <= 0:  # already freed with its holder
            return
        self.held[holder] -= 1
        self.in_flight -= 1
        self._free.release()

    async def release_holder(self, holder: str) -> int:
        """Free every slot of a worker that died mid-call (its calls will never release them)."""
        count = self.held.pop(holder, 0)
        for _ in range(count):
            self.in_flight -= 1
            self._free.release()
        return count

    async def stats(self) -> dict[str, int]:
        return {"limit": self.limit, "in_flight": self.in_flight, "peak": self.peak}


def endpoint_limits(specs: list[dict[str, Any]]) -> dict[str, int]:
    """Every model config in the trial specs (solvers, judges, verifiers) that sets ``max_concurrency``:
    endpoint key → limit (the smallest, when configs of one endpoint disagree)."""
    from codesign.config import nested_dicts

    limits: dict[str, int] = {}
    for node in (n for spec in specs for n in nested_dicts(spec)):
        if MODEL_TARGET in str(node.get("_target_", "")) and node.get("max_concurrency"):
            key = endpoint_key(str(node["model"]), node.get("api_base"))
            limits[key] = min(limits.get(key, node["max_concurrency"]), int(node["max_concurrency"]))
    return limits


def start_slot_keepers(limits: dict[str, int], scheduling_strategy: Any = None) -> list[Any]:
    """On the Ray driver: one named slot keeper per limited endpoint (owned by the driver, so they live as
    long as the run and die with it; placed by ``scheduling_strategy``, e.g. on the driver's node)."""
    import ray

    keeper = ray.remote(EndpointSlots)
    return [keeper.options(name=ACTOR_PREFIX + key, num_cpus=0, max_concurrency=10_000,
                           scheduling_strategy=scheduling_strategy).remote(limit)
            for key, limit in limits.items()]  # fmt: skip


def _keeper(key: str) -> Any | None:
    try:
        import ray

        if not ray.is_initialized():
            return None
        return ray.get_actor(ACTOR_PREFIX + key)
    except (ImportError, ValueError):  # no Ray, or no keeper for this endpoint: this process is the pool
        return None


def _local_semaphore(key: str, limit: int) -> threading.BoundedSemaphore:
    with _local_lock:
        return _local.setdefault(key, threading.BoundedSemaphore(limit))


@contextlib.contextmanager
def endpoint_slot(model: str, api_base: str | None, limit: int | None) -> Iterator[None]:
    """Hold one of the endpoint's slots for the duration of a call (no-op without a limit). Waiting for the
    slot stops the caller's work clock (codesign.runtime.clock): a queue is not the call."""
    if not limit:
        yield
        return
    key = endpoint_key(model, api_base)
    keeper = _keeper(key)
    if keeper is not None:
        import ray

        with waiting():
            ray.get(keeper.acquire.remote(HOLDER))
        try:
            yield
        finally:
            ray.get(keeper.release.remote(HOLDER))
        return
    semaphore = _local_semaphore(key, limit)
    with waiting():
        semaphore.acquire()
    try:
        yield
    finally:
        semaphore.release()


@contextlib.asynccontextmanager
async def endpoint_slot_async(model: str, api_base: str | None, limit: int | None) -> AsyncIterator[None]:
    """:func:`endpoint_slot` for a coroutine: waiting holds no thread, and a caller cancelled mid-call (a
    judge's timed-out call) gives its slot back at once."""
    if not limit:
        yield
        return
    key = endpoint_key(model, api_base)
    keeper = _keeper(key)
    if keeper is not None:
        granted = keeper.acquire.remote(HOLDER)
        try:
            with waiting():
                await granted
        except asyncio.CancelledError:  # the keeper may grant it still: give it back once it does
            asyncio.get_running_loop().create_task(_give_back_when_granted(keeper, granted))
            raise
        try:
            yield
        finally:
            keeper.release.remote(HOLDER)  # sent, not awaited: a cancelled caller must not wait for it
        return
    semaphore = _local_semaphore(key, limit)  # shared with this process's threads (solves)
    with waiting():
        while not semaphore.acquire(blocking=False):
            await asyncio.sleep(SLOT_POLL_S)
    try:
        yield
    finally:
        semaphore.release()


SLOT_POLL_S = 0.02  # how often a coroutine retries a slot held by this process's threads


async def _give_back_when_granted(keeper: Any, granted: Any) -> None:
    with contextlib.suppress(Exception):
        await granted
        await keeper.release.remote(HOLDER)
