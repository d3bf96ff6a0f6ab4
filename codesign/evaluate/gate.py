"""The task gate: is a task sound? Used by ``python -m codesign.validate`` and by failure attribution.

Per task, in order (a failed step stops that task's later steps):
  integrity       files, schema, attachments readable, reference patch applies
  install/build   dependencies (cached) and the baseline's build
  launch/render   the baseline is served and every declared route renders (HTTP 200, something a user can
                  see: visible text or media, by codesign.runtime.visible — hidden text does not count)
  solvability     the reference solution passes every probed criterion
  discrimination  the unmodified app fails every probed change and passes every probed preservation
  near misses     each wrong or partial solution (solution/near-misses/<name>.patch) gets exactly the verdicts
                  its <name>.yaml expects from the deterministic graders (the baseline for calibrating judges)
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from codesign._types import CriterionVerdict, Evaluation, Ungraded
from codesign.errors import TaskError
from codesign.evaluate.evaluators import ProbeEvaluator
from codesign.evaluate.evidence import EvidenceItem, page_text
from codesign.evaluate.run import evaluate_patch
from codesign.runtime.browser import Browser
from codesign.tasks.loader import Task
from codesign.workspace import PatchError, apply_patch, copy_tree

NOT_ASKED = "not checked"  # a step the caller left out (failure attribution skips the near misses)
STEPS = ("integrity", "install_build", "launch_render", "solvability", "discrimination", "near_misses")


@dataclass
class TaskReport:
    task_id: str
    track: str = "?"
    steps: dict[str, str] = field(default_factory=dict)  # step -> "ok" | "FAIL: why" | "skipped"
    wall_s: float = 0.0
    # Set when a step could not be decided for a passing reason (a crash, an unreachable registry, an app
    # timeout): the report says nothing certain about the task, so it is retried and never cached.
    transient: str = ""
    warnings: list[str] = field(default_factory=list)  # not failures: criteria only an LLM can grade, flakiness

    @property
    def ok(self) -> bool:
        return all(self.steps.get(s) in ("ok", NOT_ASKED) for s in STEPS)

    def fail(self, step: str, why: str) -> None:
        self.steps[step] = f"FAIL: {why}"
        for later in STEPS[STEPS.index(step) + 1 :]:
            self.steps.setdefault(later, "skipped")


def check_attachment(path: Path, modality: str) -> str | None:
    """None when the file is readable as its modality, else the problem."""
    try:
        if modality == "image":
            from PIL import Image

            with Image.open(path) as img:
                img.verify()
        elif modality == "document" and path.suffix.lower() == ".pdf":
            from pypdf import PdfReader

            if not any((page.extract_text() or "").strip() for page in PdfReader(path).pages):
                return "the PDF has no extractable text"
        elif modality in ("audio", "video"):
            from codesign.solve.attachments import media_duration, video_keyframes

            if not media_duration(path):
                return "no duration: not a readable audio or video file"
            if modality == "video" and not video_keyframes(path, 1):
                return "no video frame can be decoded"
        elif path.stat().st_size == 0:
            return "empty file"
    except Exception as e:
        return f"unreadable: {e}"
    return None


def integrity(task: Task, patches: bool = True) -> str | None:
    for a in task.manifest.attachments:
        problem = check_attachment(task.dir / a.path, a.modality)
        if problem:
            return f"{a.path}: {problem}"
    if not patches:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        copy_tree(task.app_dir, Path(tmp))
        try:
            apply_patch(Path(tmp), task.reference_patch())
        except PatchError as e:
            return f"solution/solution.patch does not apply: {e}"
    if not task.reference_patch().strip():
        return "solution/solution.patch is empty"
    try:
        near_misses = task.near_misses()
    except TaskError as e:
        return str(e)
    for near in near_misses:
        with tempfile.TemporaryDirectory() as tmp:
            copy_tree(task.app_dir, Path(tmp))
            try:
                apply_patch(Path(tmp), near.patch)
            except PatchError as e:
                return f"solution/near-misses/{near.name}.patch does not apply: {e}"
    return None


async def check_near_misses(task: Task, browser: Browser, node_cache: Path, out_dir: Path) -> tuple[list[str], str]:
    """Each near miss graded by the deterministic graders: the criteria whose verdict is not the one its
    ``.yaml`` expects, and why a verdict could not be decided (the browser, the clock: the gate is retried)."""
    wrong, transient = [], ""
    probed = {c.id for c in task.criteria if c.deterministic}
    for near in task.near_misses():
        graded = await evaluate_patch(
            task, near.patch, ProbeEvaluator(), browser, out_dir / task.id / f"near-miss-{near.name}", node_cache
        )
        transient = transient or graded.transient or undecided(graded.verdicts)
        for v in graded.verdicts:
            expected = near.verdicts[v.criterion_id]
            if v.criterion_id in probed and v.verdict != expected:
                wrong.append(f"{near.name}: {v.criterion_id} is {v.verdict}, expected {expected} ({v.reason[:200]})")
    return wrong, transient


async def validate_task(
    task: Task,
    browser: Browser,
    node_cache: Path,
    out_dir: Path,
    repeat: int = 1,
    near_misses: bool = True,
    environment_only: bool = False,
) -> TaskReport:
    """``repeat`` > 1 grades the reference that many times and warns about criteria whose verdict changes;
    ``near_misses=False`` leaves the near misses out (failure attribution asks only whether the task is sound);
    ``environment_only`` stops after launch/render and checks no patch (a curated draft has no criteria yet)."""
    report = TaskReport(task.id, task.track)
    report.warnings += [
        f"{c.id}: no probe, script or spec — only an LLM evaluator can grade it"
        for c in task.criteria
        if not c.deterministic
    ]
    start = time.monotonic()
    try:
        problem = await asyncio.to_thread(integrity, task, not environment_only)
        if problem:
            report.fail("integrity", problem)
            return report
        report.steps["integrity"] = "ok"
        evaluator = ProbeEvaluator()
        baseline = await evaluate_patch(task, "", evaluator, browser, out_dir / task.id / "baseline", node_cache)
        report.transient = baseline.transient or undecided(baseline.verdicts)
        if baseline.message and all(v.failure_category == "build_failed" for v in baseline.verdicts):
            report.fail("install_build", baseline.message)
            return report
        report.steps["install_build"] = "ok"
        problems, blank = launch_render(task, baseline, out_dir / task.id / "baseline")
        report.warnings += blank
        if problems:
            report.fail("launch_render", "; ".join(problems))
            return report
        report.steps["launch_render"] = "ok"
        if environment_only:
            report.steps.update(dict.fromkeys(STEPS[STEPS.index("launch_render") + 1 :], NOT_ASKED))
            return report
        reference = await evaluate_patch(
            task, task.reference_patch(), evaluator, browser, out_dir / task.id / "reference", node_cache
        )
        report.transient = report.transient or reference.transient or undecided(reference.verdicts)
        seen = {v.criterion_id: [v.verdict] for v in reference.verdicts}
        for k in range(2, repeat + 1):
            again = await evaluate_patch(
                task, task.reference_patch(), evaluator, browser, out_dir / task.id / f"reference-{k}", node_cache
            )
            for v in again.verdicts:
                seen[v.criterion_id].append(v.verdict)
        report.warnings += flaky_warnings(seen)
        if not judge_oracle_and_baseline(report, task, reference.verdicts, baseline.verdicts):
            return report
        if not near_misses:
            report.steps["near_misses"] = NOT_ASKED
            return report
        if not task.near_misses():
            report.warnings.append("no near misses (solution/near-misses/): calibration sees only the oracle and noop")
        missed, transient = await check_near_misses(task, browser, node_cache, out_dir)
        report.transient = report.transient or transient
        if missed:
            report.fail("near_misses", " | ".join(missed))
        else:
            report.steps["near_misses"] = "ok"
    except Exception as e:  # a gate reports every task; one crash must not hide the others
        step = next((s for s in STEPS if s not in report.steps), STEPS[-1])
        report.fail(step, f"{type(e).__name__}: {e}")
        report.transient = f"{type(e).__name__}: {str(e)[:500]}"
    finally:
        report.wall_s = round(time.monotonic() - start, 2)
    return report


def flaky_warnings(seen: dict[str, list[str]]) -> list[str]:
    """A warning per criterion whose verdicts on the reference (``seen``: its verdict in each run) differ."""
    return [f"{cid}: FLAKY on the reference — {', '.join(vs)} over {len(vs)} runs" for cid, vs in seen.items()
            if len(set(vs)) > 1]  # fmt: skip


def launch_render(task: Task, baseline: Evaluation, folder: Path) -> tuple[list[str], list[str]]:
    """The unchanged app's routes that did not answer 200 or render nothing (``baseline``'s evidence, kept in
    ``folder``), and the warnings about pages that start empty where the task says they do."""
    problems = [
        f"{e.route} -> {e.data['status']}" for e in baseline.evidence if e.kind == "route" and e.data["status"] != 200
    ]
    # A blank page that threw is a crashed app, always; one that threw nothing fails an authored task (its
    # revision starts from an app a user sees) and is only a warning where the task says it starts empty
    # (Web-Bench begins many projects from a bare `<div class="root">`).
    warnings = []
    for e in baseline.evidence:
        if e.kind != "dom" or not page_text(folder, e).blank:
            continue
        error = _first_error(baseline.evidence, e)
        if error or not task.manifest.environment.starts_blank:
            problems.append(f"{e.id} renders nothing" + (f" ({error})" if error else ""))
        else:
            warnings.append(f"{e.id} shows nothing a user can see (environment.starts_blank)")
    return problems, warnings


def judge_oracle_and_baseline(
    report: TaskReport, task: Task, reference: list[CriterionVerdict], baseline: list[CriterionVerdict]
) -> bool:
    """Solvability and discrimination from the reference's and the unchanged app's verdicts, over the probed
    criteria (probes, scripts, spec tests, commands); False when discrimination failed (later steps skipped)."""
    probed = {c.id for c in task.criteria if c.deterministic}
    unsolved = [
        f"{v.criterion_id}: " + (f"could not be graded ({v.ungraded}): " if v.grading_failed else "") + v.reason
        for v in reference
        if v.criterion_id in probed and v.verdict != "PASS"
    ]
    if unsolved:
        report.fail("solvability", " | ".join(unsolved))
    else:
        report.steps["solvability"] = "ok"
    wrong = []
    for v in baseline:
        if v.criterion_id not in probed:
            continue
        if v.grading_failed:  # neither a pass nor a fail: says nothing about discrimination
            wrong.append(f"{v.criterion_id} could not be graded on the baseline ({v.ungraded}): {v.reason}")
        elif v.preserve and v.verdict != "PASS":
            wrong.append(f"{v.criterion_id} (preserve) fails on the baseline: {v.reason}")
        elif not v.preserve and v.verdict != "FAIL":
            wrong.append(f"{v.criterion_id} (change) already {v.verdict} on the baseline")
    if wrong:
        report.fail("discrimination", " | ".join(wrong))
        return False
    report.steps["discrimination"] = "ok"
    return True


def write_reports(reports: list[TaskReport], where: Path) -> Path:
    """The gate's table, ``where/validation.parquet``: a row per task, a column per step."""
    where.mkdir(parents=True, exist_ok=True)
    rows = [
        {"task_id": r.task_id, "track": r.track, "ok": r.ok, **r.steps, "wall_s": r.wall_s, "warnings": r.warnings}
        for r in reports
    ]
    steps: dict[str, pl.DataType] = dict.fromkeys(STEPS, pl.String())
    schema = {"task_id": pl.String(), "track": pl.String(), "ok": pl.Boolean(), **steps, "wall_s": pl.Float64(),
              "warnings": pl.List(pl.String())}  # fmt: skip
    pl.DataFrame(rows, schema=schema).write_parquet(where / "validation.parquet")
    return where / "validation.parquet"


