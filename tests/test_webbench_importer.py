"""The Web-Bench importer's other branches, on the Web-Bench-format fixture checkout of ``test_webbench``:
every reason it refuses a project or a task, ``--task N`` for N > 1, ``--no-classify``, and no half-written
task left when an import fails part way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from codesign.importers import webbench
from codesign.tasks.loader import load_task
from tests.test_webbench import CONFIG, FINAL, INIT_SPEC, SCRIPT_FINAL, START, TASKS, checkout

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def put(root: Path, path: str, text: str) -> None:
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(text)


def project(
    root: Path,
    name: str,
    *,
    stable: bool = True,
    deps: dict | None = None,
    start: dict | None = None,
    final: dict | None = None,
    task_ids: tuple[str, ...] = ("task-1",),
    task_spec: str = INIT_SPEC,
) -> None:
    """A static project like the fixture's ``notes``, varied one way per refusal."""
    base = f"projects/{name}/"
    put(root, base + "package.json", json.dumps({"name": f"@web-bench/{name}", "eval": {"stable": stable},
                                                 "devDependencies": deps or {}}))  # fmt: skip
    put(root, base + "playwright.config.js", CONFIG)
    put(root, base + "tasks.jsonl", "".join(json.dumps({"id": t, "description": f"Do {t}."}) + "\n" for t in task_ids))
    for folder, files in (("src-init/", start), ("src/", final)):
        for file, text in (files or {}).items():
            put(root, base + folder + file, text)
    put(root, base + "test/init.spec.js", INIT_SPEC)
    put(root, base + "test/task-1.spec.js", task_spec)


PAGE = {"index.html": START, "index.js": "// notes\n"}
REFUSED = {  # project -> the line that says why (a whole project, or the task asked for)
    "unstable": "unstable: not marked stable by Web-Bench",
    "no-sources": "no-sources: no src-init/ and src/",
    "no-page": "no-page: src-init/ has no HTML page: its tests check files (e.g. with a compiler), not an app",
    "workspace": "workspace: depends on workspace packages codesign cannot resolve: @web-bench/shop-server",
    "not-a-project": "not-a-project: not a project",
    "no-task": "no-task task-1: ValueError: no-task has no task-1",
    "empty-spec": "empty-spec task-1: ValueError: test/task-1.spec.js lists no test",
    "with-server": "with-server: served by `npm run dev -- ${PORT}`",  # the fixture's own
}


@pytest.fixture
def refusals(tmp_path: Path) -> Path:
    root = checkout(tmp_path / "web-bench")
    project(root, "unstable", stable=False, start=PAGE, final=PAGE)
    project(root, "no-sources")
    project(root, "no-page", start={"index.js": "//\n"}, final={"index.js": "// done\n"})
    project(root, "workspace", deps={"@web-bench/shop-server": "workspace:*"}, start=PAGE, final=PAGE)
    (root / "projects" / "not-a-project").mkdir()
    project(root, "no-task", task_ids=("task-2",), start=PAGE, final=PAGE)
    empty = "const { test } = require('@playwright/test')\n// no test here yet\n"
    project(root, "empty-spec", start=PAGE, final=PAGE, task_spec=empty)  # fails after writing app and specs
    return root


