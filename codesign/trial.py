"""One trial, start to finish, wherever it runs: load the task, solve (or reuse), evaluate (or reuse)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from codesign._types import (
    CriterionVerdict,
    Evaluation,
    EvidenceItem,
    ExitStatus,
    Telemetry,
    TrialRecord,
    TrialStatus,
)
from codesign.build import behaviour, build_evaluator
from codesign.errors import TaskError
from codesign.evaluate.attribution import classify, task_gate
from codesign.evaluate.fingerprint import grading_code
from codesign.evaluate.run import evaluate_patch
from codesign.runtime.browser import Browser
from codesign.solve.models.cache import responses_in
from codesign.solve.preview import Preview
from codesign.solve.run import handed_patch, solve_task
from codesign.store import EVALUATION_VERSION, Store, content_key, read_json, stage_lock, write_atomic, write_json
from codesign.tasks.loader import Task, load_task


@dataclass
class TrialSpec:
    """Everything a worker needs to run one trial; plain data so it crosses Ray and can be logged."""

    task_dir: str
    task_id: str
    model: dict[str, Any]
    harness: dict[str, Any]
    regime: dict[str, Any]
    sandbox: dict[str, Any]
    evaluator: dict[str, Any]
    seed: int = 0
    store_root: str = "outputs/store"  # the store's URI: a folder, or object storage (s3://bucket/prefix)
    node_cache: str = "~/.cache/codesign/node_modules"
    scratch_root: str | None = None
    reuse: bool | str = True  # true, false, or "stale": also evaluations graded by older grading code
    evaluate: bool = True  # false: solve and store only (grade later, e.g. with several evaluators)
    attribution_below: float | None = 0.5  # diagnose trials whose strict score is below this (None: never)
    run_id: str = ""  # this command's id: with reuse off, stages it produced are still shared by its cells
    cell: dict[str, str] = field(default_factory=dict)

    def solve_configs(self) -> dict[str, Any]:
        return {"model": self.model, "harness": self.harness, "regime": self.regime, "sandbox": self.sandbox}

    def trial_key(self, task: Task) -> str:
        """The solve's key: what the solver sees and what changes its behaviour (README, *Keys*)."""
        handed = handed_patch(self.model, task)  # what the oracle (or a near miss) applies decides its solve
        extra = [hashlib.sha256(handed.encode()).hexdigest()] if handed is not None else []
        return content_key(task.solver_hash, behaviour(self.solve_configs()), self.seed, *extra)

    def eval_key(self, task: Task, patch: str) -> str:
        """The evaluation's key: what it grades (the patch on this app, the criteria, probes and script folders),
        how (the grading config and its prompt files' content) and with which grading code (README, *Keys*)."""
        return content_key(self.eval_family(task, patch), grading_code())

    def eval_family(self, task: Task, patch: str) -> str:
        """The evaluation's key but for the grading code: evaluations of one family differ only by the code that
        graded them (``store.reuse=stale`` may use an older one, and says so)."""
        patch_hash = hashlib.sha256(patch.encode()).hexdigest()
        return content_key(
            task.solver_hash, patch_hash, task.criteria_hash, behaviour(self.evaluator), EVALUATION_VERSION
        )


def _labels(task: Task) -> dict[str, Any]:
    m = task.manifest
    return {
        "modality": m.modality,
        "edit_types": list(m.labels.edit_types),
        "n_edit_types": len(m.labels.edit_types),
        "capability": list(m.labels.capability),
        "categories": list(m.labels.categories),
        "difficulty": m.labels.difficulty,
        "title": m.title,
    }


def _reusable(stored: dict[str, Any] | None, spec: TrialSpec) -> TypeGuard[dict[str, Any]]:
    """A stored stage is used when reuse is on, or when this very command wrote it (``store.reuse=false``
    re-runs everything once, and the cells of one run still share what it produced)."""
    return stored is not None and (bool(spec.reuse) or stored.get("run_id") == spec.run_id)


