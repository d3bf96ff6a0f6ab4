"""Every task of a Web-Bench project: ``--tasks all`` and ``--task N`` for each N give the same tasks, the
starting app's tests graded by several Playwright runners at once give the verdicts of one, the gate by project
gives each task the report ``codesign.validate`` gives it alone, and a test that passes and fails on the
reference over ``--repeat`` runs is marked flaky — on Web-Bench-format fixture projects (no Web-Bench file)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
import yaml

from codesign.importers import webbench
from codesign.importers.webbench_gate import SuiteGate, gate_suite
from codesign.importers.webbench_runs import shard, split_by_file
from codesign.tasks.loader import load_task
from tests.conftest import gate_in
from tests.test_webbench import CONFIG, checkout

EVERY_TASK = {  # the criteria of notes' tasks and which are preservations (the starting app passes them)
    1: {"init-board": True, "task-1-add-button-inside-the-board": False, "task-1-the-notes-list-is-there": True,
        "task-1-add-appends-notes-right-click-does-not": False},
    2: {"task-2-the-add-button-says-add-note": False},
    3: {"task-3-notes-are-numbered": False, "task-3-the-board-is-still-there": True},
}  # fmt: skip


def expected(n: int) -> dict[str, bool]:
    return {k: v for m in range(1, n + 1) for k, v in EVERY_TASK[m].items()}


def same(task: Path, other: Path) -> bool:
    """The same request, criteria (flags and text) and reference."""
    files = ("task.yaml", "criteria.yaml", "solution/solution.patch")
    return all((task / f).read_text() == (other / f).read_text() for f in files)


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.duration(505)
def test_every_task_imports_alike_alone_or_together_and_the_gate_by_project_reports_as_validate(
    tmp_path, capsys, ray_instance
):
    root = checkout(tmp_path / "web-bench")
    together = tmp_path / "together"
    code = webbench.main([str(root), str(together), "--projects", "notes", "--tasks", "all", "--workers", "3"])
    printed = capsys.readouterr().out
    assert code == 0 and "3 imported, 0 skipped" in printed, printed
    for n in (1, 2, 3):
        assert {c.id: c.preserve for c in load_task(together / f"wb-notes-task-{n}").criteria} == expected(n)
    # Task 3 alone, its starting app graded by one runner: the same task as from the run of all three, where
    # init's, task 1's and tasks 2-3's spec files were graded by three runners at once (every test of the project).
    # With --gate, each project's report is read from the import's own runs (the reference graded once) as soon
    # as it is imported, and the summary says so: the same report as a gate that grades both apps again.
    alone = tmp_path / "alone"
    command = [str(root), str(alone), "--projects", "notes", "--task", "3", "--workers", "1", "--gate", "--inline"]
    assert webbench.main(command) == 0
    assert same(alone / "wb-notes-task-3", together / "wb-notes-task-3")
    assert "ok   wb-notes-task-3 (gated on the import's runs)" in capsys.readouterr().out
    summary = json.loads((alone / "summary.json").read_text())
    assert summary["gate"]["tasks"]["wb-notes-task-3"]["ok"] is True and summary["import"]["options"]["repeat"] == 1
    shared = json.loads(next((alone / "_gate").glob("*/reports.json")).read_text())
    gate = SuiteGate(alone, workers=1, on_ray=False)  # runs that graded another app: the task is graded again
    gate.submit_decided([alone / "wb-notes-task-3"], {"shared": "another app's", "criteria": []})
    (fresh,) = gate.finish()
    assert "ok   wb-notes-task-3 (gated with wb-notes-task-3)" in capsys.readouterr().out
    assert [(r["task_id"], r["steps"]) for r in shared] == [(fresh.task_id, fresh.steps)]
    # --task N for every N gives the task --tasks all gives (without the runs: the file rule decides the flags).
    assert (
        webbench.main([str(root), str(tmp_path / "all"), "--projects", "notes", "--tasks", "all", "--no-classify"]) == 0
    )
    for n in (1, 2, 3):
        one = tmp_path / f"task-{n}"
        assert webbench.main([str(root), str(one), "--projects", "notes", "--task", str(n), "--no-classify"]) == 0
        assert same(one / f"wb-notes-task-{n}", tmp_path / "all" / f"wb-notes-task-{n}"), n
    # A task whose flags differ from its project's last task is gated on its own: task 2, with a test the
    # starting app passes marked as a change (discrimination must fail it, in both gates, in the same words).
    changed = together / "wb-notes-task-2" / "criteria.yaml"
    criteria = yaml.safe_load(changed.read_text())
    for c in criteria["criteria"]:
        c["preserve"] = False if c["id"] == "task-1-the-notes-list-is-there" else c["preserve"]
    changed.write_text(yaml.safe_dump(criteria, sort_keys=False))
    by_project = {r.task_id: r for r in gate_suite(together, workers=3, on_ray=True)}
    printed = capsys.readouterr().out
    assert "ok   wb-notes-task-1 (gated with wb-notes-task-3)" in printed
    assert "FAIL wb-notes-task-2 (gated with wb-notes-task-2)" in printed
    code, _, folder = gate_in(tmp_path / "validate", f"tasks.root={together}")
    assert code == 1  # task 2
    alone = pl.read_parquet(folder / "validation.parquet").to_dicts()
    assert {r["task_id"]: {s: r[s] for s in by_project[r["task_id"]].steps} for r in alone} == {
        t: r.steps for t, r in by_project.items()
    }
    assert [by_project[t].ok for t in sorted(by_project)] == [True, False, True]
    assert (
        "task-1-the-notes-list-is-there (change) already PASS" in by_project["wb-notes-task-2"].steps["discrimination"]
    )
    summary = json.loads((together / "summary.json").read_text())
    entry = summary["gate"]["tasks"]["wb-notes-task-3"]
    assert {k: entry[k] for k in ("ok", "failed", "criteria", "reference_pass")} == {
        "ok": True, "failed": "", "criteria": 7, "reference_pass": 7}  # fmt: skip
    table = (together / "summary.md").read_text()
    assert "| notes | 3 | 2 | 1 | 0 | 0 | 0 | 16/16 |" in table  # 4 + 5 + 7 criteria, every one passed by the oracle


TALLY_START = '<!doctype html><html><body><main class="tally"><output class="count">0</output></main></body></html>\n'
TALLY_FINAL = """<!doctype html><html><body><main class="tally"><output class="count">0</output>
<button class="inc">+1</button></main><script>
document.querySelector('.inc').addEventListener('click', () => {
  const count = document.querySelector('.count'); count.textContent = Number(count.textContent) + 1
})
</script></body></html>
"""
TALLY_INIT = """const { test, expect } = require('@playwright/test')
test('the count starts at 0', async ({ page }) => {
  await page.goto('/index.html')
  await expect(page.locator('.count')).toHaveText('0')
})
"""
TALLY_TASK_1 = """const { test, expect } = require('@playwright/test')
test('+1 counts', async ({ page }) => {
  await page.goto('/index.html')
  expect(await page.locator('.inc').count()).toBe(1)  // static: the starting app fails at once, with nothing to wait
  await page.locator('.inc').click()
  await expect(page.locator('.count')).toHaveText('1')
})
"""
# Web-Bench's timing tests (a 500 ms limit) fail now and then on its own reference: this one fails on the
# reference's odd runs, counted in a file, so a repeat of three always sees it fail, pass, fail.
TALLY_TASK_2 = """const fs = require('fs')
const { test, expect } = require('@playwright/test')
test('the count updates within 500 ms', async ({ page }) => {
  await page.goto('/index.html')
  expect(await page.locator('.inc').count()).toBe(1)  // the starting app stops here: not counted
  const runs = Number(fs.existsSync(COUNTER) ? fs.readFileSync(COUNTER, 'utf8') : 0) + 1
  fs.writeFileSync(COUNTER, String(runs))
  expect(runs % 2, `run ${runs} took longer than 500 ms`).toBe(0)
})
test('two clicks count two', async ({ page }) => {
  await page.goto('/index.html')
  expect(await page.locator('.inc').count()).toBe(1)
  await page.locator('.inc').click()
  await page.locator('.inc').click()
  await expect(page.locator('.count')).toHaveText('2')
})
test('the count says zero in words', async ({ page }) => {  // the reference fails it in every run
  await page.goto('/index.html')
  expect(await page.locator('.count').textContent()).toBe('zero')
})
"""
FLAKY_ID = "task-2-the-count-updates-within-500-ms"
BROKEN_ID = "task-2-the-count-says-zero-in-words"


def tally(root: Path, counter: Path) -> None:
    def put(path: str, text: str) -> None:
        (root / "projects" / "tally" / path).parent.mkdir(parents=True, exist_ok=True)
        (root / "projects" / "tally" / path).write_text(text)

    put("package.json", json.dumps({"name": "@web-bench/tally", "eval": {"stable": True}}))
    put("playwright.config.js", CONFIG)
    tasks = [("task-1", "Add a +1 button (class inc) that counts in .count."), ("task-2", "Count within 500 ms.")]
    put("tasks.jsonl", "".join(json.dumps({"id": i, "description": d}) + "\n" for i, d in tasks))
    put("src-init/index.html", TALLY_START)
    put("src/index.html", TALLY_FINAL)
    put("test/init.spec.js", TALLY_INIT)
    put("test/task-1.spec.js", TALLY_TASK_1)
    put("test/task-2.spec.js", TALLY_TASK_2.replace("COUNTER", json.dumps(str(counter))))


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.duration(112)
def test_a_test_flaky_on_the_reference_is_marked_left_out_and_kept_only_when_asked(tmp_path, capsys):
    root, counter = checkout(tmp_path / "web-bench"), tmp_path / "runs"
    tally(root, counter)
    out = tmp_path / "suite"
    command = [str(root), str(out), "--projects", "tally", "--tasks", "all", "--repeat", "3", "--gate", "--inline"]
    assert webbench.main(command) == 0
    printed = capsys.readouterr().out
    assert counter.read_text() == "3"  # the reference's three runs; the starting app never reached the count
    # …which the gate judged too (none graded again), and its record says over how many runs.
    assert "ok   wb-tally-task-2 (gated on the import's runs)" in printed
    assert json.loads((out / "summary.json").read_text())["gate"]["options"]["repeat"] == 3
    assert "2 imported, 0 skipped, 1 flaky test(s) on the reference" in printed
    assert f"flaky tally {FLAKY_ID}: passed 1, failed 2 of 3 reference runs (left out); " in printed
    task_2 = out / "wb-tally-task-2"
    assert {c.id: c.preserve for c in load_task(task_2).criteria} == {
        "init-the-count-starts-at-0": True, "task-1-1-counts": False, "task-2-two-clicks-count-two": False}  # fmt: skip
    evidence = {"id": FLAKY_ID, "file": "test/task-2.spec.js", "title": "the count updates within 500 ms",
                "passed": 1, "failed": 2}  # fmt: skip
    [recorded] = webbench.flaky_recorded(task_2)
    assert {k: recorded[k] for k in evidence} == evidence
    assert [("run 1 took longer than 500 ms" in m, "run 3 took" in m) for m in recorded["failures"]] == [
        (True, False),
        (False, True),
    ]
    head = (task_2 / "criteria.yaml").read_text().splitlines()[0]
    assert head == "# Flaky on Web-Bench's own reference solution over 3 runs at import: left out of the criteria " + (
        "(import with --include-flaky to grade them)."
    )
    assert webbench.flaky_recorded(out / "wb-tally-task-1") == []  # task 1 does not have task 2's tests
    # A test the reference failed in every run cannot hold any solution: left out, with the failure, and said.
    [broken] = webbench.flaky_recorded(task_2, webbench.BROKEN_KEY)
    assert broken["id"] == BROKEN_ID and 'Expected: "zero"' in broken["failure"], broken
    assert f"left out tally {BROKEN_ID}: fails on every reference run" in printed
    summary = json.loads((out / "summary.json").read_text())["import"]["projects"]["tally"]
    assert [{k: f[k] for k in evidence} | {"included": f["included"]} for f in summary["flaky"]] == [
        evidence | {"included": False}
    ]
    assert f"| tally | 2 | 2 | 0 | {FLAKY_ID} (1/3 pass) | {BROKEN_ID} | 0 |" in (out / "summary.md").read_text()

    counter.unlink()  # the same three runs again, the flaky test kept
    kept = tmp_path / "kept"
    assert webbench.main([str(root), str(kept), "--projects", "tally", "--tasks", "2", "--repeat", "3",
                          "--include-flaky"]) == 0  # fmt: skip
    assert f"{FLAKY_ID}: passed 1, failed 2 of 3 reference runs (kept, marked)" in capsys.readouterr().out
    criteria = {c.id: c for c in load_task(kept / "wb-tally-task-2").criteria}
    assert not criteria[FLAKY_ID].preserve
    assert criteria[FLAKY_ID].text == "the count updates within 500 ms" + webbench.FLAKY_KEPT.format(passed=1, runs=3)
    assert [f["id"] for f in webbench.flaky_recorded(kept / "wb-tally-task-2")] == [FLAKY_ID]
    assert BROKEN_ID not in criteria  # --include-flaky keeps flaky tests, never broken ones


def test_tasks_option_reads_as_documented():
    assert webbench.parse_tasks("all") is None
    assert webbench.parse_tasks("1-3,7, 9-10") == [1, 2, 3, 7, 9, 10]
    for wrong in ("0", "3-1", "x", "1-"):
        with pytest.raises(ValueError, match="is not N or N-M"):
            webbench.parse_tasks(wrong)


def test_spec_files_are_split_whole_the_waiting_ones_spread(tmp_path):
    from codesign.tasks.schema import Criterion

    def c(file: str, i: int, preserve: bool) -> Criterion:
        return Criterion.model_validate({"id": f"{file}-{i}", "text": "t", "kind": "interaction",
                                         "preserve": preserve, "spec": {"file": file, "title": str(i)}})  # fmt: skip

    criteria = [c("init", i, True) for i in range(6)] + [c(f"task-{n}", i, False) for n in (1, 2, 3) for i in range(2)]
    groups = split_by_file(criteria, 3)
    files = [sorted({x.spec.file for x in g if x.spec}) for g in groups]
    # Six preservations weigh 6; each task file's two changes weigh 8 (they wait on the starting app).
    assert files == [["init", "task-1"], ["task-2"], ["task-3"]]
    [one] = split_by_file(criteria, 1)
    assert sorted(x.id for x in one) == sorted(x.id for x in criteria)
    assert len(split_by_file(criteria, 10)) == 4  # never more groups than files


def test_the_starting_app_is_graded_once_with_the_bounds_of_a_run_again(tmp_path):
    """Its shards run every test once with ``RERUN_FACTOR``× the task's bounds; the task keeps its own."""
    from codesign.evaluate.specs import RERUN_FACTOR
    from tests.test_specs import spec_task

    task = load_task(spec_task(tmp_path / "suite") / "shop")
    runner = task.spec_runner
    assert runner is not None and runner.run_again
    graded = load_task(shard(task.dir, task.criteria[:1], tmp_path / "shard", webbench.starting_runner(task)))
    assert graded.spec_runner is not None and not graded.spec_runner.run_again
    assert graded.spec_runner.workers == webbench.STARTING_WORKERS > runner.workers == 1  # they wait side by side
    assert graded.spec_runner.timeout_s == runner.timeout_s * RERUN_FACTOR
    assert graded.spec_runner.expect_timeout_s == runner.expect_timeout_s * RERUN_FACTOR
    assert [c.id for c in graded.criteria] == [task.criteria[0].id]
    assert graded.spec_runner.config == runner.config and graded.spec_runner.env == runner.env  # the rest as is
    assert load_task(task.dir).spec_runner == runner  # the task itself unchanged
