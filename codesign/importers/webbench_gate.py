"""The gate on an imported Web-Bench suite: ``python -m codesign.importers.webbench_gate OUT [--repeat K]``.

The same gate as ``python -m codesign.validate`` (:func:`codesign.evaluate.gate.validate_task`: integrity,
install/build, launch/render, solvability, discrimination, near misses), run once per project rather than once
per task. A project's tasks share the starting app, the reference and the spec folder, and task N's criteria
are task N+1's less task N+1's own tests, with the same flags: the gate on the project's last task grades
every criterion of the others on the same two apps, so each task's report is that gate's, its solvability and
discrimination restricted to the task's own criteria. (Gating each task alone grades init's tests 20 times,
task 1's 20 times …: ~10× the work on 20 tasks a project.) A task that does not share its project's app,
reference, specs or flags with a larger one is gated on its own.

Like the importer, the gate splits a task's spec files over ``--workers`` copies of it gated at once (the
starting app's tests fail on purpose by waiting out their bounds). Projects run on Ray, one CPU each — as many
at once as the machine (or cluster) has CPUs — or, with ``--inline``, in this process, as many at once as this
machine has cores. The report goes to ``OUT/_gate/<time>/validation.parquet`` (``codesign.validate``'s
columns) and the summary table (``OUT/summary.md``).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from codesign._types import CriterionVerdict
from codesign.evaluate.gate import STEPS, TaskReport, _undecided, validate_task
from codesign.importers.webbench_runs import shard, split_by_file
from codesign.importers.webbench_summary import SUMMARY_MD, record_gate
from codesign.runtime.browser import Browser
from codesign.tasks.loader import Task, load_task, tree_hash

WORKERS = 8  # as the importer's: see docs/tasks.md
GATE_REPORTS = "_gate"  # in OUT; a folder starting with _ is never read as a task (tasks.root=OUT)
_PROJECT = re.compile(r"wb-(.+)-task-\d+")


@dataclass
class Unit:
    """A task gated as a whole (``cover``) and the tasks whose reports are restricted from its gate."""

    cover: Task
    tasks: list[Task] = field(default_factory=list)


def _shared(task: Task) -> str:
    """What the gate's evaluations depend on besides the criteria: app, reference, specs and how they run."""
    parts = [
        tree_hash(task.app_dir),
        task.reference_patch(),
        task.manifest.environment.model_dump_json(),
        task.spec_runner.model_dump_json() if task.spec_runner else "",
        tree_hash(task.dir / task.spec_runner.dir) if task.spec_runner else "",
    ]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def units(tasks: list[Task]) -> list[Unit]:
    """The tasks grouped under the largest task that has all of their criteria (the same tests, with the same
    flags; their text may differ), on the same app, reference and specs (a task with near misses is gated on
    its own: they grade all of its criteria at once)."""
    found: list[tuple[str, dict[str, str], Unit]] = []
    for task in sorted(tasks, key=lambda t: (-len(t.criteria), t.id)):
        shared = _shared(task)
        criteria = {c.id: c.model_dump_json(exclude={"text"}) for c in task.criteria}  # the text only says why
        home = next(
            (
                u
                for s, cover, u in found
                if s == shared and not task.near_misses() and all(cover.get(i) == c for i, c in criteria.items())
            ),
            None,
        )
        if home is None:
            home = Unit(task)
            found.append((shared, criteria, home))
        home.tasks.append(task)
    return [u for _, _, u in found]


