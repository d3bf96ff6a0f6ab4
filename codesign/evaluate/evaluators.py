"""Evaluators: how each criterion is graded once the evidence is in."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from codesign._types import Count, CriterionVerdict, NonNegative, Seconds, Ungraded, Verdict
from codesign.construct import construct
from codesign.errors import ConfigError
from codesign.evaluate import commands, probes, quoting, scripts, specs
from codesign.evaluate.audit import AuditViolation, audit
from codesign.evaluate.evidence import EvidenceSession
from codesign.evaluate.judge import CallStats, Consultant, Consultation, JudgeReply, VerifierReply, prompt
from codesign.evaluate.judge_tools import BrowserTools
from codesign.evaluate.outcomes import guarded, guarded_all
from codesign.evaluate.quoting import select_evidence, user_message
from codesign.runtime.waiting import AppUnresponsive, BrowserFailure, describe
from codesign.tasks.loader import Task
from codesign.tasks.schema import Criterion


@dataclass
class ProbeEvaluator:
    """Deterministic grading: each criterion's probe decides. A criterion without a probe cannot be
    graded here and counts as FAIL (``not_gradable``): a skipped check never counts as a pass."""

    # Settings that do not change what it does: left out of content keys (codesign.build.behaviour).
    not_in_key = ("name", "concurrency", "timeout_s", "max_retries")

    name: str = "probe"
    concurrency: Count = 4  # probes graded at once (each interactive probe has its own browser context)
    timeout_s: Seconds = 1800.0  # a whole evaluation (evidence and grading); far above what a working app needs
    max_retries: NonNegative = 1  # gradings again, within the run, of a trial whose grading failed

    async def evaluate(self, task: Task, session: EvidenceSession) -> list[CriterionVerdict]:
        gate = asyncio.Semaphore(self.concurrency)
        spec_verdicts = await _spec_verdicts(task, session)

        async def one(c: Criterion) -> CriterionVerdict:
            if c.id in spec_verdicts:
                return spec_verdicts[c.id]
            if not c.deterministic:
                reason = "no deterministic probe or script; use an LLM evaluator to grade it"
                return CriterionVerdict.ungraded_by(c, "none", Ungraded.NOT_GRADABLE, reason)
            async with gate:
                if c.script is not None:
                    return await guarded(c, "script", scripts.grade(c, task.dir, session), session)
                return await guarded(c, "probe", probes.grade(c, session), session)

        graded = await asyncio.gather(*(one(c) for c in task.criteria if c.command is None))
        return _in_task_order(task, [*graded, *await _command_verdicts(task, session)])


async def _command_verdicts(task: Task, session: EvidenceSession) -> list[CriterionVerdict]:
    """Every command criterion's verdict, one at a time after every other criterion is graded (a command may
    write files; see :mod:`codesign.evaluate.commands`)."""
    wanted = [c for c in task.criteria if c.command is not None]
    return [await guarded(c, "command", commands.grade(c, task.dir, session), session) for c in wanted]


def _in_task_order(task: Task, verdicts: list[CriterionVerdict]) -> list[CriterionVerdict]:
    by_id = {v.criterion_id: v for v in verdicts}
    return [by_id[c.id] for c in task.criteria]


async def _spec_verdicts(task: Task, session: EvidenceSession) -> dict[str, CriterionVerdict]:
    """Every spec criterion's verdict, from one runner run (see :mod:`codesign.evaluate.specs`)."""
    wanted = [c for c in task.criteria if c.spec is not None]
    if not wanted:
        return {}
    return await guarded_all(wanted, "spec", specs.grade_specs(task, session, session.scratch_root), session)


_RANK = {"FAIL": 0, "PARTIAL": 1, "PASS": 2}


