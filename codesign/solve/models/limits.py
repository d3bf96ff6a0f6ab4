"""Per-endpoint concurrency: at most ``max_concurrency`` calls in flight to one provider endpoint across the
whole pool, whatever the number of cells, actors and nodes sending to it.

A pooled grid runs the trials of many cells at once; several cells (and their judges) may call one
provider, whose rate limit is per account, not per cell. So a model config may set ``max_concurrency``; the
Ray executor then starts one slot keeper per endpoint (a named async actor) before the first trial, and
every call takes a slot from it. Slots are leases (``codesign.leases``): a worker that dies, however it
dies, gives its slots back. Without Ray (``executor=inline``) the pool is this process, and a process-wide
semaphore does the same. An endpoint is its litellm model string plus its ``api_base``.

:func:`endpoint_slot` holds a slot around a call from a thread, :func:`endpoint_slot_async` from a coroutine;
both take the same slots.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

from codesign import leases
from codesign.runtime.clock import waiting

ACTOR_PREFIX = "codesign-endpoint-"
MODEL_TARGET = "LitellmModel"

_local: dict[str, Any] = {}  # endpoint key -> this process's semaphore (aiologic: shared by threads and coroutines)
_local_lock = threading.Lock()


def endpoint_key(model: str, api_base: str | None) -> str:
    return hashlib.sha256(f"{model}\n{api_base or ''}".encode()).hexdigest()[:16]


class EndpointSlots:
    """Ray actor body: a semaphore that callers on any node acquire and release by name, under a lease.

    Each slot is held by a holder (a trial worker) that renews its lease; a holder the pool reports dead
    (``release_holder``) or that stops renewing for a lease (see ``codesign.leases``) gives its slots back.
    An acquire still waiting when its holder is freed gets its slot and hands it straight back: a worker
    that died while waiting never takes a slot with it."""

    def __init__(self, limit: int, lease_s: float | None = None) -> None:
        self.limit = limit
        self._free = asyncio.Semaphore(limit)
        self.in_flight = 0
        self.peak = 0
        self.waiting = 0  # acquires parked for a free slot
        self.held: dict[str, int] = {}  # holder (a trial worker) -> slots it holds
        self.leases = leases.LeaseBook(lease_s)

    async def acquire(self, holder: str = "") -> bool:
        """Take a slot for ``holder``: True once held; False when its lease lapsed while it waited (the slot
        went back; a live holder asks again). Raises :class:`codesign.leases.LeaseLost` for a dead holder."""
        self.leases.keep_reaping(self._free_holder)
        if self.leases.heard(holder) is leases.Standing.RELEASED:  # a call that reached us after its worker died
            raise leases.LeaseLost(f"worker {holder[:12]} was declared dead; it takes no endpoint slot")
        epoch = self.leases.epoch(holder)
        self.waiting += 1
        try:
            await self._free.acquire()
        finally:
            self.waiting -= 1
        if not self.leases.holds(holder, epoch):  # freed while it waited: the slot goes back at once
            self._free.release()
            return False
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        self.held[holder] = self.held.get(holder, 0) + 1
        return True

    async def release(self, holder: str = "") -> None:
        if self.held.get(holder, 0) <= 0:  # already freed with its holder
            return
        self.held[holder] -= 1
        self.in_flight -= 1
        self._free.release()

    async def renew(self, holder: str) -> str:
        self.leases.keep_reaping(self._free_holder)
        standing = self.leases.heard(holder)
        return standing.value

    async def release_holder(self, holder: str) -> int:
        """Free every slot of a worker that died (its calls will never release them); its acquires still
        waiting give theirs back when they get one."""
        self.leases.release(holder)
        return self._free_holder(holder)

    def _free_holder(self, holder: str) -> int:
        count = self.held.pop(holder, 0)
        for _ in range(count):
            self.in_flight -= 1
            self._free.release()
        return count

    async def stats(self) -> dict[str, Any]:
        holders = {h: n for h, n in self.held.items() if n}
        return {
            "limit": self.limit,
            "in_flight": self.in_flight,
            "peak": self.peak,
            "waiting": self.waiting,
            "holders": holders,
            "lapsed": self.leases.lapsed(),
            "longest_silence": self.leases.longest_silence,
        }


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


def start_slot_keepers(
    limits: dict[str, int],
    scheduling_strategy: Any = None,
    lease_s: float | None = None,
) -> list[Any]:
    """On the Ray driver: one named slot keeper per limited endpoint (owned by the driver, so they live as
    long as the run and die with it; placed by ``scheduling_strategy``, e.g. on the driver's node)."""
    import ray

    keeper = ray.remote(EndpointSlots)
    return [
        keeper.options(
            name=ACTOR_PREFIX + key, num_cpus=0, max_concurrency=10_000, scheduling_strategy=scheduling_strategy
        ).remote(limit, lease_s)
        for key, limit in limits.items()
    ]


def _keeper(key: str) -> Any | None:
    try:
        import ray

        if not ray.is_initialized():
            return None
        return ray.get_actor(ACTOR_PREFIX + key)
    except (ImportError, ValueError):  # no Ray, or no keeper for this endpoint: this process is the pool
        return None


def _holding(keeper: Any, key: str) -> str:
    """This process's holder name, its lease with ``keeper`` renewed from now on."""
    who = leases.holder()
    leases.renewals().add(f"endpoint {key} as {who}", leases.renew_with_actor(keeper, who, f"endpoint slots {key}"))
    return who


def _local_slots(key: str, limit: int) -> Any:
    import aiologic

    with _local_lock:
        return _local.setdefault(key, aiologic.BoundedSemaphore(limit))


@contextlib.contextmanager
def endpoint_slot(model: str, api_base: str | None, limit: int | None) -> Iterator[None]:
    """Hold one of the endpoint's slots for the duration of a call (no-op without a limit). Waiting for the
    slot stops the caller's work clock (codesign.runtime.clock): a queue is not the call."""
    if not limit:
        yield
        return
    key = endpoint_key(model, api_base)
    keeper = _keeper(key)
    if keeper is None:
        slots = _local_slots(key, limit)
        with waiting():
            slots.green_acquire()
        try:
            yield
        finally:
            slots.green_release()
        return
    import ray

    who = _holding(keeper, key)
    with waiting():
        while not ray.get(keeper.acquire.remote(who)):  # False: this worker's lease lapsed while it waited
            pass
    try:
        yield
    finally:
        ray.get(keeper.release.remote(who))


@contextlib.asynccontextmanager
async def endpoint_slot_async(model: str, api_base: str | None, limit: int | None) -> AsyncIterator[None]:
    """:func:`endpoint_slot` for a coroutine (the same slots and leases): waiting holds no thread and stops the
    work clock, and a caller cancelled mid-call (a judge's timed-out call) gives its slot back at once."""
    if not limit:
        yield
        return
    key = endpoint_key(model, api_base)
    keeper = _keeper(key)
    if keeper is None:
        slots = _local_slots(key, limit)
        with waiting():
            await slots.async_acquire()
        try:
            yield
        finally:
            slots.async_release()
        return
    who = _holding(keeper, key)
    with waiting():
        while True:
            granted = keeper.acquire.remote(who)
            try:
                if await granted:
                    break
            except asyncio.CancelledError:  # the keeper may grant it still: give it back once it does
                asyncio.get_running_loop().create_task(_give_back_when_granted(keeper, granted, who))
                raise
    try:
        yield
    finally:
        keeper.release.remote(who)  # sent, not awaited: a cancelled caller must not wait on the keeper


async def _give_back_when_granted(keeper: Any, granted: Any, who: str) -> None:
    with contextlib.suppress(Exception):
        if await granted:
            await keeper.release.remote(who)
