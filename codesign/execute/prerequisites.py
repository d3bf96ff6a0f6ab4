"""What a machine needs before it runs a paid solve: checked on every node that will run trials.

The driver's preflight checks the driver's machine; on a cluster each Ray actor checks its own node
(browser, Node.js, bubblewrap, media libraries, a writable store, free disk) and a failing node is
reported by name before any trial starts.
"""

from __future__ import annotations

import importlib
import shutil
import socket
import tempfile
from pathlib import Path

MIN_FREE_GB = 2.0  # workspaces, node_modules copies and evidence of the trials in flight


def node_problems(store_root: str, scratch_root: str | None, node_cache: str) -> list[str]:
    """Everything missing on this machine, as ``<host>: <problem> (fix)`` lines; empty when ready."""
    from codesign.errors import CodesignError
    from codesign.install import check_node
    from codesign.sandbox.local import LocalSandbox

    problems: list[str] = []
    for name, check in (
        ("Node.js", check_node),
        ("bubblewrap", lambda: LocalSandbox(Path("."), Path(tempfile.gettempdir()), confine=True).check()),
    ):
        try:
            check()
        except (CodesignError, OSError) as e:
            problems.append(f"{name}: {e}")
    if not shutil.which("git"):
        problems.append("git is not installed")
    for module in ("av", "pypdfium2", "pypdf", "PIL"):
        try:
            importlib.import_module(module)
        except ImportError as e:
            problems.append(f"media library {module} cannot be imported ({e}): pip install -e . (make setup)")
    for label, folder in (("store", Path(store_root)), ("node cache", Path(node_cache).expanduser().parent)):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=folder, prefix=".codesign-write-check-"):
                pass
        except OSError as e:
            problems.append(f"the {label} {folder} is not writable: {e}")
    scratch = Path(scratch_root or tempfile.gettempdir())
    free_gb = shutil.disk_usage(scratch if scratch.exists() else Path(tempfile.gettempdir())).free / 1e9
    if free_gb < MIN_FREE_GB:
        problems.append(f"only {free_gb:.1f} GB free in {scratch} (at least {MIN_FREE_GB:.0f} GB needed)")
    host = socket.gethostname()
    return [f"{host}: {p}" for p in problems]
