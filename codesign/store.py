"""The result store: solves and evaluations under content keys, written atomically.

    <store>/trials/<trial_key>/solve.json, patch.diff, trajectory.jsonl
    <store>/trials/<trial_key>/evals/<eval_key>/evaluation.json, evidence files
    <store>/tasks/<task content hash>/gate.json

A stage whose result file exists under its key is not run again, so a killed sweep restarted with the
same command finishes with nothing lost or duplicated; an evaluator sweep re-grades stored patches.

The store is addressed by URI, like Ray Train's ``storage_path``: a local folder (the default; on a
cluster, one every node mounts), or object storage (``s3://bucket/prefix``, ``gs://…``, any fsspec
filesystem) that needs no shared disk. With object storage each node works in a staging folder of its
own and exchanges one stage's files at a time: it pulls the marker file of a stage before deciding to
run it, and pushes the stage's files after (the marker last, so a stage is never seen half-written).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any, Protocol

# Bump when what a stored evaluation means changes without a change of the grading code (whose source is
# part of every evaluation key already: codesign.evaluate.fingerprint). 2: ungraded criteria, grading errors.
EVALUATION_VERSION = "2"


def content_key(*parts: Any) -> str:
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def write_atomic(path: Path, content: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "wb") as f:
        f.write(content.encode() if isinstance(content, str) else content)
    # rename is atomic: a killed run leaves the old file or the new one, never half of one. (No fsync:
    # surviving power loss is not worth a disk flush per trial.)
    os.replace(tmp, path)


def write_json(path: Path, obj: Any) -> None:
    """JSON with secrets redacted (what the store keeps may be shared; see codesign.redact)."""
    from codesign.redact import redact_data

    write_atomic(path, json.dumps(redact_data(obj), indent=1, default=str))


def read_json(path: Path) -> Any | None:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def is_remote(uri: str) -> bool:
    """True for a URI with a scheme other than ``file://`` (``s3://…``); a plain path is local."""
    scheme, sep, _ = str(uri).partition("://")
    return bool(sep) and scheme not in ("file", "local")


def local_path(uri: str | Path) -> Path:
    return Path(str(uri).removeprefix("file://")).expanduser().resolve()


def store_uri(root: str | Path) -> str:
    """The store as every node must see it: object storage as given, a folder as an absolute path."""
    return str(root) if is_remote(str(root)) else str(local_path(root))


DEFAULT_STAGING = "~/.cache/codesign/store"


