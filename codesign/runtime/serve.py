"""Serve a built workspace on loopback: the task's own serve command runs in the candidate sandbox the app was
built in (``codesign.sandbox.candidate``), a static build is served by an in-process server that never leaves
its folder."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
from collections.abc import AsyncIterator, Iterator
from http.server import SimpleHTTPRequestHandler
from pathlib import Path
from typing import Protocol

from codesign._protocols import Sandbox
from codesign.errors import EnvironmentSetupError
from codesign.runtime.http import LoopbackMixin, LoopbackServer


class ServeSettings(Protocol):
    """How a task serves its built app (``codesign.tasks.schema.Serve``), as read here."""

    @property
    def static_dir(self) -> str: ...
    @property
    def spa_fallback(self) -> bool: ...
    @property
    def command(self) -> str | None: ...
    @property
    def ready_path(self) -> str: ...
    @property
    def ready_timeout_s(self) -> float: ...


class ServedApp(Protocol):
    """A task's app environment (``codesign.tasks.schema.Environment``): this module reads its ``serve``."""

    @property
    def serve(self) -> ServeSettings: ...


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

    def send_head(self):
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


def serve(workspace: Path, env: ServedApp, sandbox: Sandbox) -> contextlib.AbstractContextManager[str]:
    """Serve a built workspace on 127.0.0.1; yields the base URL. A task's own serve command runs in
    ``sandbox`` (the candidate sandbox the app was built in)."""
    if env.serve.command:
        return sandbox.serve(env.serve.command, env.serve.ready_path, env.serve.ready_timeout_s)
    root = workspace / env.serve.static_dir
    if not root.is_dir():
        raise EnvironmentSetupError(f"serve folder {root} does not exist after the build")
    return static_server(root, env.serve.spa_fallback)


@contextlib.asynccontextmanager
async def serving(workspace: Path, env: ServedApp, sandbox: Sandbox) -> AsyncIterator[str]:
    """``serve`` for coroutines: starting and stopping a server (which may wait for it) never blocks the loop."""
    server = serve(workspace, env, sandbox)
    url = await asyncio.to_thread(server.__enter__)
    try:
        yield url
    finally:
        await asyncio.to_thread(server.__exit__, None, None, None)
