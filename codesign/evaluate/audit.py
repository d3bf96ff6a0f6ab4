"""The evidence audit: positive LLM verdicts must rest on the evidence their kind of claim needs.

A PASS or PARTIAL from a judge or verifier on a visual or responsive criterion must cite a screenshot;
on an interaction criterion it must cite a recorded action that succeeded and changed the page's state;
and every cited id must exist. A violation aborts the evaluation of that trial: aborted trials are
reported separately and left out of the scores (the paper's rule). Deterministic probe verdicts and
FAIL verdicts make no claim of satisfaction and are not audited.
"""

from __future__ import annotations

from codesign._types import CriterionVerdict, EvidenceItem

VISUAL_KINDS = ("visual", "responsive")


class AuditViolation(Exception):
    """Raised to abort a trial's evaluation; carries the verdicts graded so far for the record."""

    def __init__(self, problems: list[str], verdicts: list[CriterionVerdict]):
        self.problems, self.verdicts = problems, verdicts
        super().__init__("evidence audit failed: " + "; ".join(problems))


def audit(verdicts: list[CriterionVerdict], items: dict[str, EvidenceItem]) -> list[str]:
    problems = []
    for v in verdicts:
        if v.grader not in ("judge", "verifier") or v.verdict == "FAIL":
            continue
        cited = [items.get(i) for i in v.evidence_ids]
        unknown = [i for i, item in zip(v.evidence_ids, cited, strict=True) if item is None]
        if unknown:
            problems.append(f"{v.criterion_id}: {v.verdict} cites evidence that does not exist: {unknown}")
        found = [c for c in cited if c is not None]
        if v.kind in VISUAL_KINDS and not any(c.kind in ("screenshot", "frames") for c in found):
            problems.append(f"{v.criterion_id}: visual {v.verdict} verdict cites no screenshot")
        if v.kind == "interaction" and not any(
            c.kind == "action" and c.data.get("ok") and c.data.get("state_changed") for c in found
        ):
            problems.append(
                f"{v.criterion_id}: interaction {v.verdict} verdict cites no recorded action that "
                "changed the page's state"
            )
    return problems
