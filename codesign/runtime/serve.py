"""Build a final workspace and serve it on loopback: the task's own commands run in the trial's sandbox
kind (confined, offline), a static build is served by an in-process server that never leaves its folder."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

from codesign._protocols import Sandbox
from codesign.errors import EnvironmentSetupError
from codesign.runtime.http import LoopbackMixin, LoopbackServer
from codesign.sandbox.dependencies import NODE_INSTALL, cached_node_modules, hydrate_node_modules
from codesign.tasks.schema import Environment

NODE_BUILD = "npm run build --silent"
FROZEN = ("node_modules",)  # hard links into the shared cache: a candidate's build sees them read-only ...
BUILD_CACHES = ("node_modules/.vite-temp", "node_modules/.vite", "node_modules/.cache")  # ... but for tool caches


@dataclass
class BuildResult:
    ok: bool
    log: str
    wall_s: float


def build_app(workspace: Path, env: Environment, node_cache: Path, sandbox: Sandbox) -> BuildResult:
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


class _Handler(LoopbackMixin, SimpleHTTPRequestHandler):
    spa_fallback = False

    def translate_path(self, path: str) -> str:
        """Files inside the served folder only: a symlink the candidate planted to a host file is a 404."""
        translated = super().translate_path(path)
        root = Path(self.directory).resolve()
        resolved = Path(translated).resolve()
        if resolved != root and root not in resolved.parents:
            return str(root / ".codesign-outside-the-served-folder")  # never exists: a 404
        return str(resolved) + ("/" if translated.endswith("/") else "")

    def send_head(self):  # type: ignore[override]
        path = Path(self.translate_path(self.path))
        if self.path == "/favicon.ico" and not path.exists():
            # Browsers ask for it unprompted; its 404 would read as an app error in the console.
            self.send_response(204)
            self.end_headers()
            return None
        if self.spa_fallback and not path.exists() and "." not in Path(self.path.split("?")[0]).name:
            self.path = "/index.html"  # client-side routes resolve to the app shell
        return super().send_head()

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        self.send_header("Accept-Ranges", "bytes")
        super().end_headers()

    def do_GET(self) -> None:
        """Byte ranges make media seekable in the browser (``audio.currentTime = …`` needs them)."""
        match = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", "").strip())
        path = Path(self.translate_path(self.path))
        if match is None or not path.is_file() or match.group(0) == "bytes=-":
            super().do_GET()
            return
        size = path.stat().st_size
        first, last = match.groups()
        start, end = (size - int(last), size - 1) if not first else (int(first), int(last) if last else size - 1)
        end = min(end, size - 1)
        if start < 0 or start > end:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.end_headers()
            return
        with path.open("rb") as f:
            f.seek(start)
            data = f.read(end - start + 1)
        self.send_response(206)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextlib.contextmanager
def static_server(root: Path, spa_fallback: bool) -> Iterator[str]:
    handler = functools.partial(type("H", (_Handler,), {"spa_fallback": spa_fallback}), directory=str(root))
    server = LoopbackServer(handler).start("codesign-static")
    try:
        yield server.url
    finally:
        server.stop()


def serve(workspace: Path, env: Environment, sandbox: Sandbox) -> contextlib.AbstractContextManager[str]:
    """Serve a built workspace on 127.0.0.1; yields the base URL. A task's own serve command runs in
    ``sandbox`` (the candidate sandbox the app was built in)."""
    if env.serve.command:
        return sandbox.serve(env.serve.command, env.serve.ready_path, env.serve.ready_timeout_s)
    root = workspace / env.serve.static_dir
    if not root.is_dir():
        raise EnvironmentSetupError(f"serve folder {root} does not exist after the build")
    return static_server(root, env.serve.spa_fallback)


@contextlib.asynccontextmanager
async def serving(workspace: Path, env: Environment, sandbox: Sandbox) -> AsyncIterator[str]:
    """``serve`` for coroutines: starting and stopping a server (which may wait for it) never blocks the loop."""
    server = serve(workspace, env, sandbox)
    url = await asyncio.to_thread(server.__enter__)
    try:
        yield url
    finally:
        await asyncio.to_thread(server.__exit__, None, None, None)
