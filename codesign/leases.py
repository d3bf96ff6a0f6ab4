"""Leases: an endpoint slot or a stage lock is held only while its holder is heard from.

A holder (a trial worker, or any process that takes slots or locks) renews its leases every ``renew_s``
from a background thread (:class:`Renewals`). A keeper (the endpoint slot keeper, the stage-lock actor, a
lock object in the store) frees what a holder holds once it has not heard from it for ``lease_s``, and at
once when the pool reports the holder dead (``release_holder``). So a worker that dies in any way — its
actor killed, its process SIGKILLed, its node lost — gives back what it held, even when the driver never
learns of the death; and a call that reaches a keeper after its holder was freed gives back what it got.

Lease length. Renewals every 5 s, a lease of 60 s: a holder must stay silent for 12 renewal intervals to
lose its lease. Measured here (2 cores at a load average of ~45 — tests/test_grid.py's four-judge grid, Chromium
grading on both actors, beside other test suites; 2026-12-01): the longest silence between two signs of
life of a live worker, as its keepers saw it (``longest_silence`` in their stats), was 5.96 s — the
interval plus ~1 s of scheduling. 60 s is ten times that, and still short next to a solve: a dead worker
the driver did not see die costs at most a minute of one slot or lock.
``$CODESIGN_LEASE_S`` changes it (tests use a short one); a Ray run hands the driver's value to its actors.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

LEASE_ENV = "CODESIGN_LEASE_S"
DEFAULT_LEASE_S = 60.0
RENEWALS_PER_LEASE = 12

_lease_s: float | None = None
_holder = uuid.uuid4().hex  # this process's name with the keepers (a trial worker takes the pool's name for it)


def lease_seconds() -> float:
    """How long a keeper waits on a silent holder before freeing what it holds."""
    if _lease_s is not None:
        return _lease_s
    raw = os.environ.get(LEASE_ENV)
    if not raw:
        return DEFAULT_LEASE_S
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if value <= 0:
        from codesign.errors import ConfigError

        raise ConfigError(f"${LEASE_ENV}={raw!r} is not a positive number of seconds", f"unset it, or {LEASE_ENV}=60")
    return value


def set_lease_seconds(seconds: float | None) -> None:
    """Use ``seconds`` in this process (a Ray worker adopts the driver's); None: back to the environment's."""
    global _lease_s
    _lease_s = seconds
    _renewals.wake()  # renew at the new pace from now on


def renew_seconds() -> float:
    return lease_seconds() / RENEWALS_PER_LEASE


def holder() -> str:
    return _holder


def set_holder(name: str) -> None:
    """Hold under ``name`` (a trial worker: the name the pool frees it by when it dies)."""
    global _holder
    _holder = name


class Standing(enum.StrEnum):
    """A holder's standing with a keeper, answered to each renewal."""

    HELD = "held"
    LAPSED = "lapsed"  # it was silent for a whole lease: what it held was freed (it holds anew from now)
    RELEASED = "released"  # the pool declared it dead: it never holds anything again


class LeaseLost(RuntimeError):
    """A call from a holder the pool has declared dead (it was killed, or is about to be)."""


class LeaseBook:
    """The keeper's side: which holders are alive. A holder is alive for ``lease_s`` after each sign of life
    (a renewal, or a call that just arrived); freed by :meth:`expire` or :meth:`release`, its epoch moves
    on, so a call that was waiting under an older epoch can tell that what it got must go back."""

    def __init__(self, lease_s: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.lease_s = lease_s if lease_s is not None else lease_seconds()
        self.clock = clock
        self._deadline: dict[str, float] = {}
        self._heard: dict[str, float] = {}
        self._epoch: dict[str, int] = {}
        self.released: set[str] = set()
        self.longest_silence = 0.0  # seconds between two signs of life of one holder (what the lease must exceed)
        self._reaper: asyncio.Task[None] | None = None

    def heard(self, holder: str) -> Standing:
        if holder in self.released:
            return Standing.RELEASED
        now = self.clock()
        lapsed = holder in self._epoch and holder not in self._deadline
        if holder in self._heard:
            self.longest_silence = max(self.longest_silence, now - self._heard[holder])
        self._heard[holder] = now
        self._deadline[holder] = now + self.lease_s
        self._epoch.setdefault(holder, 0)
        return Standing.LAPSED if lapsed else Standing.HELD

    def epoch(self, holder: str) -> int:
        return self._epoch.get(holder, 0)

    def holds(self, holder: str, epoch: int) -> bool:
        """Whether ``holder`` is still alive in the epoch a waiting call began in."""
        return holder in self._deadline and self._epoch.get(holder) == epoch

    def expire(self) -> list[str]:
        """The holders silent for a whole lease, now freed."""
        now = self.clock()
        silent = [h for h, deadline in self._deadline.items() if deadline <= now]
        for h in silent:
            del self._deadline[h]
            self._epoch[h] += 1
        if silent:
            log.warning("leases lapsed (no renewal for %.0f s): %s", self.lease_s, ", ".join(h[:12] for h in silent))
        return silent

    def lapsed(self) -> list[str]:
        """Holders whose lease lapsed and who have not been heard from since."""
        return sorted(h for h in self._epoch if h not in self._deadline and h not in self.released)

    def release(self, holder: str) -> None:
        self.released.add(holder)
        self._deadline.pop(holder, None)
        self._epoch[holder] = self._epoch.get(holder, 0) + 1

    def reap_interval(self) -> float:
        return min(1.0, self.lease_s / 4)

    def keep_reaping(self, free: Callable[[str], object]) -> None:
        """Free what silent holders hold (``free(holder)``), every reap interval, on the running event loop (a
        keeper's: its methods call this, so the reaper starts with the first call and restarts if it ended)."""
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.get_running_loop().create_task(self._reap(free))

    async def _reap(self, free: Callable[[str], object]) -> None:
        while True:
            await asyncio.sleep(self.reap_interval())
            for holder in self.expire():
                free(holder)


class Renewals:
    """The holder's side: a daemon thread renewing this process's leases every ``renew_s``. Each entry is a
    callable that renews one lease (or all of this holder's with one keeper) and returns False once the
    lease is gone for good; it is then dropped. A failure to reach a keeper is retried next round."""

    def __init__(self) -> None:
        self._entries: dict[str, Callable[[], bool]] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, name: str, renew: Callable[[], bool]) -> None:
        with self._lock:
            self._entries[name] = renew  # a new lease is fresh: the next round (within renew_s) renews it
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="codesign-lease-renewals", daemon=True)
                self._thread.start()

    def wake(self) -> None:
        """The lease length changed: the next round is due one new interval after the last."""
        self._wake.set()

    def discard(self, name: str) -> None:
        with self._lock:
            self._entries.pop(name, None)

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._entries)

    def _run(self) -> None:
        last = time.monotonic()
        while True:
            if self._wake.wait(max(0.0, last + renew_seconds() - time.monotonic())):
                self._wake.clear()
                continue
            last = time.monotonic()
            with self._lock:
                entries = list(self._entries.items())
            for name, renew in entries:
                try:
                    held = renew()
                except Exception as e:  # a keeper out of reach or busy: the lease outlasts many rounds
                    log.debug("renewing %s failed: %s: %s", name, type(e).__name__, e)
                    continue
                if not held:
                    with self._lock:
                        if self._entries.get(name) is renew:
                            del self._entries[name]


_renewals = Renewals()


def renewals() -> Renewals:
    """This process's renewals (one thread for all its leases)."""
    return _renewals


def renew_with_actor(actor: Any, who: str, what: str) -> Callable[[], bool]:
    """A renewal of every lease ``who`` holds with the keeper ``actor`` (a Ray actor with ``renew(holder)``)."""

    def renew() -> bool:
        import ray

        try:
            standing = Standing(ray.get(actor.renew.remote(who), timeout=max(1.0, renew_seconds())))
        except ray.exceptions.RayActorError:  # the keeper is gone (its run ended): nothing left to renew
            return False
        if standing is Standing.LAPSED:
            log.warning(
                "%s: this worker's lease lapsed (not heard from for %.0f s); what it held was freed",
                what,
                lease_seconds(),
            )
        return standing is not Standing.RELEASED

    return renew