def _evaluation_from(d: dict[str, Any]) -> Evaluation:
    return Evaluation(
        d["status"],
        [CriterionVerdict(**v) for v in d["verdicts"]],
        [EvidenceItem(**e) for e in d["evidence"]],
        d.get("message", ""),
        d.get("wall_s", 0.0),
        d.get("telemetry", {}),
        d.get("transient", ""),
        d.get("attempts", 1),
        d.get("grading_code", ""),
    )


async def run_trial(spec: TrialSpec, browser: Browser) -> TrialRecord:
    try:
        task = await asyncio.to_thread(load_task, Path(spec.task_dir))
    except TaskError as e:
        return TrialRecord.unrun(spec.task_id, spec.cell, TrialStatus.TASK_ERROR, str(e))
    node_cache = Path(spec.node_cache).expanduser()
    store = Store(spec.store_root, staging=node_cache.parent / "store")  # object storage: staged on this node
    with responses_in(store, f"{task.id} seed {spec.seed}"):  # models with cache=… use the store's responses
        return await _run_loaded(spec, task, store, browser, node_cache)


async def _run_loaded(spec: TrialSpec, task: Task, store: Store, browser: Browser, node_cache: Path) -> TrialRecord:
    trial_key = spec.trial_key(task)
    record = TrialRecord(trial_key, None, task.id, task.track, spec.cell, _labels(task), TrialStatus.OK.value)
    trial_dir = store.trial_dir(trial_key)

    # Single flight: trials of one solve key (the cells of an evaluator grid) solve once; the others wait
    # here — on any actor or node sharing the store — and grade the same stored patch.
    async with stage_lock(trial_dir / ".solve.lock", store):
        await asyncio.to_thread(store.pull, trial_dir, ["solve.json", "patch.diff"])
        solved = read_json(trial_dir / "solve.json")
        if _reusable(solved, spec) and (trial_dir / "patch.diff").is_file():
            patch, record.telemetry = (trial_dir / "patch.diff").read_text(), Telemetry(**solved["telemetry"])
            record.cached["solve"] = True
        else:
            preview = Preview(
                browser, asyncio.get_running_loop(), task.manifest.environment, node_cache, spec.scratch_root
            )
            result = await asyncio.to_thread(
                solve_task,
                task,
                spec.solve_configs(),
                trial_dir,
                node_cache,
                spec.scratch_root,
                preview=preview,
                seed=spec.seed,
            )
            patch, record.telemetry = result.patch, result.telemetry
            write_atomic(trial_dir / "patch.diff", patch)
            # solve.json is written last: its presence marks a finished solve. An infrastructure failure is
            # not stored as finished, so a resumed run (or the next waiter) tries the solve again.
            if result.telemetry.exit_status != ExitStatus.INFRA_ERROR:
                write_json(
                    trial_dir / "solve.json",
                    {
                        "spec": asdict(spec),
                        "run_id": spec.run_id,
                        "task_hash": task.content_hash,
                        "task": {"track": task.track, "labels": _labels(task)},  # read back by the report
                        "telemetry": asdict(result.telemetry),
                    },
                )
            await asyncio.to_thread(store.push, trial_dir, last="solve.json", skip=("evals",))

    if record.telemetry.exit_status == ExitStatus.INFRA_ERROR:
        # The framework or its environment failed the solve: an error to report, never a zero to average.
        record.status, record.stage = TrialStatus.INFRA_ERROR.value, "solve"
        record.message = f"solve: {record.telemetry.message}"
        return record
    if not spec.evaluate:
        record.status = TrialStatus.SOLVED.value
        return record
    record.eval_key = eval_key = spec.eval_key(task, patch)
    eval_dir = store.eval_dir(trial_key, eval_key)
    async with stage_lock(eval_dir / ".evaluate.lock", store):  # two cells with one grading config grade once
        await asyncio.to_thread(store.pull, eval_dir, ["evaluation.json"])
        stored = read_json(eval_dir / "evaluation.json")
        if stored is None and spec.reuse == "stale":
            stored = await asyncio.to_thread(_older_evaluation, store, trial_key, spec.eval_family(task, patch))
        if _reusable(stored, spec):
            record.evaluation = _evaluation_from(stored)
            record.cached["evaluate"] = True
        else:
            failure = await _grade(spec, task, patch, eval_dir, browser, node_cache, record)
            if failure:  # the evaluation machinery failed: reported as an error, never as a zero
                record.status, record.stage, record.message = TrialStatus.INFRA_ERROR.value, "evaluate", failure
                return record
            assert record.evaluation is not None
            # Stored as finished only when the app, not a grader or the clock, decided every verdict: an app
            # timeout and a grading error are graded again next run, never reused.
            if not record.evaluation.transient and record.evaluation.status != TrialStatus.GRADING_ERROR:
                record.evaluation.grading_code = grading_code()
                write_json(
                    eval_dir / "evaluation.json",
                    {
                        "evaluator": spec.evaluator,
                        "run_id": spec.run_id,
                        "family": spec.eval_family(task, patch),
                        "graded_at": time.time(),
                        **asdict(record.evaluation),
                    },
                )
                await asyncio.to_thread(store.push, eval_dir, last="evaluation.json")
    record.status = record.evaluation.status
    if record.status != TrialStatus.OK:
        record.message = record.evaluation.message
    verdicts = record.evaluation.verdicts
    strict = sum(v.verdict == "PASS" for v in verdicts) / len(verdicts) if verdicts else 0.0
    if record.status == TrialStatus.OK and spec.attribution_below is not None and strict < spec.attribution_below:
        gate = await task_gate(task, browser, node_cache, store)
        record.attribution = classify(record, gate, spec.attribution_below)
    return record


