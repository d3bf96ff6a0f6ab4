"""An exclusive lease on an object in S3-compatible storage, kept by the store's own conditional writes.

The lock is an object holding its holder's name. It is taken with a create-if-absent write
(``If-None-Match: *``), renewed by its holder with a compare-and-swap (``If-Match`` on the ETag it wrote
last) every ``renew_s``, and released with a delete conditional on that ETag. A waiter that sees the
object's ETag unchanged for a whole lease — timed on its own clock, so no clocks are compared across
machines — takes it over with a compare-and-swap on that ETag: of several waiters one wins, and a holder
that was only slow learns at its next renewal that the lock is gone. Within a Ray run, a lock left by a
worker the pool declared dead is taken over at once (the run's lock service says so).

Measured with s3fs 2026.9 against a moto 5.2.5 server on loopback (2026-12-01): a second create of a key
fails with ``FileExistsError``; a write or a delete with a stale ETag fails with a precondition error; of
8 writers creating one key at the same moment exactly one succeeded, in 100 rounds out of 100 (the
exclusion it gives is tested in ``tests/test_leases.py``). AWS S3
documents both conditions as atomic. A server that ignores them is caught by :func:`conditional_write_problem`
before any trial runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from codesign import leases

log = logging.getLogger(__name__)

CHECK_DIR = ".codesign/lock-check"


def supports_conditional_writes(fs: Any) -> bool:
    """Whether ``fs`` (an fsspec filesystem) sends S3's conditional writes (s3fs does)."""
    protocols = fs.protocol if isinstance(fs.protocol, tuple | list) else (fs.protocol,)
    return bool({"s3", "s3a"} & set(protocols))


def _precondition_failed(e: BaseException) -> bool:
    """The store refused a conditional write (someone else's object is there), as s3fs reports it."""
    if isinstance(e, FileExistsError):
        return True
    cause = getattr(e, "__cause__", None)
    code = str(((getattr(cause, "response", None) or {}).get("Error") or {}).get("Code", ""))
    # 409 ConditionalRequestConflict: another conditional write to the key is in progress; it won
    return code in ("PreconditionFailed", "412", "ConditionalRequestConflict", "409") or (
        isinstance(e, OSError) and e.errno == errno.EINVAL and "pre-condition" in str(e)
    )


@dataclass
class Sighting:
    """A lock object as a waiter saw it: its version, who wrote it, and since when (the waiter's clock)."""

    etag: str
    holder: str
    nonce: str
    beat: int
    since: float


class ObjectLock:
    """One lock object at ``path`` (bucket/key) taken by ``holder``. Network calls block: run them in a thread."""

    def __init__(self, fs: Any, path: str, holder: str) -> None:
        self.fs, self.path, self.holder = fs, path, holder
        self.nonce = uuid.uuid4().hex  # this acquisition (a retried write can find its own object)
        self.beat = 0
        self.etag: str | None = None
        self.lost = False
        self._guard = threading.Lock()  # a renewal and the release never cross

    def _body(self, beat: int) -> bytes:
        return json.dumps(
            {"holder": self.holder, "nonce": self.nonce, "beat": beat, "host": socket.gethostname(), "pid": os.getpid()}
        ).encode()

    def _mine(self, beat: int) -> str | None:
        """The object's ETag if it is this acquisition's write of ``beat`` (a write retried after it landed)."""
        seen = self.look()
        return seen.etag if seen is not None and (seen.nonce, seen.beat) == (self.nonce, beat) else None

    def _put(self, beat: int, **condition: Any) -> bool:
        try:
            out = self.fs.pipe_file(self.path, self._body(beat), **condition)
        except OSError as e:  # FileNotFoundError: a compare-and-swap on an object deleted meanwhile
            if not (_precondition_failed(e) or isinstance(e, FileNotFoundError)):
                raise
            etag = self._mine(beat)
            if etag is None:
                return False
        else:
            etag = (out or {}).get("ETag") if isinstance(out, dict) else None
            etag = etag or self.fs.info(self.path, refresh=True)["ETag"]
        self.etag, self.beat = etag, beat
        return True

    def create(self) -> bool:
        """Take the lock if no one holds it."""
        return self._put(0, mode="create")

    def take_over(self, etag: str) -> bool:
        """Take the lock from a holder that stopped renewing (its object still at ``etag``)."""
        return self._put(0, IfMatch=etag)

    def version(self) -> str | None:
        """The object's ETag now (None: there is no lock); one HEAD request."""
        try:
            return self.fs.info(self.path, refresh=True)["ETag"]
        except FileNotFoundError:
            return None

    def look(self) -> Sighting | None:
        """The object as it is now (None: there is no lock)."""
        try:
            etag = self.fs.info(self.path, refresh=True)["ETag"]
            body = json.loads(self.fs.cat_file(self.path))
        except FileNotFoundError:
            return None
        except ValueError:  # not JSON: whoever wrote it holds it, as far as anyone can tell
            body = {}
        body = body if isinstance(body, dict) else {}
        beat = body.get("beat")
        return Sighting(
            etag,
            str(body.get("holder", "")),
            str(body.get("nonce", "")),
            beat if isinstance(beat, int) else -1,
            time.monotonic(),
        )

    def renew(self) -> bool:
        """Rewrite the object (a new ETag, seen by waiters as a heartbeat); False once the lock was lost."""
        with self._guard:
            if self.lost or self.etag is None:
                return False
            if not self._put(self.beat + 1, IfMatch=self.etag):
                self.lost = True
                log.warning("the lock %s was taken over: this process was silent for a whole lease", self.path)
            return not self.lost

    def release(self) -> None:
        with self._guard:
            if self.lost or self.etag is None:
                return
            self.lost = True
            bucket, key, _ = self.fs.split_path(self.path)
            try:
                self.fs.call_s3("delete_object", Bucket=bucket, Key=key, IfMatch=self.etag)
            except FileNotFoundError:
                pass
            except OSError as e:
                if _precondition_failed(e):
                    return  # taken over meanwhile: not ours to delete
                seen = self.look()  # a store without conditional deletes: check, then delete
                if seen is not None and seen.etag == self.etag:
                    self.fs.rm_file(self.path)
            finally:
                self.fs.invalidate_cache(self.path)


