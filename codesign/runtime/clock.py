"""A clock of work, not of waiting: what a judge's per-criterion time bound counts.

A criterion's judge (or verifier) gets ``criterion_timeout_s`` to reach a verdict. With many evaluations in
flight, much of the wall time around its calls is queueing — for a thread, for an endpoint's concurrency
slot, for a provider's rate-limit back-off — which says nothing about the judge and everything about load.
So the bound is a :class:`WorkClock`: it runs while the consultation works (a model call being answered, a
browser action) and stops while it waits its turn (:meth:`WorkClock.waiting`; code that queues finds the
current clock with :func:`current`).
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Iterator

_CURRENT: contextvars.ContextVar[WorkClock | None] = contextvars.ContextVar("codesign_work_clock", default=None)


class WorkClock:
    """Seconds of work against a budget; stopped while waiting. Safe to stop and start from a worker thread."""

    def __init__(self, budget_s: float) -> None:
        self.budget_s = budget_s
        self._spent = 0.0
        self._since: float | None = time.monotonic()  # running from the start
        self._lock = threading.Lock()

    def left(self) -> float:
        with self._lock:
            running = time.monotonic() - self._since if self._since is not None else 0.0
            return self.budget_s - self._spent - running

    def stop(self) -> None:
        with self._lock:
            if self._since is not None:
                self._spent += time.monotonic() - self._since
                self._since = None

    def start(self) -> None:
        with self._lock:
            if self._since is None:
                self._since = time.monotonic()

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """Time inside does not count (queued for a slot, backing off before a retry)."""
        with self._lock:
            was_running = self._since is not None
        self.stop()
        try:
            yield
        finally:
            if was_running:
                self.start()

    @contextlib.contextmanager
    def current(self) -> Iterator[WorkClock]:
        """Make this the clock that queueing code below stops (a context variable: tasks and threads started
        inside inherit it)."""
        token = _CURRENT.set(self)
        try:
            yield self
        finally:
            _CURRENT.reset(token)


@contextlib.contextmanager
def waiting() -> Iterator[None]:
    """Stop the current work clock, if any, while inside (e.g. queued for an endpoint slot)."""
    clock = _CURRENT.get()
    if clock is None:
        yield
        return
    with clock.waiting():
        yield