def test_every_refusal_is_a_skip_with_its_reason_and_no_half_written_task(refusals, tmp_path, capsys):
    out = tmp_path / "suite"
    wanted = [*REFUSED, "notes"]
    code = webbench.main([str(refusals), str(out), "--projects", ",".join(wanted), "--no-classify", "--jobs", "2"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    for name, line in REFUSED.items():
        assert f"skip {line}" in printed, (name, printed)
    assert f"1 imported, {len(REFUSED)} skipped" in printed
    # Only the imported task is there: the one whose import failed part way (its app, reference and specs were
    # written) was removed, and a refused project never gets a folder.
    assert sorted(p.name for p in out.iterdir()) == ["summary.json", "summary.md", "wb-notes-task-1"]


def test_a_project_whose_starting_app_already_passes_is_refused_and_removed(tmp_path, capsys):
    root = checkout(tmp_path / "web-bench")
    done = {"index.html": FINAL, "index.js": SCRIPT_FINAL}
    project(root, "done", start=done, final=done)  # task-1's spec (init's test) already passes on src-init
    out = tmp_path / "suite"
    code = webbench.main([str(root), str(out), "--projects", "done"])
    printed = capsys.readouterr().out
    assert code == 1 and "0 imported, 1 skipped" in printed  # nothing imported: a failing command
    assert "skip done task-1: ValueError: the starting app already passes every test of task-1: nothing" in printed
    assert sorted(p.name for p in out.iterdir()) == ["summary.json", "summary.md"]  # no task folder


def test_task_n_asks_for_every_change_up_to_n_and_grades_all_of_their_tests(tmp_path, capsys):
    root = checkout(tmp_path / "web-bench")
    out = tmp_path / "suite"
    assert webbench.main([str(root), str(out), "--projects", "notes", "--task", "2", "--no-classify"]) == 0
    assert "ok   notes -> " in capsys.readouterr().out
    task = load_task(out / "wb-notes-task-2")
    request = task.manifest.request
    assert request.startswith("Make these 2 changes, in order")
    assert request.index("Change 1:\nAdd an 'add' button") < request.index(f"Change 2:\n{TASKS[1]['description']}")
    assert "Change 3" not in request
    preserve = {c.id: c.preserve for c in task.criteria}
    # init's and task 1's tests must keep passing (--no-classify: no baseline run); task 2's is the change.
    assert preserve == {"init-board": True, "task-1-add-button-inside-the-board": True,
                        "task-1-the-notes-list-is-there": True, "task-1-add-appends-notes-right-click-does-not": True,
                        "task-2-the-add-button-says-add-note": False}  # fmt: skip
    assert "add note" in (out / "wb-notes-task-2" / "solution" / "solution.patch").read_text()
    assert (out / "wb-notes-task-2" / "specs" / "test" / "task-2.spec.js").is_file()
    assert sorted(p.name for p in out.iterdir()) == ["summary.json", "summary.md", "wb-notes-task-2"]


def test_no_classify_keeps_the_file_rule_and_runs_nothing(tmp_path, capsys):
    """Without the baseline run, task 1's test that the starting app already passes stays a change (with
    classification it becomes a preservation: test_webbench), and no criterion carries a classification note."""
    out = tmp_path / "suite"
    code = webbench.main([str(checkout(tmp_path / "web-bench")), str(out), "--projects", "notes", "--no-classify"])
    printed = capsys.readouterr().out
    assert code == 0 and "already pass" not in printed and "fail on the starting app" not in printed
    criteria = yaml.safe_load((out / "wb-notes-task-1" / "criteria.yaml").read_text())["criteria"]
    preserve = {c["id"]: c["preserve"] for c in criteria}
    assert preserve["init-board"] is True and preserve["task-1-the-notes-list-is-there"] is False
    assert not any(c["text"].endswith((webbench.PASSES_ALREADY, webbench.FAILS_ALREADY)) for c in criteria)


# As Web-Bench's expression-editor (its specs import tinycolor2, a devDependency of the project) and esmodule
# (an ES-module project whose later specs import the app's own Node.js modules as they load — modules only
# the reference has).
PALETTE = "projects/palette/"
PALETTE_CONFIG = """import { defineConfig } from '@playwright/test'
export default defineConfig({ testDir: './test', use: { baseURL: 'http://127.0.0.1:3211' },
  webServer: { command: 'npx serve src -p 3211', url: 'http://127.0.0.1:3211' } })
"""
SWATCH = '<!doctype html><html><body><main class="swatch" style="background: {}">swatch</main></body></html>\n'
PALETTE_INIT = """import { test, expect } from '@playwright/test'
test('swatch', async ({ page }) => {
  await page.goto('/index.html')
  await expect(page.locator('.swatch')).toBeAttached()
})
"""
PALETTE_TASK_1 = """import { test, expect } from '@playwright/test'
import tinycolor from 'tinycolor2'
test('the swatch is teal', async ({ page }) => {
  await page.goto('/index.html')
  const colour = await page.locator('.swatch').evaluate((e) => getComputedStyle(e).backgroundColor)
  expect(tinycolor(colour).toHex()).toBe('008080')
})
"""
PALETTE_TASK_2 = """import { test, expect } from '@playwright/test'
import path from 'path'
const shades = await import(path.join(process.env.EVAL_PROJECT_ROOT, 'nodejs/index.js'))
test('the shades module names teal', async () => { expect(shades.names).toContain('teal') })
"""


@pytest.mark.duration(90)  # ~157 s on a saturated machine; its import + gate: two tasks, three spec files
def test_specs_get_the_project_s_packages_and_a_spec_reading_the_app_as_it_loads_is_listed_on_the_reference(
    tmp_path, capsys
):
    root = checkout(tmp_path / "web-bench")
    deps = {"@web-bench/test-util": "workspace:*", "@types/node": "^22.7.9", "tinycolor2": "^1.6.0"}
    put(root, PALETTE + "package.json", json.dumps({"name": "@web-bench/palette", "type": "module",
                                                    "eval": {"stable": True}, "devDependencies": deps}))  # fmt: skip
    put(root, PALETTE + "playwright.config.js", PALETTE_CONFIG)
    tasks = [{"id": "task-1", "description": "Make the swatch teal."},
             {"id": "task-2", "description": "Name the shades in nodejs/index.js."}]  # fmt: skip
    put(root, PALETTE + "tasks.jsonl", "".join(json.dumps(t) + "\n" for t in tasks))
    put(root, PALETTE + "src-init/index.html", SWATCH.format("black"))
    put(root, PALETTE + "src/index.html", SWATCH.format("teal"))
    put(root, PALETTE + "src/nodejs/index.js", "export const names = ['teal', 'navy']\n")  # ESM: the project's type
    for name, spec in (("init", PALETTE_INIT), ("task-1", PALETTE_TASK_1), ("task-2", PALETTE_TASK_2)):
        put(root, PALETTE + f"test/{name}.spec.js", spec)
    out = tmp_path / "suite"
    code = webbench.main([str(root), str(out), "--projects", "palette", "--tasks", "all", "--repeat", "1", "--gate"])
    printed = capsys.readouterr().out
    assert code == 0 and "2 imported, 0 skipped" in printed, printed
    for n in (1, 2):
        assert f"ok   wb-palette-task-{n} (gated on the import's runs)" in printed, printed
    # The spec folder declares the project's packages (not its type declarations, which never load); the app
    # keeps the project's module type, so Node reads the reference's nodejs/index.js as Web-Bench's run does.
    task = out / "wb-palette-task-2"
    assert set(json.loads((task / "specs" / "package.json").read_text())["devDependencies"]) >= {"tinycolor2"}
    assert "@types/node" not in json.loads((task / "specs" / "package.json").read_text())["devDependencies"]
    assert json.loads((task / "app" / "package.json").read_text())["type"] == "module"
    # Task 2's test was listed against the reference (the starting app has no nodejs/ yet); on the starting app
    # its file does not load for want of the app's module: a change, which the reference makes pass.
    assert {c.id: c.preserve for c in load_task(task).criteria} == {
        "init-swatch": True,
        "task-1-the-swatch-is-teal": False,
        "task-2-the-shades-module-names-teal": False,
    }
