"""How a criterion's grading ends: a verdict about the app, or ungraded with the grader's cause.

Only the candidate decides a verdict. Whatever grades a criterion (a probe, a script, a spec test, a judge)
runs inside :func:`guarded`, which sorts what went wrong:

- the app stopped answering while the browser did → the app's FAIL, ``timeout`` (graded again next run);
- the browser or the machine failed → ungraded, ``infra``;
- anything else the grader raised (a bug in a script, in a probe's runner, a judge's client) → ungraded,
  ``grader_error`` — unless the browser it used is gone, which makes it ``infra``;
- a verdict read in the evaluation's browser after the machine's network change failed a request of a page it
  kept (``EvidenceSession.network_changed``, :data:`~codesign.runtime.waiting.NETWORK_CHANGED`) → ungraded,
  ``infra``: that page is not the app's alone.

An ungraded criterion (but ``not_gradable``) makes its trial a ``grading_error``: never averaged in as a zero.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from codesign._types import CriterionVerdict, Ungraded, Verdict
from codesign.runtime.waiting import AppUnresponsive, BrowserFailure, describe
from codesign.tasks.schema import Criterion

# The graders that read pages of the evaluation's own browser (a spec runs its own; a command, none).
SESSION_BROWSER_GRADERS = ("probe", "script", "judge")


def app_timeout(criterion: Criterion, grader: str, reason: str, cited: list[str] | None = None) -> CriterionVerdict:
    """The app hung while the browser answered: the app's failure (graded again next run, see ``transient``)."""
    return CriterionVerdict(
        criterion.id,
        criterion.kind,
        criterion.preserve,
        Verdict.FAIL.value,
        grader,
        reason,
        list(cited or []),
        "timeout",
    )


async def guarded(
    criterion: Criterion, grader: str, grading: Awaitable[CriterionVerdict], session: Any
) -> CriterionVerdict:
    """``grading``'s verdict, or what its failure means (see the module). ``session`` is the evaluation's
    :class:`~codesign.evaluate.evidence.EvidenceSession` (its browser decides the blame; app timeouts are noted)."""
    return (await guarded_all([criterion], grader, _one(criterion, grading), session))[criterion.id]


async def _one(criterion: Criterion, grading: Awaitable[CriterionVerdict]) -> dict[str, CriterionVerdict]:
    return {criterion.id: await grading}


async def guarded_all(
    criteria: list[Criterion], grader: str, grading: Awaitable[dict[str, CriterionVerdict]], session: Any
) -> dict[str, CriterionVerdict]:
    """Like :func:`guarded` for a grader that decides several criteria at once (one spec run)."""
    try:
        verdicts = await grading
    except AppUnresponsive as e:
        session.timeouts.append(str(e))
        return {c.id: app_timeout(c, grader, str(e)) for c in criteria}
    except BrowserFailure as e:
        cause, reason = Ungraded.INFRA, str(e)
    except Exception as e:  # never a verdict about the app: the grader's failure, or the browser's
        if await session.browser.answers():
            cause, reason = Ungraded.GRADER_ERROR, f"the {grader} failed: {type(e).__name__}: {describe(e)}"
        else:
            cause = Ungraded.INFRA
            reason = f"the browser stopped answering while the {grader} ran ({type(e).__name__}: {describe(e)})"
    else:
        lost = session.network_changed if grader in SESSION_BROWSER_GRADERS else []
        if not lost:
            return verdicts
        reason = (f"the machine's network changed under the browser while it loaded the app ({len(lost)} "
                  f"request(s) failed: {'; '.join(lost[:3])}): not the app's doing, graded again")  # fmt: skip
        by_id = {c.id: c for c in criteria}
        return {i: v if v.ungraded else CriterionVerdict.ungraded_by(by_id[i], v.grader, Ungraded.INFRA, reason,
                                                                     v.evidence_ids)
                for i, v in verdicts.items()}  # fmt: skip
    return {c.id: CriterionVerdict.ungraded_by(c, grader, cause, reason) for c in criteria}