@dataclass
class LLMEvaluator:
    """Judge-then-refute: a judge model grades each criterion from selected evidence (and its own browser
    actions), a separately configured verifier challenges every PASS and PARTIAL, and the evidence audit
    aborts the trial when a positive verdict lacks the evidence its claim needs. ``use_probes`` (hybrid)
    grades criteria that carry a deterministic probe with the probe instead."""

    # Settings that do not change what it does: left out of content keys (codesign.build.behaviour).
    not_in_key = ("name", "concurrency", "timeout_s", "max_retries", "forbid_same_family")

    judge: dict[str, Any]  # a model config (the same shape as the model group's)
    verifier: dict[str, Any] | None = None  # null: no refutation step
    name: str = "llm"
    use_probes: bool = False
    max_actions: NonNegative = 8  # browser actions per criterion, per judge or verifier
    max_format_retries: NonNegative = 2  # malformed replies re-asked before the criterion is a grader error
    max_calls: Count = 12  # model calls per criterion, per judge or verifier; reaching it is a grader error
    criterion_timeout_s: Seconds = 600.0  # wall time per criterion, per judge or verifier; likewise
    max_retries: NonNegative = 1  # gradings again, within the run, of a trial whose grading failed
    concurrency: Count = 4  # criteria graded at once
    judge_prompt: str = "judge_v1.md"
    verifier_prompt: str = "verifier_v1.md"
    aria: bool = True  # collect ARIA snapshots (accessibility evidence)
    frames: list[float] = field(default_factory=lambda: [0.5, 1.5])  # timed frames after load (motion)
    audit: bool = True
    timeout_s: Seconds = 3600.0  # a whole evaluation, model calls included
    forbid_same_family: bool = False  # refuse a judge or verifier of the solver's family (preflight)
    judge_samples: Count = 1  # judge each criterion this many times (seeds seed, seed+1, …): the majority stands
    structured: Literal["auto", "json_schema", "off"] = "auto"  # replies by JSON schema (auto: where litellm knows)
    _stats: dict[str, CallStats] = field(default_factory=dict)
    _errors: int = 0

    @classmethod
    def key_material(cls, cfg: dict[str, Any]) -> dict[str, str]:
        """The judge's and verifier's prompt files by content: editing one re-grades (codesign.build)."""
        import hashlib

        out = {}
        for field_name in ("judge_prompt", "verifier_prompt"):
            text = prompt(cfg.get(field_name) or getattr(cls, field_name))
            out[field_name] = hashlib.sha256(text.encode()).hexdigest()[:16]
        return out

    def check(self) -> None:
        for field_name in ("judge_prompt", "verifier_prompt"):
            try:
                prompt(getattr(self, field_name))
            except OSError as e:
                raise ConfigError(
                    f"evaluator.{field_name}={getattr(self, field_name)!r} cannot be read: {e}",
                    "name a file of codesign/evaluate/prompts/ (judge_v1.md) or give a path to your own prompt file",
                ) from None
        for cfg in (self.judge, self.verifier):
            model = construct(cfg) if cfg else None
            if model is not None and hasattr(model, "check"):
                model.check()

    def evidence_options(self) -> dict[str, Any]:
        return {"aria": self.aria, "frames": tuple(self.frames)}

    def telemetry(self) -> dict[str, Any]:
        out: dict[str, Any] = {"evaluator_errors": self._errors}
        for role, s in self._stats.items():
            out |= {
                f"{role}_calls": s.calls,
                f"{role}_input_tokens": s.input_tokens,
                f"{role}_output_tokens": s.output_tokens,
                f"{role}_cost_usd": s.cost_usd,
                f"{role}_cost_source": s.cost_source,
                f"{role}_format_retries": s.format_retries,
                f"{role}_abandoned_calls": s.abandoned,
                f"{role}_structured": s.structured,
            }
        for role, cfg in (("judge", self.judge), ("verifier", self.verifier)):
            if cfg:
                out[f"{role}_model"] = cfg.get("name")
                out[f"{role}_temperature"] = cfg.get("temperature")
                out[f"{role}_seed"] = cfg.get("seed")
        return out

    def _consultant(self, role: str, sample: int = 0) -> Consultant:
        cfg = self.judge if role == "judge" else self.verifier
        assert cfg is not None  # a role is consulted only when it is configured
        if sample:  # another sample of the same judge: the next seed (its temperature as configured)
            cfg = {**cfg, "seed": (cfg.get("seed") or 0) + sample}
        schema = JudgeReply if role == "judge" else VerifierReply
        stats = self._stats.setdefault(role, CallStats())
        model = construct(cfg)
        # Only a model that can be asked by schema is (a litellm model); "auto" only where litellm says it works.
        can = hasattr(model, "supports_structured")
        ask = can and (self.structured == "json_schema" or (self.structured == "auto" and model.supports_structured()))
        return Consultant(
            model,
            prompt(self.judge_prompt if role == "judge" else self.verifier_prompt),
            schema,
            stats,
            self.max_actions,
            self.max_format_retries,
            self.max_calls,
            self.criterion_timeout_s,
            ask,
        )

    async def evaluate(self, task: Task, session: EvidenceSession) -> list[CriterionVerdict]:
        gate = asyncio.Semaphore(self.concurrency)
        spec_verdicts = await _spec_verdicts(task, session) if self.use_probes else {}

        async def one(c: Criterion) -> CriterionVerdict:
            if c.id in spec_verdicts:
                return spec_verdicts[c.id]
            async with gate:
                if self.use_probes and c.script is not None:
                    return await guarded(c, "script", scripts.grade(c, task.dir, session), session)
                if self.use_probes and c.probe is not None:
                    return await guarded(c, "probe", probes.grade(c, session), session)
                return await guarded(c, "judge", self._grade(task, c, session), session)

        if self.use_probes:  # hybrid: command criteria by their command, after the others
            graded = await asyncio.gather(*(one(c) for c in task.criteria if c.command is None))
            verdicts = _in_task_order(task, [*graded, *await _command_verdicts(task, session)])
        else:
            verdicts = list(await asyncio.gather(*(one(c) for c in task.criteria)))
        problems = audit(verdicts, session.items) if self.audit else []
        if problems:
            raise AuditViolation(problems, verdicts)
        return verdicts

    async def _consult(
        self, role: str, task: Task, c: Criterion, session: EvidenceSession, extra: str = "", sample: int = 0
    ) -> Consultation:
        route = c.probe.route if c.probe else task.manifest.environment.routes[0]
        viewport = c.probe.viewport if c.probe else ("mobile" if c.kind == "responsive" else "desktop")
        if not isinstance(viewport, str):  # a probe's custom size: the judge's tools use the nearest named one
            viewport = "mobile" if viewport.mobile else "desktop"
        boundary = quoting.new_boundary()  # looked up on the module: a test swaps in a constant one
        who = f"{role}:{c.id}" if not sample else f"{role}{sample + 1}:{c.id}"  # each sample's actions its own ids
        tools = BrowserTools(session, who, route, viewport, self.max_actions, boundary)
        try:
            message = user_message(task, c, select_evidence(c, session), session, boundary, extra)
            return await self._consultant(role, sample).consult(message, tools)
        finally:
            await tools.close()

    async def _judge_samples(
        self, task: Task, c: Criterion, session: EvidenceSession
    ) -> tuple[Consultation, list[str], dict[str, Any]]:
        """The judge's consultation that stands — with ``judge_samples`` > 1, one of the majority (ties go to
        the lower verdict: noise never raises a score) — every sample's verdict, and the transcripts."""
        if self.judge_samples == 1:
            judged = await self._consult("judge", task, c, session)
            return judged, [], {"judge": judged.transcript}
        runs = list(
            await asyncio.gather(
                *(self._consult("judge", task, c, session, sample=i) for i in range(self.judge_samples))
            )
        )
        trace = {"judge_samples": [r.transcript for r in runs]}
        answered = [r for r in runs if r.reply is not None]
        if len(answered) < len(runs):  # a sample without a verdict: no majority to speak of
            failed = next(r for r in runs if r.reply is None)
            error = f"sample {runs.index(failed) + 1} of {len(runs)}: {failed.error}"
            return Consultation(None, error, failed.actions, failed.transcript), [], trace
        said = [str(getattr(r.reply, "verdict", "")) for r in answered]
        majority = max(set(said), key=lambda v: (said.count(v), -_RANK[v]))
        return answered[said.index(majority)], said, trace

    async def _grade(self, task: Task, c: Criterion, session: EvidenceSession) -> CriterionVerdict:
        judged, samples, trace = await self._judge_samples(task, c, session)
        if judged.reply is None:  # no valid verdict: the judge's failure, never the app's FAIL
            self._errors += 1
            session.write(f"transcripts/{c.id}.json", json.dumps(trace, default=str, indent=1))
            return CriterionVerdict.ungraded_by(
                c, "judge", Ungraded.GRADER_ERROR, f"the judge gave no verdict: {judged.error}", judged.actions
            )
        r = judged.reply
        assert isinstance(r, JudgeReply)  # the judge's consultant parses its reply with JudgeReply
        verdict = CriterionVerdict(
            c.id,
            c.kind,
            c.preserve,
            r.verdict,
            "judge",
            r.reason,
            list(r.evidence_ids),
            None if r.verdict == "PASS" else (r.failure_category or "wrong"),
            samples=samples or None,
        )
        if self.verifier and r.verdict in ("PASS", "PARTIAL"):
            extra = "## The judge's verdict (to challenge)\n" + json.dumps(
                {"verdict": r.verdict, "reason": r.reason, "evidence_ids": r.evidence_ids}
            )
            try:
                challenged = await self._consult("verifier", task, c, session, extra)
            except (AppUnresponsive, BrowserFailure):
                raise  # the app's or the browser's: sorted by guarded()
            except Exception as e:  # the verifier's client failed: its error, not the judge's, and the PASS kept
                if not await session.browser.answers():
                    raise
                challenged = Consultation(None, f"{type(e).__name__}: {describe(e)}")
            trace["verifier"] = challenged.transcript
            if challenged.reply is None:  # an unverified positive is no verdict yet: neither a PASS nor a FAIL
                self._errors += 1
                verdict.original_verdict, verdict.verdict = verdict.verdict, Verdict.UNGRADED.value
                verdict.grader, verdict.failure_category = "verifier", None
                verdict.ungraded = Ungraded.GRADER_ERROR.value
                verdict.reason = f"the verifier gave no verdict on the judge's {r.verdict}: {challenged.error}"
                verdict.refutation = {"error": challenged.error, "actions": challenged.actions}
            else:
                v = challenged.reply
                assert isinstance(v, VerifierReply)  # likewise the verifier's, with VerifierReply
                verdict.refutation = {
                    "refuted": v.refuted,
                    "verdict": v.verdict,
                    "reason": v.reason,
                    "evidence_ids": v.evidence_ids,
                    "actions": challenged.actions,
                }
                lowered = v.verdict or "FAIL"
                if v.refuted and _RANK[lowered] < _RANK[verdict.verdict]:
                    verdict.original_verdict, verdict.verdict = verdict.verdict, lowered
                    verdict.grader, verdict.failure_category = "verifier", "refuted"
                    verdict.reason = f"{verdict.reason} | refuted: {v.reason}"
                    verdict.evidence_ids = list(dict.fromkeys([*verdict.evidence_ids, *v.evidence_ids]))
        session.write(f"transcripts/{c.id}.json", json.dumps(trace, default=str, indent=1))
        return verdict
