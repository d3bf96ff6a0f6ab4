"""One headless Chromium per process, shared by every evaluation the process runs.

Measured here: 20 pages in one browser 14.6 s vs 20 browsers 24.0 s; a browser per check is ~9×
slower than reusing it. So the browser is launched once and each evaluation gets fresh contexts.

The app under test is the candidate's code, so the browser reaches loopback only: every other request
goes to a proxy address where nothing listens (a port this process holds without listening), and fails.
"""

from __future__ import annotations

import asyncio
import os
import socket
from dataclasses import dataclass
from typing import Any

from codesign.errors import EnvironmentSetupError
from codesign.programs import find_chromium
from codesign.runtime.waiting import PENDING_JS

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--hide-scrollbars", "--font-render-hinting=none",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",  # WebRTC may not go around the proxy
]  # fmt: skip

VIEWPORTS: dict[str, dict[str, Any]] = {
    "desktop": {"viewport": {"width": 1280, "height": 800}, "device_scale_factor": 1},
    "mobile": {
        "viewport": {"width": 390, "height": 844},
        "device_scale_factor": 1,
        "is_mobile": True,
        "has_touch": True,
    },
}


def context_options(viewport: Any) -> dict[str, Any]:
    """Playwright context options for a named viewport, or one of any size."""
    if isinstance(viewport, str):
        return VIEWPORTS[viewport]
    size = {"viewport": {"width": viewport.width, "height": viewport.height}, "device_scale_factor": 1}
    return size | ({"is_mobile": True, "has_touch": True} if viewport.mobile else {})


@dataclass
class Browser:
    """A lazily launched, shared Chromium. ``context()`` gives an isolated context per viewport.

    ``slots`` bounds the evaluations (evidence and grading) running in it at once — by default one per CPU —
    so a process with many trials in flight queues browser work instead of starving every page of CPU.
    """

    executable: str | None = None
    slots: int | None = None  # evaluations at once (None: the CPU count)
    _pw: Any = None
    _browser: Any = None
    _lock: asyncio.Lock | None = None
    _black_hole: socket.socket | None = None
    _slots: asyncio.Semaphore | None = None

    def slot(self) -> asyncio.Semaphore:
        """Hold while doing an evaluation's browser work (``async with browser.slot():``)."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.slots or os.cpu_count() or 2)
        return self._slots

    async def get(self) -> Any:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._browser is None or not self._browser.is_connected():
                await self._launch()
        return self._browser

    async def _launch(self) -> None:
        from playwright.async_api import async_playwright

        path = find_chromium(self.executable)
        self._pw = self._pw or await async_playwright().start()
        if self._black_hole is None:
            # Bound, never listening: connections to it are refused. Loopback bypasses the proxy (Chromium's
            # implicit rule; Playwright's own `proxy` option would send loopback through it, so it is not used).
            self._black_hole = socket.socket()
            self._black_hole.bind(("127.0.0.1", 0))
        proxy = self.proxy_arg()
        try:
            # Playwright gives a non-persistent launch its own fresh profile folder.
            self._browser = await self._pw.chromium.launch(
                executable_path=path, args=[*CHROMIUM_ARGS, proxy], headless=True
            )
        except Exception as e:  # Playwright raises its own Error type; keep the message, add the fix
            raise EnvironmentSetupError(
                f"could not launch Chromium ({path or 'Playwright bundled browser'}): {str(e).splitlines()[0]}",
                "run `make setup` (installs Debian's chromium-headless-shell or Playwright's browser), "
                "or set CODESIGN_CHROMIUM to a Chromium binary",
            ) from e

    async def answers(self) -> bool:
        """True when the launched browser still works (a blank page evaluates a script). Never relaunches it: a
        grader's error is blamed on the browser only when this browser, the one it used, is gone."""
        from codesign.runtime.waiting import blank_page_answers

        if self._browser is None or not self._browser.is_connected():
            return False
        return await blank_page_answers(self._browser)

    def proxy_arg(self) -> str:
        """The flag that sends every non-loopback request to the bound, never-listening socket (after get())."""
        assert self._black_hole is not None, "launch the browser first"
        return f"--proxy-server=http://127.0.0.1:{self._black_hole.getsockname()[1]}"

    async def context(self, viewport: Any = "desktop", color_scheme: str | None = None) -> Any:
        """A fresh context: a named viewport or any size (an object with width, height, mobile), and an
        emulated ``prefers-color-scheme`` when given."""
        browser = await self.get()
        scheme = {"color_scheme": color_scheme} if color_scheme else {}
        context = await browser.new_context(**context_options(viewport), **scheme, service_workers="block")
        await context.add_init_script(PENDING_JS)  # what a page has pending decides when it is settled
        return context

    async def close(self) -> None:
        if self._browser is not None:
            await self._browser.close()
        if self._pw is not None:
            await self._pw.stop()
        if self._black_hole is not None:
            self._black_hole.close()
        self._browser = self._pw = self._black_hole = None