async def gate_cover(
    cover: Path, workers: int, repeat: int, node_cache: Path, work: Path, executable: str | None = None
) -> dict[str, Any]:
    """The gate on ``cover``, its spec files split over ``workers`` copies gated at once: each copy's steps,
    warnings and transient cause, and every criterion's verdicts (the baseline's, each reference run's)."""
    task = load_task(cover)
    groups = [task.criteria] if task.near_misses() else split_by_file(task.criteria, workers)
    others = [c for c in task.criteria if c.spec is None]  # not split by file: graded with the first group
    if others and not task.near_misses():
        groups[0] = [*others, *groups[0]]
    shards = [shard(cover, g, work / f"shard-{i}") for i, g in enumerate(groups)]
    browser = Browser(executable or os.environ.get("CODESIGN_CHROMIUM"), slots=len(shards))
    start = time.monotonic()
    try:
        reports = await asyncio.gather(
            *(
                validate_task(load_task(s), browser, node_cache, work / f"gate-{i}", repeat)
                for i, s in enumerate(shards)
            )
        )
    finally:
        await browser.close()
    baseline: dict[str, Any] = {}
    references: list[dict[str, Any]] = [{} for _ in range(repeat)]
    for i in range(len(shards)):
        folder = work / f"gate-{i}" / task.id
        baseline |= _verdicts(folder / "baseline")
        for k in range(repeat):
            references[k] |= _verdicts(folder / ("reference" if k == 0 else f"reference-{k + 1}"))
    return {
        "criteria": [c.id for c in task.criteria],
        "shards": [{"steps": r.steps, "warnings": r.warnings, "transient": r.transient} for r in reports],
        "baseline": baseline,
        "references": references,
        "wall_s": round(time.monotonic() - start, 1),
    }


def _verdicts(folder: Path) -> dict[str, Any]:
    path = folder / "verdicts.json"
    return {v["criterion_id"]: v for v in json.loads(path.read_text())} if path.is_file() else {}


def restricted(task: Task, gated: dict[str, Any]) -> TaskReport:
    """``task``'s report from the gate on its unit's cover: the cover's steps up to launch/render (the same
    app), solvability and discrimination by the gate's own rules on ``task``'s criteria only."""
    report = TaskReport(task.id, task.track, wall_s=gated["wall_s"])
    ids = {c.id for c in task.criteria}
    shards = gated["shards"]
    report.transient = next((s["transient"] for s in shards if s["transient"]), "")
    for warning in dict.fromkeys(w for s in shards for w in s["warnings"]):
        about = warning.split(":", 1)[0]
        if about in ids or about not in gated["criteria"]:
            report.warnings.append(warning)  # its own criteria's (FLAKY …) and those about the app (blank …)
    for step in ("integrity", "install_build", "launch_render"):
        failed = [s["steps"][step] for s in shards if str(s["steps"].get(step, "")).startswith("FAIL")]
        if failed:
            report.fail(step, failed[0].removeprefix("FAIL: "))
            return report
        report.steps[step] = "ok"
    probed = {c.id for c in task.criteria if c.deterministic}
    why_not = next((s["steps"].get("solvability", "") for s in shards if "solvability" in s["steps"]), "")
    reference = [_verdict(gated["references"][0], i, why_not) for i in [c.id for c in task.criteria]]
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
    for c in task.criteria:
        v = _verdict(gated["baseline"], c.id, why_not)
        if c.id not in probed:
            continue
        if v.grading_failed:
            wrong.append(f"{v.criterion_id} could not be graded on the baseline ({v.ungraded}): {v.reason}")
        elif v.preserve and v.verdict != "PASS":
            wrong.append(f"{v.criterion_id} (preserve) fails on the baseline: {v.reason}")
        elif not v.preserve and v.verdict != "FAIL":
            wrong.append(f"{v.criterion_id} (change) already {v.verdict} on the baseline")
    if wrong:
        report.fail("discrimination", " | ".join(wrong))
        return report
    report.steps["discrimination"] = "ok"
    near = [s["steps"].get("near_misses", "") for s in shards]
    failed_near = [n for n in near if str(n).startswith("FAIL")]
    if failed_near:
        report.fail("near_misses", failed_near[0].removeprefix("FAIL: "))
    else:
        report.steps["near_misses"] = "ok"
        note = "no near misses (solution/near-misses/): calibration sees only the oracle and noop"
        if not task.near_misses() and note not in report.warnings:
            report.warnings.append(note)
    report.transient = report.transient or _undecided(
        [_verdict(gated["baseline"], i, why_not) for i in ids] + reference
    )
    return report


