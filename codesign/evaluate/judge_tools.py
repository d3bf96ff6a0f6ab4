"""A judge's browser tools: its own page of the served app (fresh context, fresh storage), where every action
it takes is recorded as evidence it can cite and every result quoting the app is fenced."""

from __future__ import annotations

from typing import Any

from codesign._types import EvidenceItem
from codesign.evaluate.evidence import EvidenceSession, LoadedPage, state_fingerprint
from codesign.evaluate.quoting import JUDGE_IMAGE_SIDE, TEXT_LIMIT, fence, image_part
from codesign.runtime import waiting
from codesign.runtime.browser import VIEWPORTS
from codesign.runtime.visible import rendered_text
from codesign.runtime.waiting import AppUnresponsive, BrowserFailure, bounded, describe, settle, target
from codesign.solve.attachments import downscale
from codesign.solve.tool_schema import function_tool

BROWSER_TOOLS = [
    function_tool("navigate", "Open a route of the app (a full page load).", route="e.g. /cart"),
    function_tool("click", "Click the first element matching a Playwright selector.", selector="CSS, text=…, role=…"),
    function_tool("type", "Fill a form field.", selector="the field", text="what to type"),
    function_tool("press", "Press a key, optionally on an element.", key="e.g. Enter, Tab, Escape"),
    function_tool(
        "scroll", "Scroll to an element or to a vertical position.", target="a selector, or a number of pixels"
    ),
    function_tool(
        "set_viewport", "Switch between desktop (1280×800) and mobile (390×844).", viewport="desktop or mobile"
    ),
    function_tool("screenshot", "Take a screenshot of the current page state."),
    function_tool("read_dom", "Read the visible text (and form values) of an element.", selector="defaults to body"),
]


class BrowserTools:
    """A judge's own page (fresh context, fresh storage); every action is recorded as evidence."""

    def __init__(
        self, session: EvidenceSession, owner: str, route: str, viewport: str, max_actions: int, boundary: str
    ) -> None:
        self.session, self.owner, self.route, self.viewport = session, owner, route, viewport
        self.boundary = boundary  # results quote the app: fenced with the consultation's boundary
        self.max_actions, self.count = max_actions, 0
        self.context: Any = None
        self.loaded: LoadedPage | None = None
        self.ids: list[str] = []

    async def page(self) -> Any:
        if self.loaded is None:
            self.context = await self.session.browser.context(self.viewport)
            self.loaded = await self.session.open(self.route, self.viewport, context=self.context)
        return self.loaded.page

    async def close(self) -> None:
        if self.context is not None:
            await self.context.close()

    async def run(self, name: str, args: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        if self.count >= self.max_actions:
            return f"action limit of {self.max_actions} reached: reply with your JSON verdict now", []
        self.count += 1
        page = await self.page()
        n = len(self.ids) + 1
        item_id = f"action:{self.owner}.{n}"
        before = await state_fingerprint(page)
        error, text = None, ""
        parts: list[dict[str, Any]] = []
        try:
            text, parts = await self._act(page, name, args, item_id)
        except (AppUnresponsive, BrowserFailure):
            raise
        except Exception as e:  # the element was never reached, a bad selector, a navigation error
            error = describe(e)
        after = await state_fingerprint(page)
        record = {
            "step": name,
            "args": args,
            "ok": error is None,
            "error": error,
            "before": before,
            "after": after,
            "state_changed": before != after,
        }
        self.session.add(EvidenceItem(item_id, "action", self.route, self.viewport, data=record))
        self.ids.append(item_id)
        status = f"error: {error}" if error else ("the page state changed" if before != after else "no state change")
        # Everything after the status comes from the app (page text, URLs, error messages quoting it): fenced.
        detail = fence(f"{status}\n{text}" if text else status, self.boundary, item_id)
        return f"[{item_id}] {name}:\n{detail}", parts

    async def _act(self, page: Any, name: str, a: dict[str, Any], item_id: str) -> tuple[str, list[dict[str, Any]]]:
        """One action; targets are looked up on the settled page (missing: an error at once), existing ones get
        the whole bound to become actionable, and the page settles afterwards (codesign.runtime.waiting)."""
        t, inflight = waiting.ACTION_BOUND_S * 1000, self.loaded.inflight if self.loaded else None

        async def el(selector: str, enabled: bool = True, visible: bool = True) -> Any:
            return await target(page, selector, inflight, visible, enabled)

        match name:
            case "navigate":
                route = str(a.get("route") or "/")
                url = self.session.base_url + (route if route.startswith("/") else "/" + route)
                response = await bounded(page.goto(url, wait_until="load", timeout=0), page, f"navigate {route}")
                await settle(page, inflight)
                return f"HTTP {response.status if response else '?'} at {page.url}", []
            case "click":
                await (await el(a["selector"])).click(timeout=t)
            case "type":
                await (await el(a["selector"])).fill(str(a.get("text", "")), timeout=t)
            case "press":
                await page.keyboard.press(str(a["key"]))
            case "scroll":
                where = str(a.get("target", "0"))
                if where.lstrip("-").isdigit():
                    await bounded(page.evaluate("y => window.scrollTo(0, y)", int(where)), page, "scrolling")
                else:
                    await (await el(where, enabled=False)).scroll_into_view_if_needed(timeout=t)
            case "set_viewport":
                viewport = str(a.get("viewport", "desktop"))
                await page.set_viewport_size(VIEWPORTS["mobile" if viewport == "mobile" else "desktop"]["viewport"])
            case "screenshot":
                png = await bounded(page.screenshot(full_page=False, type="png", timeout=0), page, "screenshot")
                shot_id = item_id.replace("action:", "shot:")
                path = self.session.write(f"{shot_id.replace(':', '_')}.png", png)
                self.session.add(EvidenceItem(shot_id, "screenshot", self.route, self.viewport, path))
                small, mime = downscale(png, JUDGE_IMAGE_SIDE)
                return f"screenshot saved as evidence {shot_id}", [image_part(small, mime)]
            case "read_dom":  # what a user can read there: inner_text would include text off the page
                selector = str(a.get("selector") or "body")
                element = await el(selector, enabled=False, visible=False)
                text = await rendered_text(page, f"reading {selector!r}", element, cap=TEXT_LIMIT)
                shown = text.visible[:TEXT_LIMIT] or "(no visible text)"
                if text.hidden:
                    shown += f"\n({len(text.hidden)} piece(s) of text not visible to a user left out)"
                return shown, []
            case _:
                raise ValueError(f"unknown tool {name!r}")
        await settle(page, inflight)
        return "", []
