"""When a page counts as settled: after FAST_QUIET_FRAMES quiet frames when nothing the page scheduled could
still change it, else after QUIET_FRAMES as always — and never before a change the page has scheduled. Real
headless Chromium; the frames a settle waited are counted by the settle itself (how long a round trip to the
page takes depends on load, what the settle waited for does not)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from codesign.runtime.waiting import FAST_QUIET_FRAMES, PENDING_HORIZON_MS, QUIET_FRAMES, explicit_wait, settle

pytestmark = pytest.mark.browser


def on_page(loop, browser, html: str, before: str, then: Callable[[Any], Awaitable[Any]]) -> Any:
    """Open ``html``, settle what loading scheduled, run ``before`` in it (started, not awaited), then ``then``."""

    async def go() -> Any:
        context = await browser.context("desktop")
        try:
            page = await context.new_page()
            # Served by the browser itself (a navigation, as an app's page is: the watcher is installed before
            # the page's scripts run; set_content would reuse the blank document).
            await page.route("http://app.test/", lambda route: route.fulfill(body=html, content_type="text/html"))
            await page.goto("http://app.test/")
            await settle(page)
            if before:
                await page.evaluate(f"() => {{ {before}; }}")
            return await then(page)
        finally:
            await context.close()

    return loop.run(go())


def frames_to_settle(loop, browser, html: str, before: str = "") -> tuple[int, Any]:
    """Open ``html``, run ``before`` in it, settle; the frames that took, and the page's final text."""

    async def then(page: Any) -> tuple[int, Any]:
        await settle(page)
        return await page.evaluate("window.__codesignSettleFrames"), await page.inner_text("body")

    return on_page(loop, browser, html, before, then)


def test_a_quiet_page_settles_after_the_short_count(loop, browser):
    frames, _ = frames_to_settle(loop, browser, "<p>static</p>")
    assert frames == FAST_QUIET_FRAMES < QUIET_FRAMES


@pytest.mark.parametrize(
    "pending",
    [
        "setTimeout(() => {}, 900)",  # a timer due within the horizon
        "setInterval(() => {}, 500)",  # an interval that short
        "(function loop() { requestAnimationFrame(loop); })()",  # frame callbacks of its own
        "document.body.animate([{opacity: 0}, {opacity: 1}], {duration: 5000})",  # a running animation
        "fetch('data:text/plain,x').then(r => new Promise(() => {}))",  # answered: not pending (control below)
    ],
    ids=["timer", "interval", "frames", "animation", "answered-fetch"],
)
def test_a_page_with_something_pending_waits_the_full_count(loop, browser, pending):
    frames, _ = frames_to_settle(loop, browser, "<p>busy</p>", pending)
    if "fetch" in pending:  # the request was answered: nothing pending, the short count
        assert frames == FAST_QUIET_FRAMES
    else:
        assert frames >= QUIET_FRAMES


def test_a_far_timer_does_not_hold_the_page_and_a_timed_change_is_always_seen(loop, browser):
    # A timer due in a minute cannot change what is graded now: the short count.
    frames, _ = frames_to_settle(loop, browser, "<p>x</p>", "setTimeout(() => {}, 60000)")
    assert frames == FAST_QUIET_FRAMES
    # A change 80 ms away (past the short count at 60 Hz) is in the settled page.
    _, text = frames_to_settle(
        loop, browser, "<p id=t>before</p>", "setTimeout(() => { t.textContent = 'after'; }, 80)"
    )
    assert text == "after"
    # So is one a request's answer brings (the request is pending until then).
    _, text = frames_to_settle(
        loop,
        browser,
        "<p id=t>before</p>",
        "fetch('data:text/plain,after').then(r => r.text()).then(x => new Promise(r => setTimeout(() => r(x), 60)))"
        ".then(x => { t.textContent = x; })",
    )
    assert text == "after"


# A framework's deferred render, as React's transitions (React Router 7 navigates in one): its scheduler works
# in message-channel slices, yielding to the browser between them, and touches the DOM only when it commits.
# On a loaded machine the slices spread over many frames without a mutation (a CI run's probe found the page
# "settled" before the new route committed). ``ms`` of such work, then the commit.
def _deferred_render(ms: int) -> str:
    return (
        f"const c = new MessageChannel(), end = performance.now() + {ms};"
        "c.port1.onmessage = () => { if (performance.now() < end) { c.port2.postMessage(0); }"
        " else { t.textContent = 'after'; } };"
        "c.port2.postMessage(0)"
    )


@pytest.mark.parametrize("ms", [200, 1500])  # past the short count and the full count of frames, at 60 Hz
def test_a_render_the_page_has_scheduled_is_waited_for_however_many_frames_it_spans(loop, browser, ms):
    frames, text = frames_to_settle(loop, browser, "<p id=t>before</p>", _deferred_render(ms))
    assert text == "after"
    assert frames > FAST_QUIET_FRAMES  # the frames the render spanned were waited through


