"""Task folders travel to workers by content, never by the driver's path: packed once on the driver
(into Ray's object store), unpacked once per node under their content hash."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

from codesign.tasks.loader import GENERATED_DIRS


def pack(task_dir: Path) -> bytes:
    """The task folder as a gzipped tar, without what a build or install generates (``GENERATED_DIRS``)."""
    buf = io.BytesIO()

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        parts = Path(info.name).parts[1:]
        return None if any(p in GENERATED_DIRS for p in parts) else info

    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=6) as tar:
        tar.add(task_dir, arcname=task_dir.name, filter=keep)
    return buf.getvalue()


def unpack(archive: bytes, cache_root: Path) -> Path:
    """This node's copy of a packed task: ``<cache_root>/<content hash>/<task id>``, extracted once (an
    interrupted extraction never leaves a partial folder: it is renamed into place when complete)."""
    digest = hashlib.sha256(archive).hexdigest()[:16]
    home = cache_root / digest
    if home.is_dir():
        return next(home.iterdir())
    cache_root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=cache_root, prefix=f".{digest}."))
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extractall(tmp, filter="data")  # "data": no absolute paths, links out or devices
            else:  # Python before 3.11.4 (Debian 12's 3.11.2) has no filters: the same refusals, by hand
                _refuse_unsafe(tar)
                tar.extractall(tmp)
        with contextlib.suppress(OSError):  # another process on this node extracted it first
            os.replace(tmp, home)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return next(home.iterdir())


def _refuse_unsafe(tar: tarfile.TarFile) -> None:
    for member in tar.getmembers():
        name = Path(member.name)
        target = Path(member.linkname) if member.issym() or member.islnk() else None
        escapes = name.is_absolute() or ".." in name.parts
        escapes |= target is not None and (target.is_absolute() or ".." in (name.parent / target).parts)
        if escapes or member.isdev():
            raise ValueError(f"unsafe entry in a task archive: {member.name}")
