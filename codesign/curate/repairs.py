"""Scripted repairs of a recovered app before the gate, each recorded on the draft (docs/curation.md):
a missing lockfile resolved by npm, confined — the network (to reach the registry) and codesign's npm cache,
nothing else, no install scripts run."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from codesign.curate.recover import Unrecoverable
from codesign.sandbox.dependencies import failure_excerpt
from codesign.sandbox.local import LocalSandbox

RESOLVE = "npm install --package-lock-only --ignore-scripts --no-audit --no-fund --prefer-offline --loglevel=error"


def resolve_lockfile(app: Path, npm_cache: Path, timeout_s: float = 600) -> str:
    """Write ``package-lock.json`` for a node app that has none; the repair's description."""
    npm_cache.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="codesign-lockfile-home-"))
    try:
        box = LocalSandbox(app, home, confine=True, network=True, writable=[str(npm_cache)],
                           env={"npm_config_cache": str(npm_cache)})  # fmt: skip
        box.check()
        result = box.execute(RESOLVE, timeout=timeout_s)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    lock = app / "package-lock.json"
    if result.returncode != 0 or not lock.is_file():
        status = "timed out" if result.timed_out else f"exit code {result.returncode}"
        raise Unrecoverable(
            f"no lockfile: npm could not resolve one ({status}): {failure_excerpt(result.output)[-500:]}"
        )
    shutil.rmtree(app / "node_modules", ignore_errors=True)  # --package-lock-only installs nothing; be sure
    return "resolved a missing package-lock.json (npm install --package-lock-only, confined, no scripts)"
