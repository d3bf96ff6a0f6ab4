"""Criteria graded by the task author's own Playwright code (``script:`` in criteria.yaml).

Where the probe language cannot say it — geometry between several elements, a flow with branches, a
computed check — a task author writes an async Python function with the full Playwright API::

    async def check(page, expect):
        await page.get_by_role("button", name="Dark").click()
        await expect(page.locator("body")).to_have_css("background-color", "rgb(17, 17, 17)")

It runs in a fresh browser context (fresh storage) on the served app, traced. Verdicts: returns None,
True or ``(True, why)`` → PASS; raises ``AssertionError`` (what Playwright's ``expect`` raises) or returns
False / ``(False, why)`` → FAIL with that reason; a Playwright ``TimeoutError`` (a step waited for an
element the app never showed, as a ``click`` on a missing button does) → FAIL ``element_never_reached``;
the app hanging → FAIL ``timeout`` (graded again next run). The script itself failing otherwise (a syntax
error, a wrong selector API, a bug) is no verdict about the app: the criterion is ungraded
(``grader_error``) and its trial a grading error, graded again — never a PASS and never a zero. The trace
(``trace_<criterion>.zip``, open with ``playwright show-trace``), a final screenshot and a record of the
script's run with the page state before and after are evidence.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codesign._types import CriterionVerdict, EvidenceItem, Ungraded, Verdict
from codesign.evaluate.evidence import EvidenceSession, state_fingerprint
from codesign.runtime.waiting import AppUnresponsive, BrowserFailure, bounded, describe
from codesign.tasks.probes import viewport_label
from codesign.tasks.schema import Criterion


class ScriptError(Exception):
    """The author's script could not be loaded or run (not a verdict about the app)."""


# sys.path and sys.modules are process-wide: one script loads at a time.
_LOADING = threading.Lock()


def load_check(task_dir: Path, file: str, function: str) -> Callable[..., Any]:
    """The script's function, from a fresh module (scripts of two tasks never share state). The script may
    import helper modules from its own folder (``from helpers import pick``, at the top of the file): they are
    loaded fresh with it and forgotten after, so another task's ``helpers`` is never this one's."""
    path = task_dir / file
    folder = str(path.parent.resolve())
    spec = importlib.util.spec_from_file_location(f"codesign_check_{abs(hash(path))}", path)
    if spec is None or spec.loader is None:
        raise ScriptError(f"cannot load {file}")
    module = importlib.util.module_from_spec(spec)
    with _LOADING:
        before = set(sys.modules)
        sys.path.insert(0, folder)
        try:
            spec.loader.exec_module(module)
        except Exception as e:
            raise ScriptError(f"{file} does not load: {type(e).__name__}: {e}") from e
        finally:
            sys.path.remove(folder)
            for name in set(sys.modules) - before:  # the helpers from its folder: bound in the script, not shared
                origin = getattr(sys.modules[name], "__file__", None) or ""
                if origin.startswith(folder + os.sep):
                    del sys.modules[name]
    fn = getattr(module, function, None)
    if not inspect.iscoroutinefunction(fn):
        raise ScriptError(f"{file} has no async function {function!r}")
    return fn


def _outcome(result: Any) -> tuple[bool, str]:
    if result is None or result is True:
        return True, "the script's checks hold"
    if result is False:
        return False, "the script returned False"
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], bool):
        return result[0], str(result[1])
    raise ScriptError(f"the script returned {result!r}; return None, a bool or (bool, reason)")


async def grade(criterion: Criterion, task_dir: Path, session: EvidenceSession) -> CriterionVerdict:
    from playwright.async_api import TimeoutError as PlaywrightTimeout
    from playwright.async_api import expect

    spec = criterion.script
    assert spec is not None
    label = viewport_label(spec.viewport)
    cited: list[str] = []

    def verdict(v: Verdict, reason: str, category: str | None) -> CriterionVerdict:
        return CriterionVerdict(
            criterion.id, criterion.kind, criterion.preserve, v.value, "script", reason, cited, category
        )

    def script_bug(reason: str) -> CriterionVerdict:  # never a verdict about the app
        return CriterionVerdict.ungraded_by(criterion, "script", Ungraded.GRADER_ERROR, reason, cited)

    try:
        fn = load_check(task_dir, spec.file, spec.function)
    except ScriptError as e:
        return script_bug(str(e))
    context = await session.browser.context(spec.viewport, spec.color_scheme)
    try:
        await context.tracing.start(screenshots=True, snapshots=True)
        loaded = await session.open(spec.route, label, context=context)
        if loaded.load_error:
            session.timeouts.append(loaded.load_error)
            return verdict(Verdict.FAIL, loaded.load_error, "timeout")
        page = loaded.page
        offered = {"page": page, "context": context, "base_url": session.base_url, "expect": expect}
        wanted = {k: v for k, v in offered.items() if k in inspect.signature(fn).parameters}
        before = await state_fingerprint(page)
        bug: str | None = None
        category = "regressed" if criterion.preserve else "wrong"
        try:
            ok, reason = _outcome(await bounded(fn(**wanted), page, f"script {spec.file}", spec.timeout_s))
        except AssertionError as e:
            ok, reason = False, " ".join(str(e).split())[:2000] or "an assertion of the script failed"
        except (AppUnresponsive, BrowserFailure):
            raise
        except ScriptError as e:
            ok, reason, bug = False, str(e), str(e)
        except Exception as e:
            if not await session.browser.answers():  # the browser under the script is gone: not the script's bug
                raise BrowserFailure(f"script {spec.file}: the browser stopped answering: {describe(e)}") from e
            if isinstance(e, PlaywrightTimeout):  # waited for something the app never showed: the app's FAIL
                ok, category = False, "element_never_reached"
                reason = f"the script's step timed out: {describe(e)}"[:2000]
            else:  # the script's own bug: never a verdict about the app
                ok, reason = False, f"the script failed: {type(e).__name__}: {describe(e)}"[:2000]
                bug = reason
        after = await state_fingerprint(page)
        record = {
            "step": "script",
            "args": {"file": spec.file, "function": spec.function},
            "ok": bug is None and ok,
            "error": None if ok else reason,
            "before": before,
            "after": after,
            "state_changed": before != after,
            "url": page.url,
        }
        cited.append(session.add(EvidenceItem(f"action:{criterion.id}.1", "action", spec.route, label, data=record)))
        shot = await bounded(page.screenshot(full_page=False, type="png", timeout=0), page, "script screenshot")
        cited.append(
            session.add(
                EvidenceItem(
                    f"shot:{criterion.id}",
                    "screenshot",
                    spec.route,
                    label,
                    session.write(f"script_{criterion.id}.png", shot),
                )
            )
        )
        trace = session.out_dir / f"trace_{criterion.id}.zip"
        await context.tracing.stop(path=str(trace))
        cited.append(session.add(EvidenceItem(f"trace:{criterion.id}", "trace", spec.route, label, trace.name)))
    except AppUnresponsive as e:
        session.timeouts.append(str(e))
        return verdict(Verdict.FAIL, str(e), "timeout")
    finally:
        with contextlib.suppress(Exception):  # a dead browser's context: what failed is already raised
            await context.close()
    if bug:
        return script_bug(bug)
    if ok:
        return verdict(Verdict.PASS, reason, None)
    return verdict(Verdict.FAIL, reason, category)
