"""The result store: solves and evaluations under content keys, written atomically.

    <root>/trials/<trial_key>/solve.json, patch.diff, trajectory.jsonl
    <root>/trials/<trial_key>/evals/<eval_key>/evaluation.json, evidence files

A stage whose result file exists under its key is not run again, so a killed sweep restarted with the
same command finishes with nothing lost or duplicated; an evaluator sweep re-grades stored patches.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

# Bump when grading semantics change, so stored evaluations are not reused across versions.
EVALUATION_VERSION = "1"


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


class Store:
    def __init__(self, root: str | Path):
        self.root = Path(root).expanduser().resolve()

    def trial_dir(self, trial_key: str) -> Path:
        return self.root / "trials" / trial_key

    def eval_dir(self, trial_key: str, eval_key: str) -> Path:
        return self.trial_dir(trial_key) / "evals" / eval_key


# Waiters in this process queue on an asyncio lock (no thread held while waiting: a pool's threads stay free
# for the holder's own work); across processes and nodes the holder owns an flock, polled without blocking.
_LOCAL_LOCKS: dict[str, asyncio.Lock] = {}
LOCK_POLL_S = 0.25


@contextlib.asynccontextmanager
async def stage_lock(path: Path) -> AsyncIterator[None]:
    """Hold an exclusive lock on ``path`` for one stage of one key. Works across coroutines, processes and —
    on a store every node mounts — Ray actors on other machines. Waiting never times out: the holder's work
    (a solve, an evaluation) has its own caps."""
    path.parent.mkdir(parents=True, exist_ok=True)
    local = _LOCAL_LOCKS.setdefault(str(path), asyncio.Lock())
    async with local:
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
