"""Build a final workspace and serve it on loopback, with the task's own commands or a static server."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

from codesign.errors import EnvironmentSetupError
from codesign.runtime.http import LoopbackMixin, LoopbackServer
from codesign.sandbox.local import run_in_group
from codesign.sandbox.workspace import cached_node_modules, hydrate_node_modules
from codesign.tasks.schema import Environment

NODE_INSTALL = "npm ci --no-audit --no-fund --prefer-offline --loglevel=error"
NODE_BUILD = "npm run build --silent"


@dataclass
class BuildResult:
    ok: bool
    log: str
    wall_s: float


def build_app(workspace: Path, env: Environment, node_cache: Path) -> BuildResult:
    """Install (cached per lockfile) and build. A failing build is the candidate's fault, not an error."""
    start = time.monotonic()
    if env.kind == "static" and not env.build:
        return BuildResult(True, "static app: nothing to build", 0.0)
    log = []
    if env.kind == "node":
        modules = cached_node_modules(workspace, node_cache, env.install or NODE_INSTALL)
        hydrate_node_modules(workspace, modules, hardlink=True)
        log.append(f"dependencies from cache {modules.parent.name}")
    command = env.build or (NODE_BUILD if env.kind == "node" else None)
    if command:
        result = run_in_group(
            ["bash", "-c", command], workspace, {**os.environ, "CI": "1", "NO_COLOR": "1"}, env.build_timeout_s
        )
        log.append(f"$ {command}\n{result.output}")
        if result.timed_out or result.returncode != 0:
            status = "timed out" if result.timed_out else f"exit code {result.returncode}"
            return BuildResult(False, "\n".join([*log, f"build failed: {status}"]), time.monotonic() - start)
    return BuildResult(True, "\n".join(log), time.monotonic() - start)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Handler(LoopbackMixin, SimpleHTTPRequestHandler):
    spa_fallback = False

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


@contextlib.contextmanager
def command_server(workspace: Path, command: str, ready_path: str, timeout_s: float) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        ["bash", "-c", command.format(port=port)],
        cwd=workspace,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                raise EnvironmentSetupError(f"serve command exited with {proc.returncode}: {command}")
            try:
                with urllib.request.urlopen(base + ready_path, timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise EnvironmentSetupError(
                        f"app not ready at {base}{ready_path} after {timeout_s:.0f} s"
                    ) from None
                time.sleep(0.2)
        yield base
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)
        proc.wait()


def serve(workspace: Path, env: Environment) -> contextlib.AbstractContextManager[str]:
    """Serve a built workspace on 127.0.0.1; yields the base URL."""
    if env.serve.command:
        return command_server(workspace, env.serve.command, env.serve.ready_path, env.serve.ready_timeout_s)
    root = workspace / env.serve.static_dir
    if not root.is_dir():
        raise EnvironmentSetupError(f"serve folder {root} does not exist after the build")
    return static_server(root, env.serve.spa_fallback)
