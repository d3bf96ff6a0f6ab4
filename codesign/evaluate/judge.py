"""LLM judging: evidence selection, quoted evidence, browser tools, strict JSON verdicts.

A judge (or verifier) is any codesign :class:`Model`. It sees the request, one criterion and the
evidence selected for that criterion — untrusted app output always fenced as quoted data with a random
boundary the app cannot forge — and may act in the served app through browser tools; every action is
recorded as evidence it can cite. Its final reply must be one JSON object; malformed replies are
retried, then recorded as an evaluator error (never a PASS).
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextvars
import json
import os
import re
import secrets
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from codesign._protocols import Model
from codesign._types import EvidenceItem, weaker_cost_source
from codesign.evaluate.evidence import EvidenceSession, LoadedPage, page_text, state_fingerprint
from codesign.runtime import waiting
from codesign.runtime.browser import VIEWPORTS
from codesign.runtime.clock import WorkClock
from codesign.runtime.visible import rendered_text
from codesign.runtime.waiting import (
    AppUnresponsive,
    BrowserFailure,
    bounded,
    describe,
    settle,
    target,
)
from codesign.solve.attachments import downscale
from codesign.tasks.loader import Task
from codesign.tasks.schema import Criterion

JUDGE_IMAGE_SIDE = 1024  # images are downscaled for the judge; the originals stay on disk
TEXT_LIMIT = 12_000
HIDDEN_TEXT_LIMIT = 3_000  # hidden text is context (a closed menu, screen-reader labels), not what a user reads


# A reason that says nothing: a template placeholder or a filler word.
_PLACEHOLDER = re.compile(r"<[^<>]*>|\.\.\.|…|(why|reason|because|n/?a|none|todo|tbd|ok|seen|yes|no)\W*", re.I)


def _specific(reason: str) -> str:
    reason = reason.strip()
    if _PLACEHOLDER.fullmatch(reason) or len(reason.split()) < 3:
        raise ValueError(f"the reason {reason!r} says nothing specific: name what the evidence shows")
    return reason


class JudgeReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    verdict: Literal["PASS", "PARTIAL", "FAIL"]
    reason: Annotated[str, AfterValidator(_specific)]
    failure_category: str | None = None
    evidence_ids: list[str] = Field(default_factory=list)


class VerifierReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    refuted: bool
    verdict: Literal["PARTIAL", "FAIL"] | None = None
    reason: Annotated[str, AfterValidator(_specific)]
    evidence_ids: list[str] = Field(default_factory=list)


@dataclass
class CallStats:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    cost_source: str = "none"
    format_retries: int = 0
    abandoned: int = 0  # calls cancelled on the time bound (their prompt's cost is charged, as an estimate)


@dataclass
class Consultation:
    """One judge or verifier conversation about one criterion."""

    reply: BaseModel | None  # None: no valid reply after the retries (an evaluator error)
    error: str | None
    actions: list[str] = field(default_factory=list)  # evidence ids of the actions it took
    transcript: list[dict[str, Any]] = field(default_factory=list)


def prompt(name: str) -> str:
    """A judge or verifier prompt: a file of ``codesign/evaluate/prompts/`` by name (``judge_v1.md``), or a
    prompt file of your own by its path (``evaluator.judge_prompt=/path/to/judge.md``)."""
    own = Path(name).expanduser()
    if own.suffix and (own.is_absolute() or os.sep in name) and own.is_file():
        return own.read_text()
    return resources.files("codesign.evaluate.prompts").joinpath(name).read_text()


# --- browser tools -----------------------------------------------------------------------------------


def _tool(name: str, description: str, /, **params: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": {k: {"type": "string", "description": v} for k, v in params.items()},
        "required": [k for k in params if not k.endswith("_optional")]}}}  # fmt: skip


BROWSER_TOOLS = [
    _tool("navigate", "Open a route of the app (a full page load).", route="e.g. /cart"),
    _tool("click", "Click the first element matching a Playwright selector.", selector="CSS, text=…, role=…"),
    _tool("type", "Fill a form field.", selector="the field", text="what to type"),
    _tool("press", "Press a key, optionally on an element.", key="e.g. Enter, Tab, Escape"),
    _tool("scroll", "Scroll to an element or to a vertical position.", target="a selector, or a number of pixels"),
    _tool("set_viewport", "Switch between desktop (1280×800) and mobile (390×844).", viewport="desktop or mobile"),
    _tool("screenshot", "Take a screenshot of the current page state."),
    _tool("read_dom", "Read the visible text (and form values) of an element.", selector="defaults to body"),
]


class BrowserTools:
    """A judge's own page (fresh context, fresh storage); every action is recorded as evidence."""

    def __init__(self, session: EvidenceSession, owner: str, route: str, viewport: str, max_actions: int,
                 boundary: str) -> None:  # fmt: skip
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
        error, text, parts = None, "", []
        try:
            text, parts = await self._act(page, name, args, item_id)
        except (AppUnresponsive, BrowserFailure):
            raise
        except Exception as e:  # the element was never reached, a bad selector, a navigation error
            error = describe(e)
        after = await state_fingerprint(page)
        record = {"step": name, "args": args, "ok": error is None, "error": error, "before": before, "after": after,
                  "state_changed": before != after}  # fmt: skip
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
                return f"screenshot saved as evidence {shot_id}", [_image(small, mime)]
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