def _verdict(verdicts: dict[str, Any], criterion_id: str, why_not: str) -> CriterionVerdict:
    """A criterion's verdict as the gate stored it; one the gate never reached is ungraded, with the step's
    message (the gate crashed, or a step before it failed)."""
    if criterion_id in verdicts:
        return CriterionVerdict(**verdicts[criterion_id])
    reason = f"not graded: {why_not or 'the gate stopped before grading it'}"
    return CriterionVerdict(criterion_id, "interaction", False, "UNGRADED", "none", reason, ungraded="grader_error")


def _gate_packed(archive: bytes, workers: int, repeat: int, node_cache: str, executable: str | None) -> dict[str, Any]:
    """On a Ray worker: the cover task from its archive, gated (:func:`gate_cover`)."""
    from codesign.tasks.archive import unpack

    with tempfile.TemporaryDirectory(prefix="codesign-wb-gate-") as tmp:
        folder = unpack(archive, Path(tmp) / "tasks")
        return asyncio.run(gate_cover(folder, workers, repeat, Path(node_cache).expanduser(), Path(tmp) / "gate",
                                      executable))  # fmt: skip


def _gate_here(cover: Path, workers: int, repeat: int, node_cache: Path, executable: str | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="codesign-wb-gate-") as tmp:
        return asyncio.run(gate_cover(cover, workers, repeat, node_cache, Path(tmp), executable))


def gate_suite(
    out: Path,
    workers: int = WORKERS,
    repeat: int = 1,
    on_ray: bool = True,
    node_cache: Path | None = None,
    address: str | None = None,
    executable: str | None = None,
) -> list[TaskReport]:
    """Every task of the suite at ``out``, gated; prints each as it is decided and the report, records the
    summary."""
    node_cache = node_cache or Path("~/.cache/codesign/node_modules").expanduser()
    start = time.monotonic()
    reports: list[TaskReport] = []
    tasks = []
    for folder in sorted(d for d in out.iterdir() if (d / "task.yaml").is_file()):
        try:
            tasks.append(load_task(folder))
        except Exception as e:
            report = TaskReport(folder.name)
            report.fail("integrity", str(e))
            reports.append(report)
    grouped = units(tasks)
    walls: dict[str, float] = {}
    entries: dict[str, dict[str, Any]] = {}  # the summary's, by task

    def done(unit: Unit, gated: dict[str, Any]) -> None:
        walls[_project(unit.cover.id)] = walls.get(_project(unit.cover.id), 0.0) + gated["wall_s"]
        for task in sorted(unit.tasks, key=lambda t: t.id):
            report = restricted(task, gated)
            print(f"{'ok  ' if report.ok else 'FAIL'} {task.id} (gated with {unit.cover.id})", flush=True)
            reports.append(report)
            entries[task.id] = _entry(task, report, gated)

    if on_ray and grouped:
        import ray

        from codesign.execute.ray_connect import ensure_ray
        from codesign.tasks.archive import pack

        ensure_ray(address)
        remote = ray.remote(num_cpus=1, max_retries=1)(_gate_packed)  # one CPU a project: as many as the machine
        pending = {remote.remote(pack(u.cover.dir), workers, repeat, str(node_cache), executable): u for u in grouped}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            done(pending.pop(ready[0]), ray.get(ready[0]))
    else:
        with ThreadPoolExecutor(max(1, os.cpu_count() or 1)) as pool:
            futures = {u.cover.id: pool.submit(_gate_here, u.cover.dir, workers, repeat, node_cache, executable)
                       for u in grouped}  # fmt: skip
            for u in grouped:
                done(u, futures[u.cover.id].result())
    wall = time.monotonic() - start
    for r in reports:
        if r.task_id not in entries:  # a task that did not load
            entries[r.task_id] = {"ok": False, "failed": _failed(r), "criteria": 0, "reference_pass": 0,
                                 "project": _project(r.task_id)}  # fmt: skip
    record_gate(out, entries, walls, wall, {"workers": workers, "repeat": repeat, "ray": on_ray})
    where = out / GATE_REPORTS / time.strftime("%Y-%m-%d_%H-%M-%S")
    write_parquet(reports, where)
    _print(reports)
    failed = sum(not r.ok for r in reports)
    print(
        f"\n{len(reports) - failed}/{len(reports)} tasks pass the gate in {wall:.1f}s; report: "
        f"{where / 'validation.parquet'}; summary: {out / SUMMARY_MD}"
    )
    return reports


