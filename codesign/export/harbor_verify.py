"""Grade a final workspace against a codesign task folder and write Harbor's reward: the entry point of an
exported task's ``tests/test.sh``.

    python -m codesign.export.harbor_verify --task TASK_DIR --workspace APP_DIR --logs LOG_DIR

The workspace's change from the task's app (a patch, as codesign stores every solve) is graded by codesign's
own evaluation (``codesign.evaluate.run.evaluate_patch``) with the deterministic probe evaluator, graded once
more if a grader failed, as a run does. Then in ``LOG_DIR``:

- graded: ``reward.txt`` = the strict score (the share of criteria that PASS; a criterion only an LLM can grade
  counts as FAIL, as under ``evaluator=probe``), ``verdicts.json`` beside it; exit 0;
- a grader failure (a criterion ungraded, the evaluation aborted, the task or the machinery broken, bubblewrap
  unable to start where the task needs it — in a container without user namespaces): no
  ``reward.txt``, ``verdicts.json`` with what was graded, ``grading_error.txt`` saying why; exit 1. Harbor then
  records a verifier error (no reward file), never a zero for the agent.

Evidence (screenshots, logs, the graded patch) goes to ``LOG_DIR/evidence``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import traceback
from dataclasses import asdict
from pathlib import Path

from codesign._types import Evaluation, TrialStatus, Verdict
from codesign.errors import EnvironmentSetupError
from codesign.evaluate.evaluators import ProbeEvaluator
from codesign.evaluate.run import evaluate_patch
from codesign.redact import redact_data
from codesign.runtime.browser import Browser
from codesign.sandbox.local import LocalSandbox
from codesign.tasks.loader import Task, load_task
from codesign.workspace import Baseline, copy_tree

REWARD, VERDICTS, ERROR = "reward.txt", "verdicts.json", "grading_error.txt"


def needs_bubblewrap(task: Task) -> bool:
    """Whether grading runs the candidate's code under bubblewrap (an install, a build, a server of its own, a
    command or spec criterion); a static app graded by probes needs nothing but the browser."""
    env = task.manifest.environment
    return (
        env.kind == "node"
        or bool(env.build)
        or env.serve.command is not None
        or task.spec_runner is not None
        or any(c.command is not None for c in task.criteria)
    )


def preflight(task: Task) -> None:
    """What a run's preflight checks before grading: where bubblewrap cannot start (a container without user
    namespaces), every build would fail and be graded as the candidate's failure, zeros that are the machine's."""
    if needs_bubblewrap(task):
        with tempfile.TemporaryDirectory(prefix="codesign-harbor-") as tmp:
            LocalSandbox(Path(tmp) / "ws", Path(tmp) / "home", confine=True, network=False).check()


def workspace_patch(task: Task, workspace: Path) -> str:
    """The workspace's change from the task's app, as codesign's solves record it (generated folders, the
    attachments and the task's own ``environment.ignore`` left out)."""
    if not workspace.is_dir():
        raise EnvironmentSetupError(f"workspace {workspace} is not a folder", "pass the agent's final app folder")
    with tempfile.TemporaryDirectory(prefix="codesign-harbor-") as tmp:
        work = Path(tmp) / "work"
        copy_tree(task.app_dir, work)
        baseline = Baseline(Path(tmp) / "baseline.git", work, list(task.manifest.environment.ignore))
        baseline.snapshot()
        shutil.rmtree(work)
        copy_tree(workspace, work)
        return baseline.diff()


async def grade(task: Task, patch: str, out_dir: Path, node_cache: Path) -> Evaluation:
    """codesign's evaluation of ``patch``; a grading that failed is graded again, ``max_retries`` times."""
    evaluator = ProbeEvaluator()
    browser = Browser(os.environ.get("CODESIGN_CHROMIUM"))
    try:
        for attempt in range(1 + evaluator.max_retries):
            evaluation = await evaluate_patch(task, patch, evaluator, browser, out_dir / f"attempt-{attempt + 1}",
                                              node_cache)  # fmt: skip
            if evaluation.status != TrialStatus.GRADING_ERROR:
                break
        return evaluation
    finally:
        await browser.close()


def scores(evaluation: Evaluation) -> dict[str, float | bool | int]:
    verdicts = [v.verdict for v in evaluation.verdicts]
    n, n_pass, n_partial = len(verdicts), verdicts.count(Verdict.PASS), verdicts.count(Verdict.PARTIAL)
    return {
        "strict": n_pass / n,
        "graded": (n_pass + 0.5 * n_partial) / n,
        "full_pass": n_pass == n,
        "criteria": n,
        "passed": n_pass,
    }


def verify(task_dir: Path, workspace: Path, logs: Path, node_cache: Path) -> int:
    """Grade, write the reward (or the reason there is none) into ``logs``; the exit status."""
    logs.mkdir(parents=True, exist_ok=True)
    for stale in (REWARD, "reward.json", VERDICTS, ERROR):
        (logs / stale).unlink(missing_ok=True)
    try:
        task = load_task(task_dir)
        preflight(task)
        evaluation = asyncio.run(grade(task, workspace_patch(task, workspace), logs / "evidence", node_cache))
    except Exception as e:  # the grader's own failure, whatever it is: a verifier error, never a reward
        message = f"{type(e).__name__}: {e}"
        (logs / ERROR).write_text(f"{message}\n\n{traceback.format_exc()}")
        print(f"codesign could not grade {workspace} against {task_dir}: {message}", file=sys.stderr)
        return 1
    record = {
        "task_id": task.id,
        "status": evaluation.status,
        "message": evaluation.message,
        "evaluator": ProbeEvaluator.name,
        "verdicts": redact_data([asdict(v) for v in evaluation.verdicts]),
    }
    if evaluation.status != TrialStatus.OK or not evaluation.verdicts:
        (logs / VERDICTS).write_text(json.dumps(record, indent=1))
        why = evaluation.message or "no verdicts"
        (logs / ERROR).write_text(f"{evaluation.status}: {why}\n")
        print(f"codesign's grading of {task.id} failed ({evaluation.status}), no reward:\n{why}", file=sys.stderr)
        return 1
    record["scores"] = scores(evaluation)
    (logs / VERDICTS).write_text(json.dumps(record, indent=1))
    strict = float(record["scores"]["strict"])
    (logs / REWARD).write_text(f"{strict}\n")  # last: the reward exists only beside its verdicts
    for v in evaluation.verdicts:
        print(f"{v.verdict:7} {v.criterion_id}: {v.reason[:160]}")
    print(f"{task.id}: strict {strict:.3f} ({record['scores']['passed']}/{record['scores']['criteria']} PASS)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m codesign.export.harbor_verify",
        description="Grade a final workspace against a codesign task folder; write Harbor's reward.",
    )
    parser.add_argument("--task", type=Path, required=True, help="the codesign task folder (task.yaml, criteria.yaml)")
    parser.add_argument("--workspace", type=Path, required=True, help="the agent's final app folder")
    parser.add_argument("--logs", type=Path, required=True, help="where reward.txt and verdicts.json go")
    parser.add_argument(
        "--node-cache",
        type=Path,
        default=Path(os.environ.get("CODESIGN_CACHE", "~/.cache/codesign")).expanduser() / "node_modules",
        help="installed dependencies by lockfile (default $CODESIGN_CACHE/node_modules, as codesign's)",
    )
    args = parser.parse_args(argv)
    return verify(args.task, args.workspace, args.logs, args.node_cache)


if __name__ == "__main__":
    sys.exit(main())