def _older_evaluation(store: Store, trial_key: str, family: str) -> dict[str, Any] | None:
    """The latest stored evaluation of this family graded by other grading code (``store.reuse=stale``)."""
    import json

    found = []
    for path in store.glob(f"trials/{trial_key}/evals/*/evaluation.json"):
        with contextlib.suppress(ValueError, TypeError):
            stored = json.loads(store.read_bytes(path) or b"null")
            if stored and stored.get("family") == family:
                found.append(stored)
    return max(found, key=lambda d: d.get("graded_at", 0.0), default=None)


async def _grade(
    spec: TrialSpec, task: Task, patch: str, eval_dir: Path, browser: Browser, node_cache: Path, record: TrialRecord
) -> str | None:
    """Grade the patch into ``record.evaluation``; a grading error is graded again, up to the evaluator's
    ``max_retries`` times in this run. Returns why the machinery failed (None: it did not). Every attempt's
    judge and verifier spend stays in the evaluation's telemetry, so the budget is charged for all of them."""
    evaluator = build_evaluator(spec.evaluator)
    attempts = 1 + int(spec.evaluator.get("max_retries", 1))
    failure: str | None = None
    for attempt in range(1, attempts + 1):
        try:
            evaluation = await evaluate_patch(
                task, patch, evaluator, browser, eval_dir, node_cache, spec.scratch_root, spec.sandbox
            )
        except Exception as e:
            failure = f"evaluation failed: {type(e).__name__}: {e}"
            spent = evaluator.telemetry() if hasattr(evaluator, "telemetry") else {}
            record.evaluation = Evaluation(
                TrialStatus.INFRA_ERROR.value, message=failure, telemetry=spent, attempts=attempt
            )
            continue
        evaluation.attempts, record.evaluation, failure = attempt, evaluation, None
        if evaluation.status != TrialStatus.GRADING_ERROR:
            break
    return failure


async def run_trial_safely(spec: TrialSpec, browser: Browser) -> TrialRecord:
    """``run_trial`` that never raises: an unexpected failure becomes an infrastructure-error record."""
    try:
        return await run_trial(spec, browser)
    except Exception as e:
        return TrialRecord.unrun(spec.task_id, spec.cell, TrialStatus.INFRA_ERROR, f"{type(e).__name__}: {e}", "trial")