def print_reports(reports: list[TaskReport], width: int | None = None) -> None:
    """Each task's verdict, its failed steps and warnings (cut at ``width`` characters when given)."""
    print()
    for r in sorted(reports, key=lambda r: r.task_id):
        print(f"{r.task_id:40} {'PASS' if r.ok else 'FAIL'}")
        for step in STEPS:
            if r.steps.get(step, "ok") != "ok":
                print(f"    {step:15} {r.steps[step][:width]}")
        for warning in r.warnings:
            print(f"    warning         {warning[:width]}")


def undecided(verdicts: list[CriterionVerdict]) -> str:
    """Why some verdicts could not be decided for a passing reason (the browser, the clock): the gate says
    nothing certain then and is retried. A grader's own error (a script's bug) is the task's to fix: a FAIL."""
    passing = [v for v in verdicts if v.ungraded in (Ungraded.INFRA, Ungraded.UNDECIDED_TIMEOUT)]
    return "; ".join(f"{v.criterion_id} ({v.ungraded}): {v.reason[:200]}" for v in passing)[:1000]


def _first_error(evidence: list[EvidenceItem], dom: EvidenceItem) -> str:
    """The first uncaught page error recorded while ``dom``'s page loaded ('' when it threw none)."""
    for item in evidence:
        if item.kind == "console" and item.route == dom.route and item.viewport == dom.viewport:
            errors = item.data.get("page_errors") or []
            return str(errors[0])[:200] if errors else ""
    return ""
