"""Evaluate one final state: materialize baseline + patch, build, serve, gather evidence, grade."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from codesign._protocols import Evaluator
from codesign._types import CriterionVerdict, Evaluation, EvidenceItem, TrialStatus, Ungraded, Verdict
from codesign.evaluate.audit import AuditViolation
from codesign.evaluate.evidence import EvidenceSession
from codesign.redact import redact, redact_data
from codesign.runtime.browser import Browser
from codesign.runtime.serve import serving
from codesign.sandbox import scratch as scratch_dirs
from codesign.sandbox.candidate import build_app, build_candidate_sandbox
from codesign.tasks.loader import Task
from codesign.workspace import PatchError, apply_patch, copy_tree, remove_escaping_symlinks

VIEWPORTS = ["desktop", "mobile"]


# Where candidate code runs when no trial names a sandbox (the task gate, calibration): confined locally.
DEFAULT_SANDBOX: dict[str, Any] = {"_target_": "codesign.sandbox.local.LocalSandbox"}


def _all_fail(task: Task, reason: str, cited: list[str], category: str) -> list[CriterionVerdict]:
    return [
        CriterionVerdict(c.id, c.kind, c.preserve, Verdict.FAIL.value, "none", reason, cited, category)
        for c in task.criteria
    ]


def grading_failure_message(failed: list[CriterionVerdict]) -> str:
    """One line per cause: ``grader_error ×2 (c1, c2): the judge gave no verdict: …``."""
    by_cause: dict[str, list[CriterionVerdict]] = {}
    for v in failed:
        by_cause.setdefault(v.ungraded or "?", []).append(v)
    return "\n".join(
        f"{cause} ×{len(vs)} ({', '.join(v.criterion_id for v in vs)}): {vs[0].reason[:300]}"
        for cause, vs in by_cause.items()
    )


async def evaluate_patch(
    task: Task,
    patch: str,
    evaluator: Evaluator,
    browser: Browser,
    out_dir: Path,
    node_cache: Path,
    scratch_root: str | None = None,
    sandbox: dict[str, Any] | None = None,
    pages: bool = True,
) -> Evaluation:
    """Grade ``patch`` applied to the task's baseline. Candidate failures (patch, build, serve) are
    FAIL verdicts; a criterion whose grader failed is ungraded and makes the evaluation a ``grading_error``;
    failures of the machinery around the graders (the build's sandbox, the evidence browser) are raised. The
    candidate's code is built and served in a candidate sandbox of the trial's ``sandbox`` kind (confined,
    offline). ``pages=False`` skips the routes' screenshots and text (for criteria that load their own pages:
    spec tests, commands) — the tools that grade one app in several parts need them once."""
    start = time.monotonic()
    out_dir.mkdir(parents=True, exist_ok=True)
    scratch = scratch_dirs.make(f"eval-{task.id}", scratch_root)
    workspace = scratch / "workspace"
    box = None
    try:
        copy_tree(task.app_dir, workspace)
        (out_dir / "diff.patch").write_text(patch)
        try:
            apply_patch(workspace, patch)
        except PatchError as e:
            return Evaluation(
                TrialStatus.OK.value,
                _all_fail(task, f"patch does not apply: {e}", ["diff"], "wrong"),
                [EvidenceItem("diff", "diff", path="diff.patch")],
                str(e),
                time.monotonic() - start,
            )
        env = task.manifest.environment
        escaping = remove_escaping_symlinks(workspace)
        box = build_candidate_sandbox(sandbox or DEFAULT_SANDBOX, workspace, scratch / "home")
        build = await asyncio.to_thread(build_app, workspace, env, node_cache, box)
        escaping += remove_escaping_symlinks(workspace)  # the build's own, too
        if escaping:  # the candidate's fact, for graders to see; never an infrastructure error
            note = "removed symlinks pointing outside the app (not served):\n  " + "\n  ".join(escaping)
            build.log = f"{note}\n{build.log}"
        serve_root = workspace / env.serve.static_dir
        if not build.ok or (env.serve.command is None and not serve_root.is_dir()):
            (out_dir / "build.log").write_text(redact(build.log))
            reason = "the app does not build" if not build.ok else f"nothing to serve at {env.serve.static_dir}"
            evidence = [
                EvidenceItem("diff", "diff", path="diff.patch"),
                EvidenceItem("build", "build", path="build.log"),
            ]
            return Evaluation(
                TrialStatus.OK.value,
                _all_fail(task, reason, ["build"], "build_failed"),
                evidence,
                reason,
                time.monotonic() - start,
            )
        async with serving(workspace, env, box) as base_url:
            session = EvidenceSession(browser, base_url, out_dir, workspace, node_cache, scratch_root, box)
            options = evaluator.evidence_options() if hasattr(evaluator, "evidence_options") else {}
            status, message = TrialStatus.OK.value, ""

            async def gather_and_grade() -> list[CriterionVerdict]:
                await session.collect(list(env.routes) if pages else [], VIEWPORTS, patch, build.log, **options)
                return await evaluator.evaluate(task, session)

            try:
                async with browser.slot():  # queued here, outside the deadline: waiting is not the app's time
                    verdicts = await asyncio.wait_for(gather_and_grade(), getattr(evaluator, "timeout_s", None))
            except AuditViolation as e:  # reported separately, left out of the scores
                status, message, verdicts = TrialStatus.ABORTED.value, str(e), e.verdicts
            except TimeoutError:
                if session.timeouts:  # the app stopped answering on the way: its failure (graded again next run)
                    reason = f"the evaluation exceeded {evaluator.timeout_s:.0f} s; the app: {session.timeouts[0]}"
                    verdicts = _all_fail(task, reason, list(session.items), "timeout")
                    session.timeouts.append(reason)
                else:  # nothing says whether the app or the machine was too slow: no verdict at all
                    reason = f"the evaluation exceeded {evaluator.timeout_s:.0f} s with no sign the app was at fault"
                    verdicts = [
                        CriterionVerdict.ungraded_by(c, "none", Ungraded.UNDECIDED_TIMEOUT, reason)
                        for c in task.criteria
                    ]
            finally:
                await session.close()
                session.save_index()
        failed = [v for v in verdicts if v.grading_failed]
        if failed:  # a grader failed: no score from this grading (an audit's verdict waits for a full grading)
            status, message = TrialStatus.GRADING_ERROR.value, grading_failure_message(failed)
        (out_dir / "verdicts.json").write_text(json.dumps(redact_data([asdict(v) for v in verdicts]), indent=1))
        telemetry = evaluator.telemetry() if hasattr(evaluator, "telemetry") else {}
        wall = round(time.monotonic() - start, 3)
        transient = "; ".join(dict.fromkeys(session.timeouts))[:2000]
        return Evaluation(status, verdicts, list(session.items.values()), message, wall, telemetry, transient)
    finally:
        if box is not None:
            await asyncio.to_thread(box.close)
        shutil.rmtree(scratch, ignore_errors=True)
