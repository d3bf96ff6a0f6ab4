"""Screenshots of the app as it currently is in a solver's workspace (the native harness's `screenshot`).

The workspace is exported, built like the evaluator builds it and served on loopback; the shared
browser of the worker takes the picture on the worker's event loop.
"""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codesign._protocols import Sandbox
from codesign.runtime.browser import Browser
from codesign.runtime.serve import build_app, serve
from codesign.tasks.schema import Environment


class PreviewError(Exception):
    """The app could not be shown (it does not build, or the route does not load)."""


@dataclass
class Preview:
    browser: Browser
    loop: asyncio.AbstractEventLoop  # the worker's loop, where the browser lives
    environment: Environment
    node_cache: Path

    def screenshot(self, sandbox: Sandbox, route: str = "/", viewport: str = "desktop") -> bytes:
        """PNG of ``route`` at ``viewport``; called from the solver's thread, never from the loop itself."""
        with tempfile.TemporaryDirectory(prefix="codesign-preview-") as tmp:
            workspace = Path(tmp) / "app"
            sandbox.export(workspace)
            build = build_app(workspace, self.environment, self.node_cache)
            if not build.ok:
                raise PreviewError(f"the app does not build:\n{build.log[-3000:]}")
            with serve(workspace, self.environment) as base:
                future = asyncio.run_coroutine_threadsafe(self._shoot(base + route, viewport), self.loop)
                return future.result(timeout=90)

    async def _shoot(self, url: str, viewport: str) -> bytes:
        context: Any = await self.browser.context(viewport)
        try:
            page = await context.new_page()
            response = await page.goto(url, wait_until="load", timeout=20_000)
            if response is not None and response.status >= 400:
                raise PreviewError(f"{url} answered {response.status}")
            return await page.screenshot(full_page=True, type="png")
        finally:
            await context.close()
