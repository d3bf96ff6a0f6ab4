"""Evidence about a served app, each item with an id that verdicts cite.

Ids: ``diff``, ``build``, ``route:/cart``, and per route and viewport ``shot:/cart@mobile``,
``dom:/cart@mobile``, ``console:/cart@mobile``, ``network:/cart@mobile``; probes add
``action:<criterion>.<n>`` and ``shot:<criterion>`` for what they did.

A ``dom`` item is the HTML (``path``) and, read from the live page at the same moment, its rendered text —
visible and hidden apart (codesign.runtime.visible) — in the file named by ``data["text"]``.
"""

from __future__ import annotations

import contextlib
import html as htmllib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codesign._protocols import Sandbox
from codesign._types import EvidenceItem
from codesign.redact import redact, redact_data
from codesign.runtime.browser import Browser
from codesign.runtime.visible import RenderedText, rendered_text
from codesign.runtime.waiting import NETWORK_CHANGED, AppUnresponsive, BrowserFailure, bounded, describe, settle

_STATE_JS = """() => {
  const values = Array.from(document.querySelectorAll('input, textarea, select')).map(
    e => (e.type === 'checkbox' || e.type === 'radio') ? String(e.checked) : e.value);
  let storage = '';
  try { storage = JSON.stringify(Object.entries(localStorage)) + JSON.stringify(Object.entries(sessionStorage)); }
  catch (e) {}
  return [document.documentElement.outerHTML, values.join('\\u0001'), storage, window.scrollX + ',' + window.scrollY]
    .join('\\u0000');
}"""


async def state_fingerprint(page: Any) -> dict[str, str]:
    """What a user-visible state change would alter: URL, DOM, form values, storage, scroll position."""
    import hashlib

    raw = await bounded(page.evaluate(_STATE_JS), page, "reading the page state")
    return {"url": page.url, "state": hashlib.sha1(raw.encode()).hexdigest()[:12]}


def page_text(out_dir: Path, item: EvidenceItem) -> RenderedText:
    """The rendered text of a ``dom`` item stored in ``out_dir``."""
    stored = out_dir / item.data["text"] if isinstance(item.data, dict) and item.data.get("text") else None
    if stored is not None and stored.is_file():
        return RenderedText(**json.loads(stored.read_text()))
    # Evidence from before rendered text was collected (or from a page that stopped answering before it was
    # read) has only the HTML: its text, tags stripped, stands in. That cannot tell hidden text from visible,
    # so it all counts as visible, as it did then; from_html says so to the judge.
    html = (out_dir / item.path).read_text(errors="replace") if item.path else ""
    body = re.sub(r"(?s)<(script|style)\b.*?</\1>", " ", re.split(r"<body\b[^>]*>", html, maxsplit=1)[-1])
    text = htmllib.unescape(re.sub(r"<[^>]+>", " ", body))
    return RenderedText(visible=re.sub(r"[ \t]+", " ", re.sub(r"\n\s*\n+", "\n", text)).strip(), from_html=True)


# A load the machine's network change hit is loaded again this many times in all: one change fails only the
# connections being made at that moment (measured: a veth pair added during a load failed that load's pending
# request within 30 ms, and the next load was clean).
LOAD_ATTEMPTS = 3


