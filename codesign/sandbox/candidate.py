"""The candidate's app: the code the model wrote, installed and built in a sandbox of the trial's kind, always
confined and offline, its dependencies from the shared per-lockfile cache (hard links, read-only)."""

from __future__ import annotations

import signal
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
# A build killed by one of these was killed by the machine as often as by its code: a bundler that died of SIGBUS
# after "✓ 30 modules transformed" once in 24 identical trials beside three busy workers (2026-12-05), and built
# the next time. It is built again; only a death that repeats on every attempt is the candidate's.
CRASH_SIGNALS = frozenset({signal.SIGBUS, signal.SIGSEGV, signal.SIGILL, signal.SIGKILL, signal.SIGABRT})
BUILD_ATTEMPTS = 3


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
        for attempt in range(1, BUILD_ATTEMPTS + 1):
            result = sandbox.execute(command, timeout=env.build_timeout_s)
            log.append(f"$ {command}\n{result.output}")
            crash = None if result.returncode is None else crash_signal(result.returncode)
            if crash is None or attempt == BUILD_ATTEMPTS:
                break
            log.append(f"(killed by {crash.name}: built again, attempt {attempt + 1} of {BUILD_ATTEMPTS})")
        if result.timed_out or result.returncode != 0:
            status = "timed out" if result.timed_out else f"exit code {result.returncode}"
            if crash is not None:
                status += f", killed by {crash.name} on each of {BUILD_ATTEMPTS} attempts"
            return BuildResult(False, "\n".join([*log, f"build failed: {status}"]), time.monotonic() - start)
        sandbox.sync()
    return BuildResult(True, "\n".join(log), time.monotonic() - start)


def crash_signal(returncode: int) -> signal.Signals | None:
    """The crash signal a command died of: a negative code from the process itself, 128 + N from the shell
    that ran it (``bash -c`` reports a child killed by signal N so)."""
    number = -returncode if returncode < 0 else returncode - 128 if returncode > 128 else 0
    try:
        found = signal.Signals(number)
    except ValueError:
        return None
    return found if found in CRASH_SIGNALS else None


def build_candidate_sandbox(cfg: dict[str, Any], workspace: Path, home: Path) -> Sandbox:
    """Where code the model wrote is installed, built and served: the trial's sandbox kind, always confined
    and offline, with the shared dependencies read-only."""
    return build_sandbox(cfg, workspace, home).for_candidate(workspace, home, FROZEN, BUILD_CACHES)