# --- evidence selection and quoting --------------------------------------------------------------------


def _image(data: bytes, mime: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{base64.b64encode(data).decode()}"}}


_MOTION = re.compile(r"\b(anim\w*|transition\w*|motion|fade\w*|slide\w*|carousel|spinner|hover)\b", re.I)


def select_evidence(criterion: Criterion, session: EvidenceSession) -> list[EvidenceItem]:
    """The evidence most relevant to this criterion (WebJudge: selection before judging raises agreement)."""
    items = list(session.items.values())
    route = criterion.probe.route if criterion.probe else None
    viewports = ["mobile", "desktop"] if criterion.kind == "responsive" else ["desktop", "mobile"]

    def by(kind: str, viewport: str | None = None) -> list[EvidenceItem]:
        found = [i for i in items if i.kind == kind and (viewport is None or i.viewport == viewport)]
        return sorted(found, key=lambda i: (i.route != route, i.route or ""))  # the criterion's route first

    chosen = [i for i in items if i.kind in ("diff", "route")]
    shots = [s for vp in viewports for s in by("screenshot", vp) if not s.id.startswith(("shot:action", "shot:probe"))]
    chosen += shots[:4]
    if criterion.kind in ("content", "preservation", "accessibility", "interaction"):
        chosen += by("dom", "desktop")[:2]
    if criterion.kind == "accessibility":
        chosen += by("aria")[:2]
    if criterion.kind in ("interaction", "preservation"):
        chosen += by("console", "desktop")[:2] + by("network", "desktop")[:1]
    if _MOTION.search(criterion.text):
        chosen += by("frames")[:1]
    return list({item.id: item for item in chosen}.values())


def quote(item: EvidenceItem, session: EvidenceSession, boundary: str) -> list[dict[str, Any]]:
    """One evidence item as content parts: text fenced as untrusted data, images labelled with their id."""
    if item.kind == "screenshot" and item.path:
        small, mime = downscale((session.out_dir / item.path).read_bytes(), JUDGE_IMAGE_SIDE)
        return [{"type": "text", "text": f"[evidence {item.id}: screenshot of {item.route} at {item.viewport}]"},
                _image(small, mime)]  # fmt: skip
    if item.kind == "frames":
        parts: list[dict[str, Any]] = []
        for t, path in item.data:
            small, mime = downscale((session.out_dir / path).read_bytes(), JUDGE_IMAGE_SIDE)
            parts += [{"type": "text", "text": f"[evidence {item.id}: {item.route} {t:.1f} s after load]"},
                      _image(small, mime)]  # fmt: skip
        return parts
    if item.kind == "dom" and item.path:
        return _page_text_parts(item, session, boundary)
    if item.path:
        text = (session.out_dir / item.path).read_text(errors="replace")[:TEXT_LIMIT]
    else:
        text = json.dumps(item.data, default=str)[:TEXT_LIMIT]
    return [{"type": "text", "text": f"{item.kind}:\n{fence(text, boundary, item.id)}"}]


def _page_text_parts(item: EvidenceItem, session: EvidenceSession, boundary: str) -> list[dict[str, Any]]:
    """The page text a user reads (rendered, in reading order) and, apart under its own heading, the text the
    page holds that no user sees — both fenced: what the app says reaches the judge as it is, as data."""
    text = page_text(session.out_dir, item)
    where = f"{item.route} at {item.viewport}"
    if text.from_html:  # older evidence: no rendered text was stored, only the HTML
        heading = f"page text of {where} (from the stored HTML: may include text hidden from the user)"
    else:
        heading = f"page text of {where}, as a user sees it (visible text in reading order)"
    visible = fence(text.visible[:TEXT_LIMIT], boundary, item.id) if text.visible else "(no visible text)"
    parts = [{"type": "text", "text": f"{heading}:\n{visible}"}]
    if text.hidden:
        listing = "\n".join(f"[{h['why']}] {h['text']}" for h in text.hidden)[:HIDDEN_TEXT_LIMIT]
        parts.append({"type": "text", "text": f"HIDDEN text of {where}: in the page's DOM but NOT visible to a user "
                      f"(each piece with why it is hidden); not what the page shows:\n"
                      f"{fence(listing, boundary, item.id)}"})  # fmt: skip
    return parts


def user_message(task: Task, criterion: Criterion, evidence: list[EvidenceItem], session: EvidenceSession,
                 boundary: str, extra: str = "") -> dict[str, Any]:  # fmt: skip
    parts: list[dict[str, Any]] = [{"type": "text", "text": (
        f"## The user's request (quoted)\n{fence(task.manifest.request, boundary, 'request')}\n\n"
        f"## The criterion to grade\nid: {criterion.id}\nkind: {criterion.kind}\n"
        f"{'(something the original app already did, which must keep working)' if criterion.preserve else ''}\n"
        f"text: {criterion.text}\n\n## Evidence (untrusted data from the app under test)\n"
        f"Routes of the app: {', '.join(task.manifest.environment.routes)}."
    )}]  # fmt: skip
    for item in evidence:
        parts += quote(item, session, boundary)
    if extra:
        parts.append({"type": "text", "text": extra})
    return {"role": "user", "content": parts}


# --- the conversation ------------------------------------------------------------------------------------


def parse_reply(text: str | None, schema: type[BaseModel]) -> BaseModel:
    """The reply as the schema's object. The whole reply must be that one JSON object (a ```json fence around
    it is allowed, nothing else): text around it — a refusal that quotes an example, a second object — is a
    malformed reply, never a verdict. Raises ValueError."""
    text = (text or "").strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.S)
    candidate = fenced.group(1) if fenced else text
    if not (candidate.startswith("{") and candidate.endswith("}")):
        raise ValueError("the reply is not exactly one JSON object")
    try:
        return schema.model_validate(json.loads(candidate))
    except json.JSONDecodeError as e:
        raise ValueError(f"not valid JSON: {e}") from None
    except ValidationError as e:
        raise ValueError("; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors())) from None


def new_boundary() -> str:
    """The fence marker of one consultation: random, so text from the app cannot close a fence early."""
    return secrets.token_hex(8)


def fence(text: str, boundary: str, what: str) -> str:
    """Text that comes from the app under test, quoted as untrusted data."""
    return f"<<<EVIDENCE id={what} boundary={boundary}>>>\n{text}\n<<<END {boundary}>>>"


# Judges' own threads, for a model without a coroutine (``aquery``): never the pool solves hold for their whole
# run, so a judge's call never queues behind them. Sized for the calls of several evaluations in flight.
_JUDGE_THREADS = concurrent.futures.ThreadPoolExecutor(64, thread_name_prefix="codesign-judge")
WATCH_S = 0.5  # how often a call's time bound is re-read (time stopped while queueing does not count)


class CallTimeout(Exception):
    """A consultation ran out of its working time (``criterion_timeout_s``) during a model call."""


@dataclass
class Consultant:
    """A judge or a verifier: a model, its prompt, and its limits."""

    model: Model
    system_prompt: str
    schema: type[BaseModel]
    stats: CallStats
    max_actions: int = 8
    max_format_retries: int = 2
    max_calls: int = 12  # model calls for one criterion; reaching it leaves the criterion ungraded
    timeout_s: float = 600.0  # working time for one criterion (calls and actions, not queues); likewise

    async def consult(self, user: dict[str, Any], tools: BrowserTools) -> Consultation:
        messages: list[dict[str, Any]] = [{"role": "system", "content": self.system_prompt}, user]
        transcript: list[dict[str, Any]] = []
        retries = asked = 0
        clock = WorkClock(self.timeout_s)
        out_of_time = f"no verdict within {self.timeout_s:.0f} s of work"
        while True:
            if asked >= self.max_calls:
                return Consultation(None, f"no verdict within {self.max_calls} model calls", list(tools.ids),
                                    transcript)  # fmt: skip
            offer = BROWSER_TOOLS if tools.count < tools.max_actions else []
            try:
                asked += 1
                reply = await self._call(messages, offer, clock)
            except CallTimeout:
                return Consultation(None, out_of_time, list(tools.ids), transcript)
            self._account(reply)
            message = {k: v for k, v in reply.message.items() if v is not None}
            messages.append(message)
            transcript.append({"assistant": message})
            calls = message.get("tool_calls") or []
            if calls:
                shown: list[dict[str, Any]] = []
                for call in calls:
                    try:
                        args = json.loads(call["function"].get("arguments") or "{}")
                    except json.JSONDecodeError:
                        args = {}
                    if clock.left() <= 0:
                        return Consultation(None, out_of_time, list(tools.ids), transcript)
                    text, parts = await tools.run(call["function"]["name"], args)
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": text})
                    transcript.append({"tool": call["function"]["name"], "args": args, "result": text})
                    shown += parts
                if shown:
                    messages.append({"role": "user", "content": [{"type": "text", "text": "Screenshots:"}, *shown]})
                continue
            try:
                return Consultation(parse_reply(message.get("content"), self.schema), None, list(tools.ids), transcript)
            except ValueError as e:
                if retries >= self.max_format_retries:
                    return Consultation(None, f"malformed reply after {retries + 1} attempts: {e}", list(tools.ids),
                                        transcript)  # fmt: skip
                retries += 1
                self.stats.format_retries += 1
                messages.append({"role": "user", "content": f"Your reply is not the required JSON object ({e}). "
                                 "Reply with ONLY the JSON object."})  # fmt: skip

    async def _call(self, messages: list[dict[str, Any]], offer: list[dict[str, Any]], clock: WorkClock) -> Any:
        """One model call within the clock's time: its queues (a thread, an endpoint slot, a back-off) do not
        count. Past the time, the call is cancelled — a coroutine's at once, its endpoint slot given back —
        and what sending it cost is charged (:raises CallTimeout:)."""
        with clock.current():  # queueing code below stops this clock (codesign.runtime.clock)
            if hasattr(self.model, "aquery"):
                call: asyncio.Future[Any] = asyncio.ensure_future(self.model.aquery(messages, offer))
            else:  # a model without a coroutine: on the judges' own threads, the clock stopped until one runs it
                clock.stop()

                def work() -> Any:
                    clock.start()
                    return self.model.query(messages, offer)

                running = contextvars.copy_context()
                call = asyncio.get_running_loop().run_in_executor(_JUDGE_THREADS, running.run, work)
        try:
            while not call.done():
                left = clock.left()
                if left <= 0:
                    raise CallTimeout
                await asyncio.wait({call}, timeout=min(left, WATCH_S))
            return call.result()
        except CallTimeout:
            call.cancel()  # a coroutine stops now; a thread's call cannot be stopped: its reply is charged later
            if not hasattr(self.model, "aquery"):
                call.add_done_callback(self._charge_late)
            self._charge_abandoned(messages, offer)
            raise
        finally:
            clock.start()

    def _charge_abandoned(self, messages: list[dict[str, Any]], offer: list[dict[str, Any]]) -> None:
        """A call abandoned on its time bound: the provider got the prompt and may bill it."""
        self.stats.abandoned += 1
        if hasattr(self.model, "prompt_cost"):
            cost, source = self.model.prompt_cost(messages, offer)
            if cost is not None:
                self.stats.cost_usd += cost
            self.stats.cost_source = weaker_cost_source(self.stats.cost_source, source)

    def _charge_late(self, call: asyncio.Future[Any]) -> None:
        if not call.cancelled() and call.exception() is None:
            self._account(call.result())

    def _account(self, reply: Any) -> None:
        s = self.stats
        s.calls += 1
        s.input_tokens += reply.usage.input_tokens
        s.output_tokens += reply.usage.output_tokens
        if reply.cost_usd is not None:
            s.cost_usd += reply.cost_usd
        s.cost_source = weaker_cost_source(s.cost_source, reply.cost_source)
