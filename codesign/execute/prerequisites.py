"""What a machine needs before it runs a paid solve: checked on every node that will run trials.

The driver's preflight checks the driver's machine; on a cluster each Ray actor checks its own node
(browser, Node.js, bubblewrap, media libraries, git, the store — reachable, the very store the driver
writes to, and on object storage honouring the conditional writes its locks use —, free disk, the model
keys the run needs) and a failing node is named and drained before any
trial starts there.
"""

from __future__ import annotations

import importlib
import os
import shutil
import socket
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MIN_FREE_GB = 2.0  # workspaces, node_modules copies and evidence of the trials in flight
TOKEN_DIR = ".codesign/node-check"


@dataclass
class NodeRequirements:
    store: str  # the store's URI
    scratch_root: str | None
    node_cache: str
    store_token_path: str | None = None  # a file the driver wrote in the store (relative to it) ...
    store_token: str | None = None  # ... with this content: a node that reads it sees the driver's store
    keys: list[str] = field(default_factory=list)  # environment variables the run's models need
    # Whether the run's trials grade (a browser is needed). A solve-only run's actors never launch Chromium:
    # launching it only to check it cost each actor ~1 CPU-s before its first trial.
    browser: bool = True


def store_token(store_uri: str) -> tuple[str, str]:
    """Write a fresh token into the store, for every node to read back: a local path that is a different disk
    on another node (no shared mount) fails there, before any trial runs."""
    from codesign.errors import EnvironmentSetupError
    from codesign.store import Store

    token = uuid.uuid4().hex
    path = f"{TOKEN_DIR}/{token}"
    try:
        Store(store_uri).write_bytes(path, token.encode())
    except OSError as e:
        fix = "point store.root (or $CODESIGN_STORE) at a writable folder or bucket"
        raise EnvironmentSetupError(f"the store {store_uri} is not writable from this machine: {e}", fix) from e
    return path, token


def needed_keys(specs: list[dict[str, Any]]) -> set[str]:
    """Every ``api_key_env`` named by the specs' model configs (solvers, judges, verifiers)."""
    from codesign.config import nested_dicts

    return {
        str(node["api_key_env"])
        for spec in specs
        for node in nested_dicts({k: spec.get(k) for k in ("model", "harness", "evaluator")})
        if node.get("api_key_env") and not node.get("uses_reference") and node.get("cache") != "read"
    }


def node_problems(req: NodeRequirements) -> list[str]:
    """Everything missing on this machine, as ``<host>: <problem> (fix)`` lines; empty when ready."""
    from codesign.errors import CodesignError
    from codesign.programs import check_node
    from codesign.sandbox.local import LocalSandbox
    from codesign.store import Store

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
    for module in ("av", "pypdfium2", "pypdf", "PIL"):  # av bundles FFmpeg's libraries (audio, video)
        try:
            importlib.import_module(module)
        except ImportError as e:
            problems.append(f"media library {module} cannot be imported ({e}): pip install -e . (make setup)")
    cache = Path(req.node_cache).expanduser().parent  # staging for object storage, unpacked tasks, installs
    problems += _writable("node cache", cache)
    try:
        store = Store(req.store, cache / "store")
        if not store.remote:
            problems += _writable("store", store.root)
        if req.store_token_path and store.read_bytes(req.store_token_path) != (req.store_token or "").encode():
            problems.append(
                f"the store {req.store} is not the driver's store here (its check file is missing): mount the "
                "same folder at the same path on every node, or use object storage (store.root=s3://…)"
            )
        if store.remote:  # stage locks there are objects taken with conditional writes: they must be honoured
            from codesign.object_lock import conditional_write_problem

            unsound = conditional_write_problem(store.fs, store.base)
            if unsound:
                problems.append(
                    f"the store {req.store}: {unsound}: use AWS S3 or an S3-compatible server that supports "
                    "conditional writes (If-None-Match, If-Match), or a folder every node mounts"
                )
    except CodesignError as e:
        problems.append(str(e))
    except Exception as e:  # an object store's client error (credentials, endpoint, bucket)
        problems.append(f"the store {req.store} is not reachable: {type(e).__name__}: {str(e)[:300]}")
    missing = [k for k in req.keys if not os.environ.get(k)]
    if missing:
        problems.append(
            f"model keys not set: {', '.join(missing)} (export them on every node, or pass them from the driver "
            f"by name: executor.env_from_driver=[{','.join(missing)}])"
        )
    scratch = Path(req.scratch_root or tempfile.gettempdir())
    free_gb = shutil.disk_usage(scratch if scratch.exists() else Path(tempfile.gettempdir())).free / 1e9
    if free_gb < MIN_FREE_GB:
        problems.append(f"only {free_gb:.1f} GB free in {scratch} (at least {MIN_FREE_GB:.0f} GB needed)")
    host = socket.gethostname()
    return [f"{host}: {p}" for p in problems]


def _writable(label: str, folder: Path) -> list[str]:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".codesign-write-check-"):
            return []
    except OSError as e:
        return [f"the {label} {folder} is not writable: {e}"]
