"""When a page counts as settled: after FAST_QUIET_FRAMES quiet frames when nothing the page scheduled could
still change it, else after QUIET_FRAMES as always — and never before a change the page has scheduled. Real
headless Chromium; the frames a settle waited are counted by the settle itself (how long a round trip to the
page takes depends on load, what the settle waited for does not)."""

from __future__ import annotations

from typing import Any

import pytest

from codesign.runtime.waiting import FAST_QUIET_FRAMES, QUIET_FRAMES, settle

pytestmark = pytest.mark.browser


def frames_to_settle(loop, browser, html: str, before: str = "") -> tuple[int, Any]:
    """Open ``html``, run ``before`` in it, settle; the frames that took, and the page's final text."""

    async def go() -> tuple[int, Any]:
        context = await browser.context("desktop")
        try:
            page = await context.new_page()
            # Served by the browser itself (a navigation, as an app's page is: the watcher is installed before
            # the page's scripts run; set_content would reuse the blank document).
            await page.route("http://app.test/", lambda route: route.fulfill(body=html, content_type="text/html"))
            await page.goto("http://app.test/")
            await settle(page)  # what loading scheduled is done
            if before:
                await page.evaluate(f"() => {{ {before}; }}")  # started, not awaited
            await settle(page)
            return await page.evaluate("window.__codesignSettleFrames"), await page.inner_text("body")
        finally:
            await context.close()

    return loop.run(go())


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
