"""One HTTP connection pool per thread for litellm's synchronous calls.

Trials call their models from threads (a solve runs in one). litellm's OpenAI-compatible client shares one
httpx pool between all of them, and under hundreds of threads that pool hands a connection to one thread and
closes it under another: measured with 300 threads × 3 calls at 2 s latency against the scripted model server,
1–4 calls per run failed (`Bad file descriptor`) and others hung until their timeout (runs of 19–71 s for 6 s of
latency; `benchmarks/capacity.py` keeps 256 trials in flight). With a pool per thread: no failure in 3 runs of
9.4 s. A thread keeps its connections between calls, so a trial's turns reuse one.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

import httpx


class PerThreadTransport(httpx.BaseTransport):
    """An httpx transport that sends each request through a pool of the calling thread's own."""

    def __init__(self, make: Callable[[], httpx.BaseTransport]):
        self._make = make
        self._local = threading.local()
        self._made: weakref.WeakSet[httpx.BaseTransport] = weakref.WeakSet()  # freed with their thread

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        transport = getattr(self._local, "transport", None)
        if transport is None:
            transport = self._local.transport = self._make()
            self._made.add(transport)
        return transport.handle_request(request)

    def close(self) -> None:
        for transport in list(self._made):
            transport.close()


def per_thread_client(verify: Any = True, http2: bool = False) -> httpx.Client:
    """What litellm's own synchronous OpenAI client is (redirects followed; ``verify`` and ``http2`` as litellm
    resolves them), with a connection pool per thread."""
    transport = PerThreadTransport(lambda: httpx.HTTPTransport(verify=verify, http2=http2))
    return httpx.Client(transport=transport, follow_redirects=True)
