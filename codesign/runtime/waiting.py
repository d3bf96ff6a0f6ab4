"""How evaluation waits: on the app's state, never on a fixed time, so verdicts do not depend on load.

- A page is *settled* when its fonts are loaded, no request is in flight and ``QUIET_FRAMES`` animation
  frames pass without a DOM mutation — frames while a message posted to one of the page's own ports is still
  undelivered do not count (a framework's scheduler renders in such slices and mutates only when it commits;
  React Router 7 navigates so). Frames slow down with the machine, so a busy machine waits longer in seconds
  but sees the same state. A page that is quiet by its own account settles sooner:
  ``FAST_QUIET_FRAMES`` frames without a mutation suffice when nothing is left that could change it — no
  timer due within ``PENDING_HORIZON_MS`` (nor an interval that short), no frame or idle callback of its own,
  no running animation or transition, no fetch or XMLHttpRequest unanswered (``PENDING_JS``, installed in
  every page before the app's scripts). Events, not a count of frames, decide; a page with anything
  pending waits the full count as before.
- A task's explicit ``wait: {ms}`` step shows the page as it is ``ms`` later by the page's clock (and, as every
  step, settled after). It ends sooner when nothing could change the page before then: ``FAST_QUIET_FRAMES``
  frames without a mutation and nothing due within what is left of the wait plus ``PENDING_HORIZON_MS`` (what
  the settle after the full wait would wait for) — no timer, no interval at all, no frame or idle callback,
  no animation, no request, no playing media, and nothing whose events codesign cannot see (a socket, an
  event stream, a worker, IndexedDB, a timer given as a string). Until then it waits, so the state it shows
  is the state at ``ms``; a page with anything opaque waits out the full time as before.
- A step's target that does not exist, is hidden or is disabled once the page has settled fails at once,
  saying so. A target that is there gets as long as it needs to become actionable (stable, not covered),
  up to ``ACTION_BOUND_S``.
- Every browser call has a bound (``CALL_BOUND_S``); when one runs out, a fresh page in the same browser
  tells who is at fault: if it answers, the app is unresponsive (:class:`AppUnresponsive`, a FAIL with
  category ``timeout``); if not, the browser or machine failed (:class:`BrowserFailure`, infrastructure).

The bounds are safety nets far above anything a working app needs on a loaded machine, not waiting times.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")

QUIET_FRAMES = 8  # consecutive frames without a DOM mutation (and no request in flight): settled
# Measured on re-shop-cart-checkout's reference (probes 4.8 s, of which 55 settles of ~145 ms each): a quiet
# page needs no 8 frames. 3, not 1: a framework's render scheduled by a message or a microtask chain commits
# within a frame or two of what triggered it.
FAST_QUIET_FRAMES = 3
PENDING_HORIZON_MS = 1000  # a timer due within this (page time) may still change the page: wait for it
SETTLE_BOUND_S = 30.0  # a page that never stops changing (an animated counter) counts as settled after this
ACTION_BOUND_S = 60.0  # an existing target's time to become visible, stable, enabled
CALL_BOUND_S = 90.0  # any single browser call: evaluate, screenshot, navigation
HEALTH_BOUND_S = 30.0  # a blank page in the same browser must answer within this

# Installed in every page before its own scripts (Browser.context): what the page has scheduled that could
# still change it. Timers with string bodies are left alone (not tracked); everything else is passed through.
PENDING_JS = """(() => {
  const w = window;
  if (w.__codesignPending) { return; }
  const now = () => performance.now();
  const timeouts = new Map(), intervals = new Map(), frames = new Set(), idles = new Set();
  let requests = 0, opaque = false;  // opaque: something whose events are not tracked (see the module)
  const media = new Set();
  const st = w.setTimeout, si = w.setInterval, ct = w.clearTimeout, ci = w.clearInterval;
  const raf = w.requestAnimationFrame, caf = w.cancelAnimationFrame;
  const ric = w.requestIdleCallback, cic = w.cancelIdleCallback;
  const hidden = (name, value) => Object.defineProperty(w, name, {value, enumerable: false});
  hidden("__codesignRaf", raf.bind(w));
  hidden("__codesignTimer", (fn, ms) => { const id = st.call(w, fn, ms); return () => ct.call(w, id); });
  w.setTimeout = function (fn, delay, ...rest) {
    if (typeof fn !== "function") { opaque = true; return st.call(w, fn, delay, ...rest); }
    let id;
    id = st.call(w, function () { timeouts.delete(id); return fn.apply(this, arguments); }, delay, ...rest);
    timeouts.set(id, now() + Math.max(0, Number(delay) || 0));
    return id;
  };
  w.setInterval = function (fn, delay, ...rest) {
    const id = si.call(w, fn, delay, ...rest);
    if (typeof fn === "function") { intervals.set(id, Math.max(0, Number(delay) || 0)); } else { opaque = true; }
    return id;
  };
  w.clearTimeout = function (id) { timeouts.delete(id); intervals.delete(id); return ct.call(w, id); };
  w.clearInterval = function (id) { timeouts.delete(id); intervals.delete(id); return ci.call(w, id); };
  w.requestAnimationFrame = function (fn) {
    let id;
    id = raf.call(w, function () { frames.delete(id); return fn.apply(this, arguments); });
    frames.add(id);
    return id;
  };
  w.cancelAnimationFrame = function (id) { frames.delete(id); return caf.call(w, id); };
  if (ric) {
    w.requestIdleCallback = function (fn, options) {
      let id;
      id = ric.call(w, function () { idles.delete(id); return fn.apply(this, arguments); }, options);
      idles.add(id);
      return id;
    };
    w.cancelIdleCallback = function (id) { idles.delete(id); return cic.call(w, id); };
  }
  const fetch = w.fetch;
  if (fetch) {
    w.fetch = function () {
      requests++;
      let answered = false;
      const done = () => { if (!answered) { answered = true; requests--; } };
      try {
        const promise = fetch.apply(this, arguments);
        promise.then(done, done);
        return promise;
      } catch (e) { done(); throw e; }
    };
  }
  // Messages posted to a port of this page whose receiver has not run yet: a framework's scheduler (React's)
  // renders in message-channel slices and touches the DOM only when it commits, so while one is undelivered
  // the page is busy, however many frames pass without a mutation. Measured: re-shop-cart-checkout's reference
  // with Chromium's CPU throttled x10, the home page's links were missing after its header link's click in 9
  // of 10 runs without this, 0 of 10 with it. Counted per receiving port, only for ports
  // this page made, started and kept (one sent away or never started receives nothing here).
  const partner = new WeakMap(), started = new WeakSet(), gone = new WeakSet(), queued = new WeakMap();
  let messages = 0;
  const Port = w.MessagePort && w.MessagePort.prototype;
  if (w.MessageChannel && Port) {
    const received = function () {
      const n = queued.get(this) || 0;
      if (n > 0) { queued.set(this, n - 1); messages--; }
    };
    w.MessageChannel = new Proxy(w.MessageChannel, {
      construct(target, args, newTarget) {
        const c = Reflect.construct(target, args, newTarget);
        partner.set(c.port1, c.port2); partner.set(c.port2, c.port1);
        // registered before any of the app's: runs first, so a reply the handler posts is counted after it
        c.port1.addEventListener("message", received); c.port2.addEventListener("message", received);
        return c;
      },
    });
    const sentAway = (transfer) => {
      const list = Array.isArray(transfer) ? transfer : (transfer && transfer.transfer) || [];
      for (const item of list) { if (partner.has(item)) { gone.add(item); } }
    };
    const post = Port.postMessage, start = Port.start;
    Port.postMessage = function (message, transfer) {
      sentAway(transfer);
      const result = post.apply(this, arguments);
      const to = partner.get(this);
      if (to && started.has(to) && !gone.has(to)) { queued.set(to, (queued.get(to) || 0) + 1); messages++; }
      return result;
    };
    Port.start = function () { started.add(this); return start.apply(this, arguments); };
    const onmessage = Object.getOwnPropertyDescriptor(Port, "onmessage");
    if (onmessage && onmessage.set) {  // setting onmessage starts the port
      const set = function (fn) { started.add(this); onmessage.set.call(this, fn); };
      Object.defineProperty(Port, "onmessage", {...onmessage, set});
    }
    const postWindow = w.postMessage;
    w.postMessage = function (message, target, transfer) {
      sentAway(typeof target === "object" ? target : transfer);
      return postWindow.apply(this, arguments);
    };
    if (w.Worker) {
      const postWorker = w.Worker.prototype.postMessage;
      w.Worker.prototype.postMessage = function (message, transfer) {
        sentAway(transfer);
        return postWorker.apply(this, arguments);
      };
    }
  }
  hidden("__codesignBusy", () => messages > 0);
  const send = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function () {
    requests++;
    let answered = false;
    const done = () => { if (!answered) { answered = true; requests--; } };
    this.addEventListener("loadend", done);
    try { return send.apply(this, arguments); } catch (e) { done(); throw e; }
  };
  const opens = (owner, name) => {  // constructing one (or calling owner[name]) makes the page opaque
    const original = owner && owner[name];
    if (typeof original !== "function") { return; }
    owner[name] = new Proxy(original, {
      construct(target, args, newTarget) { opaque = true; return Reflect.construct(target, args, newTarget); },
      apply(target, self, args) { opaque = true; return Reflect.apply(target, self, args); },
    });
  };
  for (const name of ["WebSocket", "EventSource", "Worker", "SharedWorker", "BroadcastChannel"]) { opens(w, name); }
  if (w.IDBFactory) { opens(w.IDBFactory.prototype, "open"); }
  if (w.HTMLMediaElement) {  // an element playing out of the document too (new Audio())
    const play = w.HTMLMediaElement.prototype.play;
    w.HTMLMediaElement.prototype.play = function () { media.add(this); return play.apply(this, arguments); };
  }
  // strict: for an explicit wait, which must not end before anything that could change the page.
  hidden("__codesignPending", (horizon, strict) => {
    if (requests > 0 || messages > 0 || frames.size > 0 || idles.size > 0) { return true; }
    if (strict && (opaque || intervals.size > 0)) { return true; }
    if (strict) {
      for (const m of document.querySelectorAll("audio, video")) { media.add(m); }
      for (const m of media) { if (!m.paused && !m.ended) { return true; } }
    }
    const t = now();
    for (const due of timeouts.values()) { if (due - t <= horizon) { return true; } }
    for (const period of intervals.values()) { if (period <= horizon) { return true; } }
    const running = (a) => a.playState === "running" || a.pending;
    return Boolean(document.getAnimations && document.getAnimations().some(running));
  });
})();"""

_QUIET_JS = """async ([needed, most, fast, horizon]) => {
  if (document.fonts && document.fonts.ready) { await document.fonts.ready; }
  const frame = window.__codesignRaf || window.requestAnimationFrame.bind(window);
  const pending = window.__codesignPending, busy = window.__codesignBusy;
  let quiet = 0, frames = 0;
  const observer = new MutationObserver(() => { quiet = 0; });
  observer.observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  // How many frames this settle waited, for diagnostics and tests (a count, not a time: load-independent).
  const done = (settled) => {
    Object.defineProperty(window, "__codesignSettleFrames", {value: frames, configurable: true});
    return settled;
  };
  try {
    while (quiet < needed && frames < most) {
      await new Promise(r => frame(() => r()));
      quiet++; frames++;
      if (busy && busy()) { quiet = 0; }  // a render under way: its commit is still to come
      if (quiet >= fast && pending && !pending(horizon)) { return done(true); }
    }
  } finally { observer.disconnect(); }
  return done(quiet >= needed);
}"""


# An explicit wait of ``ms`` by the page's clock, ended early only when nothing could change the page before
# then (the module). Returns the milliseconds it waited and whether it ended early. A step's settle follows the
# wait and waits for timers due within ``horizon`` of its start, so the early end looks that far past the wait's
# end too (what the settle after the full wait would have waited for); ``margin``: a timer due right at the end
# may fire in the wait's last frame.
_WAIT_JS = """async ([ms, fast, horizon, margin]) => {
  const frame = window.__codesignRaf || window.requestAnimationFrame.bind(window);
  const timer = window.__codesignTimer || ((fn, t) => { const id = setTimeout(fn, t); return () => clearTimeout(id); });
  const pending = window.__codesignPending;
  const start = performance.now();
  let quiet = 0;
  const observer = new MutationObserver(() => { quiet = 0; });
  observer.observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  let early = false;
  try {
    for (let left = ms; left > 0; left = ms - (performance.now() - start)) {
      if (pending && quiet >= fast && !pending(left + horizon + margin, true)) { early = true; break; }
      // a frame, or the rest of the wait if that is shorter (frames pause in a page that is not shown)
      await new Promise(r => { const cancel = timer(r, left); frame(() => { cancel(); r(); }); });
      quiet++;
    }
  } finally { observer.disconnect(); }
  return [performance.now() - start, early];
}"""
WAIT_MARGIN_MS = 50


async def explicit_wait(page: Any, ms: int, inflight: set[Any] | None = None) -> bool:
    """A task's ``wait: {ms}`` step (see the module); True when it ended early. A request the browser sees in
    flight (one the page's scripts did not make: an image, a stylesheet) holds the wait to its full time."""
    if inflight:
        await page.wait_for_timeout(ms)
        return False
    args = [ms, FAST_QUIET_FRAMES, PENDING_HORIZON_MS, WAIT_MARGIN_MS]
    waited, early = await bounded(page.evaluate(_WAIT_JS, args), page, "waiting")
    if early and inflight:  # a request started meanwhile: the rest of the time, as before
        await page.wait_for_timeout(max(0.0, ms - waited))
        return False
    return bool(early)


# Chromium fails the requests it is connecting when the machine's network changes under it — an interface
# or address added or removed, e.g. by another program's container network — even to loopback: measured here,
# a veth pair added while a page's image was connecting failed it within 30 ms; 51 of 840 requests failed over
# 40 loads while pairs were added and removed every 0.2 s. No app can cause it, so no page it hit is the app's.
NETWORK_CHANGED = "net::ERR_NETWORK_CHANGED"


class AppUnresponsive(Exception):
    """The candidate's page did not answer while the browser did: the app's failure (FAIL, ``timeout``)."""


class BrowserFailure(Exception):
    """The browser itself did not answer (or crashed): an infrastructure failure, graded again next run."""


class TargetMissing(Exception):
    """A step's target does not exist once the page has settled."""


async def browser_answers(page: Any) -> bool:
    """True when a blank page in the same browser as ``page`` evaluates a script within ``HEALTH_BOUND_S``."""
    return await blank_page_answers(page.context.browser)


async def blank_page_answers(browser: Any) -> bool:
    """True when a blank page in this Playwright browser evaluates a script within ``HEALTH_BOUND_S``."""
    context = None
    try:
        context = await asyncio.wait_for(browser.new_context(), HEALTH_BOUND_S)
        blank = await asyncio.wait_for(context.new_page(), HEALTH_BOUND_S)
        return await asyncio.wait_for(blank.evaluate("1 + 1"), HEALTH_BOUND_S) == 2
    except Exception:
        return False
    finally:
        if context is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(context.close(), HEALTH_BOUND_S)


async def bounded(call: Awaitable[T], page: Any, what: str, bound_s: float | None = None) -> T:
    """Await a browser call on ``page`` with a bound; when it runs out, decide whose fault it is."""
    bound_s = bound_s or CALL_BOUND_S
    try:
        return await asyncio.wait_for(call, bound_s)
    except TimeoutError:
        if await browser_answers(page):
            raise AppUnresponsive(f"{what}: the page did not answer within {bound_s:g} s") from None
        raise BrowserFailure(f"{what}: the browser did not answer") from None


async def settle(page: Any, inflight: set[Any] | None = None) -> bool:
    """Wait until the page is settled (see the module); False when it kept changing past ``SETTLE_BOUND_S``."""
    deadline = time.monotonic() + SETTLE_BOUND_S
    while True:
        args = [QUIET_FRAMES, QUIET_FRAMES * 4, FAST_QUIET_FRAMES, PENDING_HORIZON_MS]
        quiet = await bounded(page.evaluate(_QUIET_JS, args), page, "settling the page")
        if quiet and not inflight:
            return True
        if time.monotonic() > deadline:
            return False
        if inflight:
            await asyncio.sleep(0.02)


async def target(
    page: Any,
    selector: str,
    inflight: set[Any] | None = None,
    visible: bool = True,
    enabled: bool = False,
    settled: bool = False,
) -> Any:
    """The first element matching ``selector`` once the page has settled. :class:`TargetMissing` at once if
    there is none, or (as asked) if it is hidden or disabled: on a settled page nothing will change that by
    itself, so waiting out a bound would only measure the clock. ``settled``: the caller has settled the page
    and done nothing to it since (settling again would only cost frames)."""
    if not settled:
        await settle(page, inflight)
    locator = page.locator(selector)
    if await bounded(locator.count(), page, f"counting {selector!r}") == 0:
        raise TargetMissing(f"no element matches {selector!r} once the page has settled")
    first = locator.first
    if visible and not await bounded(first.is_visible(), page, f"visibility of {selector!r}"):
        raise TargetMissing(f"{selector!r} is not visible once the page has settled")
    if enabled and not await bounded(first.is_enabled(), page, f"state of {selector!r}"):
        raise TargetMissing(f"{selector!r} is disabled once the page has settled")
    return first


def describe(error: BaseException, lines: int = 4) -> str:
    """A Playwright error as a reason: its first line and the last lines of its call log (what it waited for)."""
    text = str(error).strip()
    first, _, rest = text.partition("\n")
    log = [re.sub(r"\s+", " ", line).strip(" -") for line in rest.splitlines() if line.strip().startswith("-")]
    reason = re.sub(r"\s+", " ", first)[:300]
    if log:
        reason += " | waited for: " + " / ".join(entry[:160] for entry in log[-lines:])
    return reason
