"""A Web-Bench task's spec tests graded by several Playwright runners at once, and flaky tests found by grading
the reference more than once.

codesign's spec runner runs one Playwright worker per evaluation and runs a test that timed out again, alone,
with 4× its bounds. On a starting app most tests fail on purpose by waiting out those bounds: calculator's
task-3 tests took 525 s for 4 tests in one runner (10 s + 40 s for an ``expect``, 30 s + 120 s for a ``click``
on a button that is not there), with 17 s of CPU. Such tests wait, they do not compute, so the task's spec
files are split across ``workers`` copies of the task, each evaluated at once (its own server, runner and
Chromium): the same evaluation (``evaluate_patch``), the same verdicts, the waits side by side.
"""

from __future__ import annotations

import asyncio
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from codesign._types import CriterionVerdict, Evaluation
from codesign.evaluate.evaluators import ProbeEvaluator
from codesign.evaluate.gate import launch_render, undecided
from codesign.evaluate.run import evaluate_patch
from codesign.runtime.browser import Browser
from codesign.tasks.loader import CRITERIA, GENERATED_DIRS, load_task
from codesign.tasks.schema import Criterion

CHANGE_WEIGHT = 4  # a change fails on the starting app by waiting (~25 s); a preservation passes in ~0.5-5 s


def split_by_file(criteria: list[Criterion], workers: int) -> list[list[Criterion]]:
    """The spec criteria in at most ``workers`` groups of whole spec files (a runner runs every test of the
    files it is given): the heaviest files first, each into the lightest group; a change weighs more than a
    preservation, since on the starting app it waits out its bounds."""
    by_file: dict[str, list[Criterion]] = {}
    for c in criteria:
        if c.spec is not None:
            by_file.setdefault(c.spec.file, []).append(c)

    def weight(group: list[Criterion]) -> int:
        return sum(1 if c.preserve else CHANGE_WEIGHT for c in group)

    groups: list[list[Criterion]] = [[] for _ in range(max(1, min(workers, len(by_file))))]
    for file in sorted(by_file, key=lambda f: (-weight(by_file[f]), f)):
        min(groups, key=weight).extend(by_file[file])
    return [g for g in groups if g]


def shard(task_dir: Path, criteria: list[Criterion], where: Path, runner: dict[str, Any] | None = None) -> Path:
    """A copy of the task folder (named as the task, as the loader wants) graded on ``criteria`` only, its
    ``spec_runner`` updated with ``runner``."""
    folder = where / task_dir.name
    shutil.copytree(task_dir, folder, ignore=shutil.ignore_patterns(*GENERATED_DIRS))
    text = yaml.safe_load((task_dir / CRITERIA).read_text())
    kept = {c.id for c in criteria}
    text["criteria"] = [c for c in text["criteria"] if c["id"] in kept]
    text["spec_runner"] = text["spec_runner"] | (runner or {})
    (folder / CRITERIA).write_text(yaml.safe_dump(text, sort_keys=False, allow_unicode=True, width=110))
    return folder


class StartingAppDoesNotBuild(RuntimeError):
    """The app did not build: no test says anything about it."""


@dataclass
class Graded:
    """A patch graded in parallel runners: every criterion's verdict, and what the gate asks of the app besides
    (its launch/render problems and warnings, from the first runner's evidence; why a verdict was undecided)."""

    verdicts: dict[str, CriterionVerdict]
    render_problems: list[str] = field(default_factory=list)
    render_warnings: list[str] = field(default_factory=list)
    transient: str = ""


async def grade_in_parallel(
    task_dir: Path,
    patch: str,
    workers: int,
    browser: Browser,
    node_cache: Path,
    work: Path,
    runner: dict[str, Any] | None = None,
) -> Graded:
    """Every criterion's verdict for ``patch``, from ``workers`` evaluations at once (one per group of spec
    files), their ``spec_runner`` updated with ``runner``. ``browser`` must allow that many evaluations at once
    (``Browser(slots=...)``). Only the first gathers the app's pages (the launch/render check reads them; spec
    tests load their own): the others would load the same pages for nothing."""
    task = load_task(task_dir)
    groups = split_by_file(task.criteria, workers)
    shards = [shard(task_dir, group, work / f"shard-{i}", runner) for i, group in enumerate(groups)]

    async def one(i: int, folder: Path) -> Evaluation:
        return await evaluate_patch(
            load_task(folder), patch, ProbeEvaluator(), browser, work / f"evaluation-{i}", node_cache, pages=i == 0
        )  # split_by_file groups spec criteria only

    evaluations = await asyncio.gather(*(one(i, f) for i, f in enumerate(shards)))
    verdicts: dict[str, CriterionVerdict] = {}
    for evaluation in evaluations:
        if evaluation.message and all(v.failure_category == "build_failed" for v in evaluation.verdicts):
            raise StartingAppDoesNotBuild(f"the app does not build: {evaluation.message[:500]}")
        verdicts |= {v.criterion_id: v for v in evaluation.verdicts}
    problems, warnings = launch_render(task, evaluations[0], work / "evaluation-0")  # every runner serves the same app
    transient = "; ".join(dict.fromkeys(e.transient for e in evaluations if e.transient))
    ordered = {c.id: verdicts[c.id] for c in task.criteria if c.id in verdicts}
    return Graded(ordered, problems, warnings, transient or undecided(list(ordered.values())))


@dataclass
class Flaky:
    """A test whose verdict on Web-Bench's reference changed between runs: the evidence."""

    id: str
    file: str
    title: str
    passed: int
    failed: int
    failures: list[str] = field(default_factory=list)  # each different failure message, shortened

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def flaky_tests(criteria: list[Criterion], runs: list[dict[str, CriterionVerdict]]) -> list[Flaky]:
    """The criteria that passed in some of ``runs`` and failed in others (a run that could not grade a
    criterion says nothing about it)."""
    found = []
    for c in criteria:
        seen = [run[c.id] for run in runs if c.id in run]
        passed = sum(v.verdict == "PASS" for v in seen)
        failures = [v.reason for v in seen if v.verdict == "FAIL"]
        if passed and failures and c.spec is not None:
            messages = list(dict.fromkeys(" ".join(m.split())[:300] for m in failures))
            found.append(Flaky(c.id, c.spec.file, c.spec.title, passed, len(failures), messages))
    return found
