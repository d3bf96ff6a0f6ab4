"""Host-side relays between loopback TCP ports and unix sockets, for sandboxes without network.

A sandbox with its own (empty) network namespace shares only files with the host, so a unix socket in a
bind-mounted folder is the one door: ``relay.js`` runs inside and bridges it to TCP there; a
:class:`Relay` on the host bridges it to TCP here. Nothing else of the host's network is reachable.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from pathlib import Path

RELAY_JS = Path(__file__).with_name("relay.js")


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


async def _bridge(
    a: tuple[asyncio.StreamReader, asyncio.StreamWriter], b: tuple[asyncio.StreamReader, asyncio.StreamWriter]
) -> None:
    """Both directions until either side closes. ``close()`` cancels open bridges (a dev server's
    long-lived sockets): that ends them quietly, since asyncio logs a cancelled connection handler."""
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.gather(_pipe(a[0], b[1]), _pipe(b[0], a[1]))


class Relay:
    """Bridges on a background event loop; ``close()`` stops them all."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._servers: list[asyncio.Server] = []
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="codesign-relay")
        self._thread.start()

    def unix_to_tcp(self, socket_path: Path, port: int) -> None:
        """Connections to ``socket_path`` reach 127.0.0.1:``port`` on the host (e.g. the model proxy)."""

        async def start() -> asyncio.Server:
            async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                try:
                    upstream = await asyncio.open_connection("127.0.0.1", port)
                except OSError:
                    writer.close()
                    return
                await _bridge((reader, writer), upstream)

            return await asyncio.start_unix_server(handle, path=str(socket_path))

        self._servers.append(asyncio.run_coroutine_threadsafe(start(), self.loop).result())

    def tcp_to_unix(self, socket_path: Path) -> int:
        """A free host port whose connections reach ``socket_path`` (a server inside a sandbox); returns it."""

        async def start() -> asyncio.Server:
            async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                try:
                    upstream = await asyncio.open_unix_connection(str(socket_path))
                except OSError:  # nothing listens inside yet: the client sees a closed connection and retries
                    writer.close()
                    return
                await _bridge((reader, writer), upstream)

            return await asyncio.start_server(handle, "127.0.0.1", 0)

        server = asyncio.run_coroutine_threadsafe(start(), self.loop).result()
        self._servers.append(server)
        sock: socket.socket = server.sockets[0]
        return int(sock.getsockname()[1])

    def close(self) -> None:
        async def stop() -> None:
            for server in self._servers:
                server.close()
            connections = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in connections:
                task.cancel()
            await asyncio.gather(*connections, return_exceptions=True)

        if self.loop.is_closed():
            return
        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()
        self._servers.clear()