class Store:
    """The store at ``uri``. ``root`` is where this process reads and writes files: the store itself when
    it is a local folder, else this node's staging folder for it (under ``staging``)."""

    def __init__(self, uri: str | Path, staging: str | Path | None = None):
        self.uri = str(uri)
        self.fs: Any = None
        if is_remote(self.uri):
            self.fs, self.base = open_filesystem(self.uri)
            self.root = Path(staging or DEFAULT_STAGING).expanduser().resolve() / content_key(self.uri)
        else:
            self.base = ""
            self.root = local_path(self.uri)

    @property
    def remote(self) -> bool:
        return self.fs is not None

    def trial_dir(self, trial_key: str) -> Path:
        return self.root / "trials" / trial_key

    def eval_dir(self, trial_key: str, eval_key: str) -> Path:
        return self.trial_dir(trial_key) / "evals" / eval_key

    def _remote(self, local: Path) -> str:
        return self._at(local.relative_to(self.root).as_posix())

    def _at(self, relative: str) -> str:
        """A path in the object store, for a path relative to the store."""
        return f"{self.base.rstrip('/')}/{relative}"

    def pull(self, folder: Path, names: Iterable[str]) -> None:
        """Make this node's copies of ``folder/<name>`` match the store: fetched when stored, removed when
        not (a copy the store lacks is from a stage that never finished). A no-op for a local store."""
        if not self.remote:
            return
        folder.mkdir(parents=True, exist_ok=True)
        for name in names:
            target = folder / name
            try:
                data = self.fs.cat_file(self._remote(target))
            except FileNotFoundError:
                target.unlink(missing_ok=True)
                continue
            write_atomic(target, data)

    def push(self, folder: Path, last: str | None = None, skip: tuple[str, ...] = ()) -> None:
        """Upload every file under ``folder`` (but sub-folders named in ``skip`` and lock files), ``last`` after
        all the others: its presence in the store marks the stage finished. A no-op for a local store."""
        if not self.remote or not folder.is_dir():
            return
        files = [
            p
            for p in sorted(folder.rglob("*"))
            if p.is_file()
            and not p.name.endswith(".lock")
            and not p.name.startswith(".")
            and not any(part in skip for part in p.relative_to(folder).parts[:-1])
        ]
        files.sort(key=lambda p: p.name == last)  # stable: the marker goes last
        for p in files:
            self.fs.pipe_file(self._remote(p), p.read_bytes())

    def read_bytes(self, relative: str) -> bytes | None:
        """A stored file's content, read straight from the store (nothing is written locally)."""
        try:
            if self.remote:
                return self.fs.cat_file(self._at(relative))
            return (self.root / relative).read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            return None

    def write_bytes(self, relative: str, data: bytes) -> None:
        if self.remote:
            self.fs.pipe_file(self._at(relative), data)
        else:
            write_atomic(self.root / relative, data)

    def glob(self, pattern: str) -> list[str]:
        """Stored files matching ``pattern`` (relative to the store, e.g. ``trials/*/solve.json``), sorted."""
        if self.remote:
            base = "/" + self.base.strip("/")  # filesystems differ on a leading slash: compare without
            found = ("/" + p.lstrip("/") for p in self.fs.glob(self._at(pattern)))
            return sorted(p[len(base) :].lstrip("/") for p in found if p.startswith(base + "/"))
        return sorted(p.relative_to(self.root).as_posix() for p in self.root.glob(pattern) if p.is_file())

    def delete(self, relative: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            if self.remote:
                self.fs.rm_file(self._at(relative))
            else:
                (self.root / relative).unlink()


def open_filesystem(uri: str) -> tuple[Any, str]:
    """The fsspec filesystem and path for ``uri``, with a fix when its implementation is not installed."""
    from codesign.errors import ConfigError

    try:
        import fsspec

        return fsspec.core.url_to_fs(uri)
    except ImportError as e:
        raise ConfigError(
            f"the store {uri} needs a filesystem package that is not installed: {e}",
            "install it on every node, e.g. pip install 'codesign[s3]' for s3:// (s3fs) or gcsfs for gs://",
        ) from e
    except ValueError as e:
        raise ConfigError(
            f"the store URI {uri} is not understood: {e}", "use a folder path or s3://bucket/prefix"
        ) from e


class LockService(Protocol):
    """Exclusive locks by name across every process of one run (on Ray: the ``StageLocks`` actor, see
    ``codesign.execute.ray_actors``), held under leases; with object storage, which has no file locks."""

    async def acquire(self, name: str) -> None: ...

    async def release(self, name: str) -> None: ...

    async def released(self, holder: str) -> bool:
        """Whether ``holder`` (a worker of this run) was declared dead."""
        ...


_LOCK_SERVICE: LockService | None = None


def use_lock_service(service: LockService | None) -> None:
    """Set this process's cross-node lock service (the Ray executor's workers do, at start)."""
    global _LOCK_SERVICE
    _LOCK_SERVICE = service


# Waiters in this process queue on an asyncio lock (no thread held while waiting: a pool's threads stay free
# for the holder's own work); across processes and nodes the holder owns an flock, polled without blocking.
_LOCAL_LOCKS: dict[str, asyncio.Lock] = {}
LOCK_POLL_S = 0.25


@contextlib.asynccontextmanager
async def stage_lock(path: Path, store: Store | None = None) -> AsyncIterator[None]:
    """Hold an exclusive lock on ``path`` for one stage of one key. What it excludes:

    - other coroutines of this process, always;
    - on a local store (a folder; on a cluster, one every node mounts): every process on every machine
      that uses the folder, by ``flock`` (the kernel, or the NFS server, frees it when its holder dies);
    - on S3-compatible object storage: every process of every command on the store, by a lock object
      taken with the store's conditional writes and renewed while held (``codesign.object_lock``); within a
      Ray run the run's lock service (``use_lock_service``) queues its workers first;
    - on other object storage (``gs://``, …): the processes of one Ray run, by its lock service; nothing
      beyond this process without one (``executor=inline``), nor across two commands on one store.

    Every lock is a lease: a holder that dies, however it dies, loses it, at once when the pool reports the
    death, else once its renewals stop for ``codesign.leases.lease_seconds()``. Waiting on a live holder
    never times out: the holder's work (a solve, an evaluation) has its own caps."""
    path.parent.mkdir(parents=True, exist_ok=True)
    local = _LOCAL_LOCKS.setdefault(str(path), asyncio.Lock())
    async with local:
        if store is not None and store.remote:
            from codesign.object_lock import hold, supports_conditional_writes

            service = _LOCK_SERVICE
            name = store._remote(path)
            if service is not None:
                await service.acquire(name)
            try:
                if supports_conditional_writes(store.fs):
                    async with hold(store.fs, name, service.released if service else None, _stage_of(path)):
                        yield
                else:
                    yield
            finally:
                if service is not None:
                    await service.release(name)
            return
        with open(path, "a") as handle:
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    await asyncio.sleep(LOCK_POLL_S)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def _stage_of(lock_path: Path) -> str:
    """``trials/<key>/.solve.lock`` -> ``the solve of trials/<key>`` (for a waiting message)."""
    stage = lock_path.name.strip(".").removesuffix(".lock")
    stage = {"evaluate": "evaluation"}.get(stage, stage)
    return f"the {stage} of {lock_path.parent.parent.name}/{lock_path.parent.name}"
