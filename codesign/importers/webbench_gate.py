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
starting app's tests fail on purpose by waiting out their bounds). Projects run on Ray, ``PROJECTS_PER_CPU`` a
CPU of the machine (or cluster; ``--gate-jobs N``: N at once) — or, with ``--inline``, in this process. The
report goes to ``OUT/_gate/<time>/validation.parquet`` (``codesign.validate``'s columns) and the summary table
(``OUT/summary.md``).
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
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from codesign._types import CriterionVerdict
from codesign.evaluate.gate import (
    TaskReport,
    judge_oracle_and_baseline,
    print_reports,
    undecided,
    validate_task,
    write_reports,
)
from codesign.importers.webbench_runs import shard, split_by_file
from codesign.importers.webbench_summary import SUMMARY_MD, record_gate
from codesign.runtime.browser import Browser
from codesign.tasks.loader import Task, load_task, tree_hash

WORKERS = 8  # as the importer's: see docs/tasks.md
# Projects gated at once per CPU (``--gate-jobs`` sets the number outright). A gate mostly waits (a starting app's
# tests wait out their bounds), yet each of its runners has a server and a Chromium: three projects imported at
# once with 6 runners each, beside two gated, held a load of 70 on 2 cores, where 5-s bounds ran out and were run
# again — the waiting then cost more than the work.
PROJECTS_PER_CPU = 0.5
GATE_REPORTS = "_gate"  # in OUT; a folder starting with _ is never read as a task (tasks.root=OUT)
_PROJECT = re.compile(r"wb-(.+)-task-\d+")


@dataclass
class Unit:
    """A task gated as a whole (``cover``) and the tasks whose reports are restricted from its gate."""

    cover: Task
    tasks: list[Task] = field(default_factory=list)


def shared_key(task: Task) -> str:
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
        shared = shared_key(task)
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
    why_not = next((s["steps"].get("solvability", "") for s in shards if "solvability" in s["steps"]), "")
    # Each verdict with the task's own flag (the import's runs graded its tests before they were classified).
    reference = [replace(_verdict(gated["references"][0], c.id, why_not), preserve=c.preserve) for c in task.criteria]
    baseline = [replace(_verdict(gated["baseline"], c.id, why_not), preserve=c.preserve) for c in task.criteria]
    if not judge_oracle_and_baseline(report, task, reference, baseline):
        return report
    near = [s["steps"].get("near_misses", "") for s in shards]
    failed_near = [n for n in near if str(n).startswith("FAIL")]
    if failed_near:
        report.fail("near_misses", failed_near[0].removeprefix("FAIL: "))
    else:
        report.steps["near_misses"] = "ok"
        note = "no near misses (solution/near-misses/): calibration sees only the oracle and noop"
        if not task.near_misses() and note not in report.warnings:
            report.warnings.append(note)
    report.transient = report.transient or undecided(baseline + reference)
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


class SuiteGate:
    """The gate on tasks handed to it as they come (the importer hands each project's as soon as it is imported,
    so gating overlaps importing): each unit gated on Ray (or in threads, ``on_ray=False``), each task printed and
    recorded in the summary as soon as its unit is decided, so an interrupted run keeps what it decided."""

    def __init__(
        self,
        out: Path,
        workers: int = WORKERS,
        repeat: int = 1,
        on_ray: bool = True,
        node_cache: Path | None = None,
        address: str | None = None,
        executable: str | None = None,
        at_once: int | None = None,
    ) -> None:
        self.out, self.workers, self.repeat, self.on_ray, self.executable = out, workers, repeat, on_ray, executable
        self.node_cache = node_cache or Path("~/.cache/codesign/node_modules").expanduser()
        self.start = time.monotonic()
        self.reports: list[TaskReport] = []
        self.walls: dict[str, float] = {}  # project -> the gate's wall time over its units
        self.pending: dict[Any, Unit] = {}  # a Ray object ref or a Future -> its unit
        self.options: dict[str, Any] = {"workers": workers, "repeat": repeat, "ray": on_ray}
        if on_ray:
            import ray

            from codesign.execute.ray_connect import ensure_ray

            ensure_ray(address)
            cpus = ray.cluster_resources().get("CPU", 1.0)
            share = cpus / at_once if at_once else 1 / PROJECTS_PER_CPU  # a project's CPUs: at_once fit the cluster
            self.remote = ray.remote(num_cpus=min(share, cpus), max_retries=1)(_gate_packed)
        else:
            self.pool = ThreadPoolExecutor(at_once or max(1, int(PROJECTS_PER_CPU * (os.cpu_count() or 1))))

    def submit(self, folders: list[Path]) -> None:
        """Gate the tasks at ``folders`` (a task that does not load fails integrity at once)."""
        tasks = []
        for folder in sorted(folders):
            try:
                tasks.append(load_task(folder))
            except Exception as e:
                report = TaskReport(folder.name)
                report.fail("integrity", str(e))
                self._record(report, {"ok": False, "failed": _failed(report), "criteria": 0, "reference_pass": 0,
                                      "project": _project(report.task_id)})  # fmt: skip
        for u in units(tasks):
            if self.on_ray:
                from codesign.tasks.archive import pack

                args = (pack(u.cover.dir), self.workers, self.repeat, str(self.node_cache), self.executable)
                self.pending[self.remote.remote(*args)] = u
            else:
                args2 = (u.cover.dir, self.workers, self.repeat, self.node_cache, self.executable)
                self.pending[self.pool.submit(_gate_here, *args2)] = u

    def submit_decided(self, folders: list[Path], gated: dict[str, Any]) -> None:
        """Report the tasks at ``folders`` from the importer's own runs (``gated``: see
        :func:`codesign.importers.webbench.gated_by_import`) where they are what those runs graded (the same app,
        reference, specs and runner: :func:`shared_key`, every criterion graded); the others are gated afresh."""
        fresh: list[Path] = []
        decided: list[Task] = []
        for folder in sorted(folders):
            try:
                task = load_task(folder)
            except Exception:
                fresh.append(folder)  # submit reports why it does not load
                continue
            same = shared_key(task) == gated["shared"] and {c.id for c in task.criteria} <= set(gated["criteria"])
            if same:
                decided.append(task)
            else:
                fresh.append(folder)
        if decided:
            cover = max(decided, key=lambda t: (len(t.criteria), t.id))
            self._decided(Unit(cover, decided), gated, "the import's runs")
        if fresh:
            self.submit(fresh)

    def collect(self, block: bool = False) -> None:
        """Record the units decided so far; with ``block``, wait for every one."""
        while self.pending:
            if self.on_ray:
                import ray

                ready, _ = ray.wait(list(self.pending), num_returns=1, timeout=None if block else 0)
                if not ready:
                    return
                done, gated = ready[0], ray.get(ready[0])
            else:
                finished = [f for f in self.pending if f.done()]
                if not finished and not block:
                    return
                done = finished[0] if finished else next(iter(self.pending))
                gated = done.result()
            self._decided(self.pending.pop(done), gated)

    def _decided(self, unit: Unit, gated: dict[str, Any], runs: str = "") -> None:
        project = _project(unit.cover.id)
        self.walls[project] = self.walls.get(project, 0.0) + gated["wall_s"]
        for task in sorted(unit.tasks, key=lambda t: t.id):
            report = restricted(task, gated)
            how = f"gated on {runs}" if runs else f"gated with {unit.cover.id}"
            print(f"{'ok  ' if report.ok else 'FAIL'} {task.id} ({how})", flush=True)
            self._record(report, _entry(task, report, gated))

    def _record(self, report: TaskReport, entry: dict[str, Any]) -> None:
        self.reports.append(report)
        wall = time.monotonic() - self.start
        record_gate(self.out, {report.task_id: entry}, self.walls, wall, self.options)

    def finish(self) -> list[TaskReport]:
        """Wait for every unit; write the report table and print it."""
        self.collect(block=True)
        if not self.on_ray:
            self.pool.shutdown()
        wall = time.monotonic() - self.start
        where = self.out / GATE_REPORTS / time.strftime("%Y-%m-%d_%H-%M-%S")
        write_reports(self.reports, where)
        (where / "reports.json").write_text(json.dumps([asdict(r) for r in self.reports], indent=1))
        print_reports(self.reports, width=1000)
        failed = sum(not r.ok for r in self.reports)
        print(
            f"\n{len(self.reports) - failed}/{len(self.reports)} tasks pass the gate in {wall:.1f}s; report: "
            f"{where / 'validation.parquet'}; summary: {self.out / SUMMARY_MD}"
        )
        return self.reports


def gate_suite(
    out: Path,
    workers: int = WORKERS,
    repeat: int = 1,
    on_ray: bool = True,
    node_cache: Path | None = None,
    address: str | None = None,
    executable: str | None = None,
    at_once: int | None = None,
) -> list[TaskReport]:
    """Every task of the suite at ``out``, gated (:class:`SuiteGate`)."""
    gate = SuiteGate(out, workers, repeat, on_ray, node_cache, address, executable, at_once)
    gate.submit([d for d in out.iterdir() if (d / "task.yaml").is_file()])
    return gate.finish()


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codesign.importers.webbench_gate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("out", type=Path, help="the suite the importer wrote")
    parser.add_argument("--repeat", type=int, default=1, metavar="K", help="grade the reference K times (FLAKY)")
    parser.add_argument("--workers", type=int, default=WORKERS, help=f"copies gated at once a task (default {WORKERS})")
    parser.add_argument("--inline", action="store_true", help="in this process, without Ray")
    parser.add_argument("--gate-jobs", type=int, help=f"projects gated at once (default {PROJECTS_PER_CPU:g} a CPU)")
    parser.add_argument("--address", help="a Ray cluster's address (default: $RAY_ADDRESS, else a local Ray)")
    parser.add_argument("--node-cache", type=Path, default=Path("~/.cache/codesign/node_modules").expanduser())
    args = parser.parse_args(argv)
    if not args.out.is_dir():
        print(f"{args.out} is not a folder: point it at the importer's OUT", file=sys.stderr)
        return 2
    if args.repeat < 1 or args.workers < 1:
        print("--repeat and --workers take a number ≥ 1", file=sys.stderr)
        return 2
    if args.gate_jobs is not None and args.gate_jobs < 1:
        print("--gate-jobs takes a number ≥ 1", file=sys.stderr)
        return 2
    reports = gate_suite(
        args.out, args.workers, args.repeat, not args.inline, args.node_cache, args.address, at_once=args.gate_jobs
    )
    return 0 if reports and all(r.ok for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
