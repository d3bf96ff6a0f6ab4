"""The candidate's app: the code the model wrote, installed and built in a sandbox of the trial's kind, always
confined and offline, its dependencies from the shared per-lockfile cache (hard links, read-only)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from codesign._protocols import Sandbox
from codesign.construct import build_sandbox
from codesign.sandbox.dependencies import NODE_INSTALL, cached_node_modules, hydrate_node_modules

NODE_BUILD = "npm run build --silent"
FROZEN = ("node_modules",)  # hard links into the shared cache: a candidate's build sees them read-only ...
BUILD_CACHES = ("node_modules/.vite-temp", "node_modules/.vite", "node_modules/.cache")  # ... but for tool caches


class AppBuild(Protocol):
    """How a task's app is installed and built (``codesign.tasks.schema.Environment``), as read here."""

    @property
    def kind(self) -> str: ...
    @property
    def install(self) -> str | None: ...
    @property
    def build(self) -> str | Literal[False] | None: ...  # False: nothing to build
    @property
    def build_timeout_s(self) -> float: ...


@dataclass
class BuildResult:
    ok: bool
    log: str
    wall_s: float


def build_app(workspace: Path, env: AppBuild, node_cache: Path, sandbox: Sandbox) -> BuildResult:
    """Install (cached per lockfile, confined) and build in ``sandbox`` — a candidate sandbox over
    ``workspace``. A failing build is the candidate's fault, not an error."""
    start = time.monotonic()
    if env.kind == "static" and not env.build:
        return BuildResult(True, "static app: nothing to build", 0.0)
    log = []
    if env.kind == "node":
        modules = cached_node_modules(workspace, node_cache, env.install or NODE_INSTALL)
        hydrate_node_modules(workspace, modules, hardlink=True)
        log.append(f"dependencies from cache {modules.parent.name}")
    command = NODE_BUILD if env.build is None and env.kind == "node" else env.build or None
    if command:
        result = sandbox.execute(command, timeout=env.build_timeout_s)
        log.append(f"$ {command}\n{result.output}")
        if result.timed_out or result.returncode != 0:
            status = "timed out" if result.timed_out else f"exit code {result.returncode}"
            return BuildResult(False, "\n".join([*log, f"build failed: {status}"]), time.monotonic() - start)
        sandbox.sync()
    return BuildResult(True, "\n".join(log), time.monotonic() - start)


def build_candidate_sandbox(cfg: dict[str, Any], workspace: Path, home: Path) -> Sandbox:
    """Where code the model wrote is installed, built and served: the trial's sandbox kind, always confined
    and offline, with the shared dependencies read-only."""
    return build_sandbox(cfg, workspace, home).for_candidate(workspace, home, FROZEN, BUILD_CACHES)
