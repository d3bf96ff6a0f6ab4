"""Screenshots of the app as it currently is in a solver's workspace (the native harness's `screenshot`).

The workspace is exported and built like the evaluator builds it — in a candidate sandbox of the
solver's own kind, confined and offline, so a command the model put in ``package.json`` runs no more
freely here than its shell commands do — then served on loopback; the shared browser of the worker
takes the picture on the worker's event loop.
"""

from __future__ import annotations

import asyncio
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codesign._protocols import Sandbox
from codesign.runtime.browser import Browser
from codesign.runtime.serve import serve
from codesign.runtime.waiting import AppUnresponsive, bounded, settle
from codesign.sandbox import scratch as scratch_dirs
from codesign.sandbox.candidate import BUILD_CACHES, FROZEN, build_app
from codesign.tasks.schema import Environment


class PreviewError(Exception):
    """The app could not be shown (it does not build, or the route does not load)."""


@dataclass
class Preview:
    browser: Browser
    loop: asyncio.AbstractEventLoop  # the worker's loop, where the browser lives
    environment: Environment
    node_cache: Path
    scratch_root: str | None = None

    def screenshot(self, sandbox: Sandbox, route: str = "/", viewport: str = "desktop") -> bytes:
        """PNG of ``route`` at ``viewport``; called from the solver's thread, never from the loop itself."""
        tmp = scratch_dirs.make("preview", self.scratch_root)
        workspace = tmp / "app"
        box = None
        try:
            sandbox.export(workspace)
            box = sandbox.for_candidate(workspace, tmp / "home", FROZEN, BUILD_CACHES)
            build = build_app(workspace, self.environment, self.node_cache, box)
            if not build.ok:
                raise PreviewError(f"the app does not build:\n{build.log[-3000:]}")
            with serve(workspace, self.environment, box) as base:
                future = asyncio.run_coroutine_threadsafe(self._shoot(base + route, viewport), self.loop)
                return future.result()  # bounded inside: every browser call has its bound
        finally:
            if box is not None:
                box.close()
            shutil.rmtree(tmp, ignore_errors=True)

    async def _shoot(self, url: str, viewport: str) -> bytes:
        async with self.browser.slot():
            context: Any = await self.browser.context(viewport)
            try:
                page = await context.new_page()
                response = await bounded(page.goto(url, wait_until="load", timeout=0), page, f"loading {url}")
                if response is not None and response.status >= 400:
                    raise PreviewError(f"{url} answered {response.status}")
                await settle(page)
                return await bounded(page.screenshot(full_page=True, type="png", timeout=0), page, "screenshot")
            except AppUnresponsive as e:  # the agent's app hangs: tell the agent
                raise PreviewError(str(e)) from None
            finally:
                await context.close()