def slug(route: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", route).strip("_") or "root"


@dataclass
class LoadedPage:
    page: Any
    route: str
    viewport: str
    status: int | None
    console: list[dict[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    network: list[dict[str, Any]] = field(default_factory=list)
    inflight: set[Any] = field(default_factory=set)  # requests sent and not yet answered (settling waits on them)
    load_error: str | None = None  # the page never finished loading: the app's failure
    network_changed: list[str] = field(default_factory=list)  # its requests the machine's network change failed
    kept: list[str] | None = None  # once kept by the session: where its later such failures go too
    # Settled and not acted on since: the next step's target lookup need not settle again. Measured on
    # re-shop-cart-checkout: 105 settles (~0.2 s of frames each) per evaluation before, 63 without the repeats.
    settled: bool = False

    async def settle(self) -> bool:
        quiet = await settle(self.page, self.inflight)
        self.settled = True  # a page still changing after the bound counts as settled (codesign.runtime.waiting)
        return quiet


@dataclass
class EvidenceSession:
    """Evidence for one final workspace; graders read pages and items and may open new pages."""

    browser: Browser
    base_url: str
    out_dir: Path
    workspace: Path
    node_cache: Path | None = None  # installed dependencies (spec runners use it like apps)
    scratch_root: str | None = None
    sandbox: Sandbox | None = None  # the candidate sandbox the app was built in (command criteria run there)
    items: dict[str, EvidenceItem] = field(default_factory=dict)
    pages: dict[tuple[str, str], LoadedPage] = field(default_factory=dict)
    timeouts: list[str] = field(default_factory=list)  # app timeouts met while grading: not stored as finished
    # Requests of the pages graders read that failed because the machine's network changed (NETWORK_CHANGED):
    # from then on no browser verdict of this evaluation is the app's alone (outcomes.guarded_all).
    network_changed: list[str] = field(default_factory=list)
    _contexts: dict[str, Any] = field(default_factory=dict)

    def add(self, item: EvidenceItem) -> str:
        self.items[item.id] = item
        return item.id

    def write(self, name: str, content: bytes | str) -> str:
        path = self.out_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else redact(content).encode())
        return name

    async def context(self, viewport: str) -> Any:
        if viewport not in self._contexts:
            self._contexts[viewport] = await self.browser.context(viewport)
        return self._contexts[viewport]

    async def open(self, route: str, viewport: str, context: Any | None = None) -> LoadedPage:
        """Load ``route`` in a new page, recording console, page errors and network traffic. A load whose
        requests the machine's network change failed is not the app's page: it is loaded again, up to
        ``LOAD_ATTEMPTS`` times; the last one's failures, and any its page meets later, go to
        ``network_changed``."""
        for attempt in range(1, LOAD_ATTEMPTS + 1):
            loaded = await self._load(route, viewport, context)
            if not loaded.network_changed or attempt == LOAD_ATTEMPTS:
                break
            with contextlib.suppress(Exception):  # a page that cannot close is the browser's to report
                await loaded.page.close()
        self.network_changed.extend(loaded.network_changed)
        loaded.kept = self.network_changed  # its later failures are the evaluation's too
        return loaded

    async def _load(self, route: str, viewport: str, context: Any | None) -> LoadedPage:
        ctx = context or await self.context(viewport)
        page = await ctx.new_page()
        loaded = LoadedPage(page, route, viewport, None)
        page.on("console", lambda m: loaded.console.append({"type": m.type, "text": m.text}))
        page.on("pageerror", lambda e: loaded.errors.append(str(e)))
        page.on("request", lambda r: loaded.inflight.add(r))

        # A request stops being "in flight" when its response arrives (or it fails): a body the page never
        # reads never "finishes" in Chromium's eyes, and must not hold the page unsettled.
        def answered(response: Any) -> None:
            loaded.inflight.discard(response.request)
            loaded.network.append({"url": response.url, "method": response.request.method, "status": response.status})

        def failed(request: Any) -> None:
            loaded.inflight.discard(request)
            loaded.network.append({"url": request.url, "method": request.method, "failure": request.failure})
            if request.failure == NETWORK_CHANGED:
                lost = f"{request.method} {request.url}: {NETWORK_CHANGED}"
                loaded.network_changed.append(lost)
                if loaded.kept is not None:
                    loaded.kept.append(lost)

        page.on("response", answered)
        page.on("requestfailed", failed)
        where = f"loading {route} at {viewport}"
        try:
            response = await bounded(page.goto(self.base_url + route, wait_until="commit", timeout=0), page, where)
            loaded.status = response.status if response else None
            await bounded(page.wait_for_load_state("load", timeout=0), page, where)
            await loaded.settle()
        except AppUnresponsive as e:  # evidence of what is there is still gathered; graders see the reason
            loaded.load_error = str(e)
            self.timeouts.append(str(e))
        return loaded

    async def collect(
        self,
        routes: list[str],
        viewports: list[str],
        patch: str,
        build_log: str,
        aria: bool = False,
        frames: tuple[float, ...] = (),
    ) -> None:
        """Baseline evidence every grader can cite: diff, build log, and each route at each viewport;
        optionally ARIA snapshots and timed frames (screenshots ``frames`` seconds after load, for motion)."""
        self.add(EvidenceItem("diff", "diff", path=self.write("diff.patch", patch)))
        self.add(EvidenceItem("build", "build", path=self.write("build.log", build_log)))
        for viewport in viewports:
            for route in routes:
                loaded = await self.open(route, viewport)
                self.pages[(route, viewport)] = loaded
                key = f"{route}@{viewport}"
                name = f"{slug(route)}@{viewport}"
                if viewport == viewports[0]:
                    self.add(EvidenceItem(f"route:{route}", "route", route=route, data={"status": loaded.status}))
                try:
                    await self._snapshot(loaded, key, name, aria, frames if viewport == viewports[0] else ())
                except AppUnresponsive as e:  # what was gathered stays; graders see the reason
                    loaded.load_error = loaded.load_error or str(e)
                    self.timeouts.append(str(e))

    async def _snapshot(self, loaded: LoadedPage, key: str, name: str, aria: bool, frames: tuple[float, ...]) -> None:
        page, route, viewport = loaded.page, loaded.route, loaded.viewport
        self.add(
            EvidenceItem(
                f"console:{key}",
                "console",
                route,
                viewport,
                data={"messages": loaded.console, "page_errors": loaded.errors},
            )
        )
        self.add(EvidenceItem(f"network:{key}", "network", route, viewport, data=loaded.network))
        shot = await bounded(page.screenshot(full_page=True, type="png", timeout=0), page, f"screenshot of {key}")
        self.add(EvidenceItem(f"shot:{key}", "screenshot", route, viewport, self.write(f"{name}.png", shot)))
        dom = await bounded(page.content(), page, f"DOM of {key}")
        dom_item = EvidenceItem(f"dom:{key}", "dom", route, viewport, self.write(f"{name}.html", dom))
        self.add(dom_item)  # a page that stops answering now still leaves its DOM (page_text falls back to it)
        try:
            text = await rendered_text(page, f"text of {key}")
        except (AppUnresponsive, BrowserFailure):
            raise
        except Exception as e:  # the page's scripts broke what the reader uses (getComputedStyle, Range…)
            dom_item.data = {"text_error": describe(e)}  # page_text falls back to the HTML and says so
        else:
            dom_item.data = {"text": self.write(f"{name}.text.json", json.dumps(redact_data(vars(text)), indent=1))}
        if aria:
            snapshot = await bounded(page.locator("body").aria_snapshot(timeout=0), page, f"ARIA of {key}")
            self.add(EvidenceItem(f"aria:{key}", "aria", route, viewport, self.write(f"{name}.aria.yaml", snapshot)))
        if frames:
            # Motion evidence is taken at set times after load on purpose: it shows what a user sees then.
            timed, waited = [], 0.0
            for t in frames:
                await page.wait_for_timeout(max(0.0, t - waited) * 1000)
                waited = t
                shot = await bounded(page.screenshot(type="jpeg", quality=70, timeout=0), page, f"frame of {key}")
                timed.append((t, self.write(f"{name}@{t:.1f}s.jpg", shot)))
            self.add(EvidenceItem(f"frames:{route}", "frames", route, viewport, data=timed))

    async def close(self) -> None:
        for ctx in self._contexts.values():
            with contextlib.suppress(Exception):  # a crashed browser's contexts: its failure is reported already
                await ctx.close()
        self._contexts.clear()
        self.pages.clear()

    def save_index(self) -> None:
        index = redact_data([vars(item) for item in self.items.values()])
        (self.out_dir / "evidence.json").write_text(json.dumps(index, indent=1, default=str))