def test_a_message_nobody_will_receive_does_not_hold_the_page(loop, browser):
    # A port never started, or a started one sent away (to the window itself): nothing here will receive it.
    for before in [
        "const c = new MessageChannel(); c.port2.postMessage(0)",
        "const c = new MessageChannel(); c.port1.onmessage = () => {};"
        " window.postMessage(0, '*', [c.port1]); c.port2.postMessage(0)",
        "const c = new MessageChannel(); c.port1.start();"
        " window.postMessage(0, {targetOrigin: '*', transfer: [c.port1]}); c.port2.postMessage(0)",
    ]:
        frames, _ = frames_to_settle(loop, browser, "<p>x</p>", before)
        assert frames == FAST_QUIET_FRAMES, before


def after_explicit_wait(loop, browser, html: str, before: str, ms: int) -> tuple[bool, Any]:
    """Open ``html``, settle, run ``before`` in it, then a task's ``wait: {ms}``: whether it ended early, and
    the page's text right after it (no settle in between: what the wait itself showed)."""

    async def then(page: Any) -> tuple[bool, Any]:
        early = await explicit_wait(page, ms)
        return early, await page.inner_text("body")

    return on_page(loop, browser, html, before, then)


def test_an_explicit_wait_on_a_quiet_page_ends_early_and_shows_what_the_full_wait_would(loop, browser):
    assert after_explicit_wait(loop, browser, "<p>static</p>", "", 5000) == (True, "static")
    # A change due within the wait is waited for and seen, then the wait ends.
    change = "setTimeout(() => { t.textContent = 'after'; }, 300)"
    assert after_explicit_wait(loop, browser, "<p id=t>before</p>", change, 5000) == (True, "after")
    # One due after the wait and the settle that follows it would have ended cannot be in what the step shows:
    # not waited for, and not there.
    late = "setTimeout(() => { t.textContent = 'after'; }, 60000)"
    assert after_explicit_wait(loop, browser, "<p id=t>before</p>", late, 500) == (True, "before")
    # One due after the wait but within the settle's horizon past its end is what the step's settle would have
    # waited for after the full wait: the wait runs its full time (and the settle after it sees the change).
    near = f"setTimeout(() => {{ t.textContent = 'after'; }}, {300 + PENDING_HORIZON_MS // 2})"
    assert after_explicit_wait(loop, browser, "<p id=t>before</p>", near, 300) == (False, "before")
    # A running animation is waited out, and what its end does is seen.
    animated = "t.animate([{opacity: 0}, {opacity: 1}], {duration: 400}).onfinish = () => { t.textContent = 'after'; }"
    assert after_explicit_wait(loop, browser, "<p id=t>before</p>", animated, 5000) == (True, "after")
    # A page changing through what is not tracked (a message chain, as a framework's scheduler) is waited for
    # while it changes: the wait ends only after frames without a mutation.
    chain = (
        "const c = new MessageChannel(), end = performance.now() + 300; let n = 0;"
        "c.port1.onmessage = () => { t.dataset.n = ++n;"
        " if (performance.now() < end) { c.port2.postMessage(0); } else { t.textContent = 'after'; } };"
        "c.port2.postMessage(0)"
    )
    assert after_explicit_wait(loop, browser, "<p id=t>before</p>", chain, 5000) == (True, "after")


def _silent_wav(seconds: float) -> str:
    """A data URL of ``seconds`` of silence: media that plays on by itself."""
    import base64
    import io
    import wave

    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(1)
        w.setframerate(8000)
        w.writeframes(b"\x80" * int(8000 * seconds))
    return "data:audio/wav;base64," + base64.b64encode(out.getvalue()).decode()


@pytest.mark.parametrize(
    "opaque",
    [
        "setInterval(() => {}, 60000)",  # an interval: when it fires next is not tracked
        "setTimeout('1', 60000)",  # a timer given as a string
        "new WebSocket('ws://127.0.0.1:9/')",  # a socket may bring a message at any time
        "new BroadcastChannel('x')",  # so may another page
        "indexedDB.open('x')",  # its callbacks are not tracked
        f"const a = new Audio('{_silent_wav(30)}'); a.loop = true; a.play()",  # playing media (not in the page)
    ],
    ids=["interval", "string-timer", "websocket", "broadcast-channel", "indexeddb", "media"],
)
def test_an_explicit_wait_is_waited_out_when_the_page_has_anything_untracked(loop, browser, opaque):
    assert after_explicit_wait(loop, browser, "<p>x</p>", opaque, 300) == (False, "x")