@contextlib.asynccontextmanager
async def hold(
    fs: Any, path: str, released: Callable[[str], Awaitable[bool]] | None = None, what: str = "a stage"
) -> AsyncIterator[None]:
    """Hold the lock object at ``path`` for the duration of the block, renewed in the background.
    ``released(holder)`` (the run's lock service) says whether a holder is known dead."""
    lock = ObjectLock(fs, path, leases.holder())
    while not await asyncio.to_thread(lock.create):
        stale = await _until_free_or_stale(lock, released, what)
        if stale is not None and await asyncio.to_thread(lock.take_over, stale.etag):
            log.warning("took over %s from %s, %s", path, stale.holder[:12] or "?", stale.why)
            break
    name = f"lock {path} as {lock.holder}/{lock.nonce}"
    leases.renewals().add(name, lock.renew)
    try:
        yield
    finally:
        leases.renewals().discard(name)
        await asyncio.to_thread(lock.release)


@dataclass
class _Stale:
    etag: str
    holder: str
    why: str


async def _until_free_or_stale(
    lock: ObjectLock, released: Callable[[str], Awaitable[bool]] | None, what: str
) -> _Stale | None:
    """Wait while a live holder renews the lock (one HEAD request a poll, the body once per new version).
    None: the lock is gone, try to take it; else the version to take over, and why."""
    poll = min(1.0, leases.lease_seconds() / 4)
    seen: Sighting | None = None
    told: set[str] = set()
    while True:
        etag = await asyncio.to_thread(lock.version)
        if etag is None:
            return None
        if seen is None or seen.etag != etag:  # a renewal (or a new holder): its silence starts again
            seen = await asyncio.to_thread(lock.look)
            if seen is None:
                return None
        if released is not None and seen.holder and await released(seen.holder):
            return _Stale(seen.etag, seen.holder, "declared dead by the pool")
        if time.monotonic() - seen.since >= leases.lease_seconds():
            return _Stale(seen.etag, seen.holder, f"silent for {leases.lease_seconds():.0f} s")
        if seen.holder not in told:  # a command waiting on another process says so, once per holder
            told.add(seen.holder)
            print(
                f"waiting for {what}: another process holds its lock ({lock.path}, holder {seen.holder[:12]})",
                file=sys.stderr,
                flush=True,
            )
        await asyncio.sleep(poll)


_checked: dict[str, str | None] = {}


def conditional_write_problem(fs: Any, base: str) -> str | None:
    """Whether the store at ``base`` honours conditional writes (a lock there would be sound); the problem
    when it does not. Measured once per process and store: a key is created twice, then overwritten with a
    wrong ETag; both must be refused."""
    if not supports_conditional_writes(fs) or base in _checked:
        return _checked.get(base)
    path = f"{base.rstrip('/')}/{CHECK_DIR}/{uuid.uuid4().hex}"
    problem = None
    try:
        fs.pipe_file(path, b"1", mode="create")
        for attempt in ({"mode": "create"}, {"IfMatch": '"0123456789abcdef0123456789abcdef"'}):
            try:
                fs.pipe_file(path, b"2", **attempt)
            except OSError as e:
                if not _precondition_failed(e):
                    raise
            else:
                header = "If-None-Match" if "mode" in attempt else "If-Match"
                problem = (
                    f"the object store ignores conditional writes ({header} was accepted where it must be "
                    "refused), so two processes could run the same stage at once"
                )
                break
    finally:
        with contextlib.suppress(OSError):
            fs.rm_file(path)
    _checked[base] = problem
    return problem
