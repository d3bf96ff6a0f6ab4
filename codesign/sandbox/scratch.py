"""Scratch folders that name their owner, so what a killed run left behind can be told apart and removed.

Every temporary folder codesign makes is called ``codesign-<pid>.<start>-<what>-…``: the owning process
and its start time (PID reuse cannot fool it). ``sweep`` removes those whose owner is gone; a run calls it
when it starts, so a killed run's workspaces do not pile up in the temp folder.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import tempfile
from pathlib import Path

_OWNED = re.compile(r"^codesign-(\d+)\.(\d+)-")


def _start_time(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (FileNotFoundError, IndexError, ValueError):
        return None


def owner() -> str:
    """This process as ``<pid>.<start time>``."""
    return f"{os.getpid()}.{_start_time(os.getpid()) or 0}"


def owner_label() -> str:
    """This process on this machine, for labels on resources outside the file system (containers)."""
    return f"{socket.gethostname()}:{owner()}"


def alive(owner_id: str) -> bool:
    pid, _, start = owner_id.partition(".")
    return pid.isdigit() and _start_time(int(pid)) == int(start or -1)


def owned_prefix(what: str) -> str:
    return f"codesign-{owner()}-{what}-"


def make(what: str, root: str | Path | None = None) -> Path:
    """A new scratch folder owned by this process (``root``, e.g. ``paths.scratch``, is made if missing)."""
    if root is not None:
        Path(root).mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=owned_prefix(what), dir=root))


def sweep(*roots: str | Path | None) -> list[Path]:
    """Remove scratch folders (under ``roots``; None: the temp folder) whose owner is no longer running."""
    removed = []
    for root in {Path(r) if r else Path(tempfile.gettempdir()) for r in roots}:
        if not root.is_dir():
            continue
        for child in root.iterdir():
            match = _OWNED.match(child.name)
            if match and not alive(f"{match.group(1)}.{match.group(2)}") and child.is_dir():
                shutil.rmtree(child, ignore_errors=True)
                removed.append(child)
    return removed