def _project(task_id: str) -> str:
    m = _PROJECT.fullmatch(task_id)
    return m.group(1) if m else task_id


def _failed(report: TaskReport) -> str:
    return "; ".join(f"{s}: {v}" for s, v in report.steps.items() if str(v).startswith("FAIL"))


def _entry(task: Task, report: TaskReport, gated: dict[str, Any]) -> dict[str, Any]:
    ids = [c.id for c in task.criteria]
    reference = gated["references"][0] if gated["references"] else {}
    return {
        "ok": report.ok,
        "failed": _failed(report),
        "criteria": len(ids),
        "reference_pass": sum(reference.get(i, {}).get("verdict") == "PASS" for i in ids),
        "project": _project(task.id),
        "warnings": len(report.warnings),
    }


def write_parquet(reports: list[TaskReport], where: Path) -> None:
    """``codesign.validate``'s report table."""
    where.mkdir(parents=True, exist_ok=True)
    rows = [
        {"task_id": r.task_id, "track": r.track, "ok": r.ok, **r.steps, "wall_s": r.wall_s, "warnings": r.warnings}
        for r in reports
    ]
    frame = pl.DataFrame(
        rows,
        schema={
            "task_id": pl.String,
            "track": pl.String,
            "ok": pl.Boolean,
            **dict.fromkeys(STEPS, pl.String),
            "wall_s": pl.Float64,
            "warnings": pl.List(pl.String),
        },
    )
    frame.write_parquet(where / "validation.parquet")
    (where / "reports.json").write_text(json.dumps([asdict(r) for r in reports], indent=1))


def _print(reports: list[TaskReport]) -> None:
    print()
    for r in sorted(reports, key=lambda r: r.task_id):
        print(f"{r.task_id:40} {'PASS' if r.ok else 'FAIL'}")
        for step in STEPS:
            if r.steps.get(step, "ok") != "ok":
                print(f"    {step:15} {r.steps[step][:1000]}")
        for warning in r.warnings:
            print(f"    warning         {warning[:300]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codesign.importers.webbench_gate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("out", type=Path, help="the suite the importer wrote")
    parser.add_argument("--repeat", type=int, default=1, metavar="K", help="grade the reference K times (FLAKY)")
    parser.add_argument("--workers", type=int, default=WORKERS, help=f"copies gated at once a task (default {WORKERS})")
    parser.add_argument("--inline", action="store_true", help="in this process, without Ray")
    parser.add_argument("--address", help="a Ray cluster's address (default: $RAY_ADDRESS, else a local Ray)")
    parser.add_argument("--node-cache", type=Path, default=Path("~/.cache/codesign/node_modules").expanduser())
    args = parser.parse_args(argv)
    if not args.out.is_dir():
        print(f"{args.out} is not a folder: point it at the importer's OUT", file=sys.stderr)
        return 2
    if args.repeat < 1 or args.workers < 1:
        print("--repeat and --workers take a number ≥ 1", file=sys.stderr)
        return 2
    reports = gate_suite(args.out, args.workers, args.repeat, not args.inline, args.node_cache, args.address)
    return 0 if reports and all(r.ok for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
