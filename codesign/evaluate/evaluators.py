"""Evaluators: how each criterion is graded once the evidence is in."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from codesign._types import CriterionVerdict, Verdict
from codesign.evaluate import probes
from codesign.evaluate.evidence import EvidenceSession
from codesign.tasks.loader import Task
from codesign.tasks.schema import Criterion


@dataclass
class ProbeEvaluator:
    """Deterministic grading: each criterion's probe decides. A criterion without a probe cannot be
    graded here and counts as FAIL (``not_gradable``): a skipped check never counts as a pass."""

    name: str = "probe"
    concurrency: int = 4  # probes graded at once (each interactive probe has its own browser context)

    async def evaluate(self, task: Task, session: EvidenceSession) -> list[CriterionVerdict]:
        gate = asyncio.Semaphore(self.concurrency)

        async def one(c: Criterion) -> CriterionVerdict:
            if c.probe is None:
                return CriterionVerdict(
                    c.id,
                    c.kind,
                    c.preserve,
                    Verdict.FAIL.value,
                    "none",
                    "no deterministic probe; use an LLM evaluator to grade it",
                    [],
                    "not_gradable",
                )
            async with gate:
                return await probes.grade(c, session)

        return list(await asyncio.gather(*(one(c) for c in task.criteria)))
