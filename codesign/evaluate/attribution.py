"""Conditional failure attribution (the paper's §4.2 and J.1): why did a low-scoring trial score low?

Only trials below a threshold are diagnosed, and raw scores never change. The task itself is checked
first — the untouched app must start (build, serve, render) and the reference patch must pass — with
the gate of ``codesign.evaluate.gate``, run once per task version and cached in the store. Then:

- ``starting_artifact_defect``: the task's baseline does not start, or its reference does not pass;
- ``environment_blockage``: the solve ended on infrastructure (an infrastructure error or the wall-time
  cap, as the paper records timeouts) with nothing achieved;
- ``mixed``: such an infrastructure ending, but with some criteria met;
- ``not_gradable``: low only because the evaluator could not grade some criteria (no probe under ``probe``);
- ``model_limitation``: a sound task and a solve that ended on its own terms;
- ``undetermined``: the gate itself could not decide (a transient failure); it is not cached.

Environment-adjusted scores leave out the first two kinds (see ``codesign.score.adjusted_frame``).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from codesign._types import ExitStatus, TrialRecord, Ungraded
from codesign.evaluate.gate import validate_task
from codesign.runtime.browser import Browser
from codesign.store import Store, read_json, stage_lock, write_json
from codesign.tasks.loader import Task


async def task_gate(task: Task, browser: Browser, node_cache: Path, store: Store | Path) -> dict[str, Any]:
    """The gate's verdict on this version of the task, computed once and kept in the store."""
    store = store if isinstance(store, Store) else Store(store)
    folder = store.root / "tasks" / task.content_hash[:16]
    async with stage_lock(folder / ".gate.lock", store):  # concurrent trials of one task gate it once, anywhere
        await asyncio.to_thread(store.pull, folder, ["gate.json"])
        cached = read_json(folder / "gate.json")
        if cached is not None:
            return cached
        report = await validate_task(task, browser, node_cache, folder, near_misses=False)
        if report.transient:  # retried once; an undecided gate is used for this trial but never cached
            report = await validate_task(task, browser, node_cache, folder, near_misses=False)
        gate = {
            "startable": all(report.steps.get(s) == "ok" for s in ("integrity", "install_build", "launch_render")),
            "solvable": report.steps.get("solvability") == "ok",
            "steps": report.steps,
            "transient": report.transient,
        }
        if not report.transient:
            write_json(folder / "gate.json", gate)
            await asyncio.to_thread(store.push, folder, last="gate.json")
        return gate


def classify(record: TrialRecord, gate: dict[str, Any], below: float = 0.5) -> dict[str, Any]:
    verdicts = record.evaluation.verdicts if record.evaluation else []
    n_pass = sum(v.verdict == "PASS" for v in verdicts)
    graded = [v for v in verdicts if v.ungraded != Ungraded.NOT_GRADABLE]
    exit_status = record.telemetry.exit_status if record.telemetry else ExitStatus.INFRA_ERROR.value
    infrastructure = ExitStatus(exit_status).is_infrastructure
    if gate.get("transient"):
        category, reason = "undetermined", "the task gate could not decide: " + gate["transient"][:400]
    elif not gate["startable"]:
        category, reason = "starting_artifact_defect", "the untouched app does not start: " + _failed(gate)
    elif not gate["solvable"]:
        category, reason = "starting_artifact_defect", "the reference solution does not pass: " + _failed(gate)
    elif len(graded) < len(verdicts) and (not graded or n_pass / len(graded) >= below):
        # Low only because criteria the evaluator could not grade count as FAIL: its coverage, not the model.
        category = "not_gradable"
        reason = f"{len(verdicts) - len(graded)} criteria could not be graded by this evaluator; use hybrid or llm"
    elif infrastructure and n_pass == 0:
        category, reason = "environment_blockage", f"the solve ended with {exit_status} and nothing was achieved"
    elif infrastructure:
        category, reason = "mixed", f"the solve ended with {exit_status} after meeting {n_pass} criteria"
    else:
        category, reason = "model_limitation", f"a sound task; the solve ended with {exit_status}"
    return {"category": category, "reason": reason, "gate": json.loads(json.dumps(gate["steps"]))}


def _failed(gate: dict[str, Any]) -> str:
    return "; ".join(f"{k}: {v}" for k, v in gate["steps"].items() if v not in ("ok", "skipped"))[:500]
