"""Run a criterion's deterministic probe against the served app and grade it.

Assertion-only probes read the already-loaded evidence page for their route and viewport.
Probes with steps get a fresh context (fresh storage), and every step is recorded as an action
with its before/after state, so interaction verdicts rest on actions that really happened.
"""

from __future__ import annotations

import contextlib

from codesign._types import CriterionVerdict, EvidenceItem, Verdict
from codesign.evaluate.actions import run_steps
from codesign.evaluate.assertions import Check, check, failure_category
from codesign.evaluate.evidence import EvidenceSession, LoadedPage
from codesign.runtime.waiting import AppUnresponsive, bounded
from codesign.tasks import probes as P
from codesign.tasks.schema import Criterion


async def grade(criterion: Criterion, session: EvidenceSession) -> CriterionVerdict:
    probe = criterion.probe
    assert probe is not None
    cited: list[str] = []
    loaded: LoadedPage | None = None
    context = None
    failed_step: str | None = None
    step_category = "element_never_reached"
    viewport = P.viewport_label(probe.viewport)
    timeout: str | None = None
    checks: list[Check] = []
    try:
        if probe.needs_browser and not probe.needs_own_page and (probe.route, viewport) in session.pages:
            loaded = session.pages[(probe.route, viewport)]
            key = f"{probe.route}@{viewport}"
            cited += [f"dom:{key}", f"shot:{key}", f"console:{key}"]
        elif probe.needs_browser:
            context = await session.browser.context(probe.viewport, probe.color_scheme)
            loaded = await session.open(probe.route, viewport, context=context)
            if not loaded.load_error:
                failed_step, step_category = await run_steps(criterion, loaded, session, cited)
        if loaded is not None and loaded.load_error:
            timeout = loaded.load_error
        elif not failed_step:
            for a in probe.expect:
                page = loaded.page if loaded is not None else None
                call = check(a, loaded, session)
                checks.append(await (bounded(call, page, f"checking {a[0]}") if page is not None else call))
        if context is not None and loaded is not None and timeout is None:
            shot = await bounded(
                loaded.page.screenshot(full_page=False, type="png", timeout=0), loaded.page, "probe screenshot"
            )
            cited.append(
                session.add(
                    EvidenceItem(
                        f"shot:{criterion.id}",
                        "screenshot",
                        probe.route,
                        viewport,
                        session.write(f"probe_{criterion.id}.png", shot),
                    )
                )
            )
    except AppUnresponsive as e:
        timeout = str(e)
    finally:
        if context is not None:
            with contextlib.suppress(Exception):  # a dead browser's context: what failed is already raised
                await context.close()
    if any(name == "source" for name, _ in probe.expect):
        cited.insert(0, "diff")
    probe_id = session.add(
        EvidenceItem(
            f"probe:{criterion.id}",
            "probe",
            probe.route,
            viewport,
            data=[{"ok": c.ok, "detail": c.detail} for c in checks],
        )
    )
    cited.append(probe_id)
    if timeout:
        session.timeouts.append(timeout)
        return _verdict(criterion, Verdict.FAIL, timeout, cited, "timeout")
    if failed_step:
        return _verdict(criterion, Verdict.FAIL, failed_step, cited, step_category)
    passed = sum(c.ok for c in checks)
    reason = "; ".join(("ok: " if c.ok else "failed: ") + c.detail for c in checks)
    if passed == len(checks):
        return _verdict(criterion, Verdict.PASS, reason, cited, None)
    if probe.partial and passed > 0:
        return _verdict(criterion, Verdict.PARTIAL, reason, cited, failure_category(criterion, checks))
    return _verdict(criterion, Verdict.FAIL, reason, cited, failure_category(criterion, checks))


def _verdict(c: Criterion, v: Verdict, reason: str, cited: list[str], category: str | None) -> CriterionVerdict:
    return CriterionVerdict(c.id, c.kind, c.preserve, v.value, "probe", reason, cited, category)
