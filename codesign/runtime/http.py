"""What every loopback HTTP server of codesign shares (static app server, model proxy, scripted model)."""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LoopbackMixin:
    """Quiet logs and TCP_NODELAY. Headers and body go out in separate writes: without TCP_NODELAY,
    Nagle's algorithm and delayed ACKs add ~20-40 ms to every response (measured here)."""

    def setup(self) -> None:
        super().setup()  # type: ignore[misc]
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: object) -> None:
        pass


class LoopbackHandler(LoopbackMixin, BaseHTTPRequestHandler):
    """A keep-alive JSON/SSE handler base."""

    protocol_version = "HTTP/1.1"

    def send_body(self, status: int, ctype: str, data: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)


class LoopbackServer(ThreadingHTTPServer):
    """A threaded server on 127.0.0.1 and a free port. The listen backlog is a class attribute because
    ``listen()`` runs in the constructor: the default of 5 resets connections when 64 trials (or a
    browser's parallel requests) connect at once, and 256 reset one call in 300 when 300 clients called the
    scripted model at once (twice in two runs; capacity.py keeps 256 trials in flight)."""

    daemon_threads = True
    request_queue_size = 1024

    def __init__(self, handler: Callable[..., BaseHTTPRequestHandler], port: int = 0):
        super().__init__(("127.0.0.1", port), handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def start(self, name: str) -> LoopbackServer:
        threading.Thread(target=self.serve_forever, daemon=True, name=name).start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that hung up mid-answer (Chromium dropping a loading page's connections) is no error of the
        server's: nothing printed. Anything else is printed, as socketserver does."""
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]
