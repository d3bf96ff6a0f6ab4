"""A probe's steps, performed on a page of the app: each waits for its target by the waiting rules
(``codesign.runtime.waiting``) and is recorded as an action with the page's state before and after it."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable
from typing import Any

from codesign._types import EvidenceItem
from codesign.evaluate.assertions import Check, check, failure_category
from codesign.evaluate.evidence import EvidenceSession, LoadedPage, state_fingerprint
from codesign.runtime import waiting
from codesign.runtime.browser import context_options
from codesign.runtime.waiting import AppUnresponsive, BrowserFailure, TargetMissing, bounded, describe, target
from codesign.tasks.schema import Criterion


class StepCheckFailed(Exception):
    """An ``expect`` step whose assertions do not all hold (a FAIL of the criterion, not an unreachable step)."""

    def __init__(self, checks: list[Check]) -> None:
        self.checks = checks
        super().__init__("; ".join(c.detail for c in checks))


class PointerBlocked(Exception):
    """A pointer step that could not be performed because another element covers its target."""


# The element at the target's centre when it is not the target itself (nor inside it): what takes the click.
_COVERING_JS = """e => {
  const r = e.getBoundingClientRect(), top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  if (!top || top === e || e.contains(top)) return null;
  const cls = typeof top.className === 'string' ? top.className.trim().split(/\\s+/).filter(Boolean) : [];
  return top.tagName.toLowerCase() + (top.id ? '#' + top.id : '') + cls.map(c => '.' + c).join('');
}"""


async def _pointer(element: Any, action: Awaitable[Any]) -> None:
    """A click, hover or check. When it cannot be performed, what covers the target is read afterwards, so the
    reason names it however far Playwright's retries got on a loaded machine (its call log may not yet say)."""
    try:
        await action
    except Exception as e:
        covering = None
        # Bounded like any browser call, not by the action bound (a test shortens that to 1 s).
        with contextlib.suppress(Exception):  # only a diagnosis: the step failed either way
            covering = await element.evaluate(_COVERING_JS, timeout=waiting.CALL_BOUND_S * 1000)
        if covering:
            raise PointerBlocked(f"{describe(e)} | the target is covered by {covering}") from e
        raise


async def perform(loaded: LoadedPage, name: str, s: Any, session: EvidenceSession) -> None:
    """One step. A target is looked up once the page has settled (missing: :class:`TargetMissing` at once);
    an existing one gets up to ``ACTION_BOUND_S`` to become actionable. The page settles after the step."""
    page, t = loaded.page, waiting.ACTION_BOUND_S * 1000

    # Settled by the page load or the step before, and untouched since: the lookup need not settle again.
    settled, loaded.settled = loaded.settled, False  # from here on the step may change the page

    async def el(enabled: bool = True, visible: bool = True) -> Any:
        return await target(page, s.selector, loaded.inflight, visible, enabled, settled=settled)

    match name:
        case "click":
            element = await el()
            await _pointer(element, element.click(timeout=t))
        case "fill":
            await (await el()).fill(s.value, timeout=t)
        case "press":
            await ((await el()).press(s.key, timeout=t) if s.selector else page.keyboard.press(s.key))
        case "select":
            await (await el()).select_option(s.value, timeout=t)
        case "hover":
            element = await el(enabled=False)
            await _pointer(element, element.hover(timeout=t))
        case "check":
            element = await el()
            await _pointer(element, element.check(timeout=t))
        case "goto":
            # A real load, as documented: moving to another #fragment of the same document (hash routing) is
            # no navigation for the browser (goto returns no response), so the page is reloaded there.
            response = await bounded(
                page.goto(session.base_url + s.route, wait_until="load", timeout=0), page, f"goto {s.route}"
            )
            if response is None:
                await bounded(page.reload(wait_until="load", timeout=0), page, f"reload {s.route}")
        case "scroll":
            if s.selector:
                await (await el(enabled=False)).scroll_into_view_if_needed(timeout=t)
            else:
                await bounded(page.evaluate("y => window.scrollTo(0, y)", s.y or 0), page, "scrolling")
        case "set_viewport":
            await page.set_viewport_size(context_options(s.viewport)["viewport"])
        case "expect":
            found = [await check(a, loaded, session) for a in s.checks]
            failed = [c for c in found if not c.ok]
            if failed:
                raise StepCheckFailed(failed)
        case "wait":
            # The task author's explicit wait (an animation, a debounce): the page as it is s.ms later, sooner
            # when nothing could change it before then (codesign.runtime.waiting).
            await waiting.explicit_wait(page, s.ms, loaded.inflight)
        case "wait_for":
            if s.state in ("attached", "visible"):  # something to appear: decided on the settled page
                await el(enabled=False, visible=s.state == "visible")
            else:  # something to go away: it gets the whole bound
                await page.locator(s.selector).first.wait_for(state=s.state, timeout=t)
    await loaded.settle()


async def run_steps(
    criterion: Criterion, loaded: LoadedPage, session: EvidenceSession, cited: list[str]
) -> tuple[str | None, str]:
    """Perform and record each step; returns what stopped them (None: nothing) and its failure category."""
    assert criterion.probe is not None  # steps belong to a probe (grade() checks it first)
    page = loaded.page
    for i, (name, step) in enumerate(criterion.probe.steps, start=1):
        before = await state_fingerprint(page)
        error, category = None, "element_never_reached"
        try:
            await perform(loaded, name, step, session)
        except StepCheckFailed as e:
            error, category = str(e), failure_category(criterion, e.checks)
        except (TargetMissing, PointerBlocked) as e:
            error = str(e)
        except (AppUnresponsive, BrowserFailure):
            raise
        except Exception as e:  # Playwright's TimeoutError and friends: say what it waited for (a dead browser
            error = describe(e)  # fails the state read below, and the grader's guard blames the browser)
        after = await state_fingerprint(page)
        record = {
            "step": name,
            "args": step.model_dump(exclude_none=True),
            "ok": error is None,
            "error": error,
            "before": before,
            "after": after,
            "state_changed": before != after,
        }
        cited.append(
            session.add(
                EvidenceItem(f"action:{criterion.id}.{i}", "action", loaded.route, loaded.viewport, data=record)
            )
        )
        if error and name == "expect":
            return f"step {i} (expect): {error}", category
        if error:
            return f"step {i} ({name} {record['args']}) could not be performed: {error}", category
    return None, "element_never_reached"
