"""The Web-Bench importer on a small Web-Bench-format checkout written for these tests (no Web-Bench file)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codesign.tasks.importers import webbench
from tests.conftest import gate_in
from tests.test_scripts import verdicts

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CONFIG = """const { defineConfig } = require('@playwright/test')
const PORT = process.env.EVAL_PROJECT_PORT || 3211
module.exports = defineConfig({
  testDir: './test',
  timeout: process.env.IS_EVAL_PRODUCTION ? 30_000 : 2_000,
  use: { baseURL: `http://127.0.0.1:${PORT}` },
  webServer: { command: `npx serve src -p ${PORT}`, url: `http://127.0.0.1:${PORT}` },
})
"""
START = """<!doctype html><html><head><title>Notes</title></head><body>
<main class="board"><ul class="notes"></ul></main>
<script src="index.js"></script>
</body></html>
"""
FINAL = """<!doctype html><html><head><title>Notes</title></head><body>
<main class="board"><button class="add">add</button><ul class="notes"></ul></main>
<script src="index.js"></script>
</body></html>
"""
SCRIPT_START = "// notes\n"
SCRIPT_FINAL = """document.querySelector('.add').addEventListener('click', () => {
  const li = document.createElement('li'); li.textContent = 'note'; document.querySelector('.notes').append(li)
})
document.querySelector('.add').addEventListener('contextmenu', (e) => e.preventDefault())
"""
UTIL = """exports.getOffset = async (page, selector) => {
  const box = await page.locator(selector).boundingBox()
  return { ...box, centerX: box.x + box.width / 2 }
}
"""
INIT_SPEC = """const { test, expect } = require('@playwright/test')
test.beforeEach(async ({ page }) => { await page.goto('/index.html') })
test('board', async ({ page }) => { await expect(page.locator('.board')).toBeAttached() })
"""
TASK_SPEC = """const { test, expect } = require('@playwright/test')
const { getOffset } = require('@web-bench/test-util')
test.beforeEach(async ({ page }) => { await page.goto('/index.html') })
test('add button inside the board', async ({ page }) => {
  const board = await getOffset(page, '.board')
  const add = await getOffset(page, '.add')
  expect(add.centerX).toBeLessThan(board.x + board.width)
})
test('add appends notes, right-click does not', async ({ page }) => {
  await page.locator('.add').click()
  await expect(page.locator('.notes li')).toHaveCount(1)
  await page.locator('.add').click({ button: 'right' })
  await expect(page.locator('.notes li')).toHaveCount(1)
  await page.locator('.add').click()
  await expect(page.locator('.notes li')).toHaveCount(2)
})
"""


def checkout(root: Path) -> Path:
    def put(path: str, text: str) -> None:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)

    put("libraries/test-util/package.json", json.dumps({"name": "@web-bench/test-util", "main": "src/index.js"}))
    put("libraries/test-util/src/index.js", UTIL)
    project = "projects/notes/"
    put(project + "package.json", json.dumps({"name": "@web-bench/notes", "eval": {"stable": True},
                                              "devDependencies": {"@web-bench/test-util": "workspace:*"}}))  # fmt: skip
    put(project + "playwright.config.js", CONFIG)
    put(project + "tasks.jsonl", json.dumps({"id": "task-1", "date": "2025-05-12", "level": "easy",
                                             "description": "Add an 'add' button (class 'add') to the board that "
                                             "appends a note to .notes on each click."}) + "\n\n")  # fmt: skip
    put(project + "src-init/index.html", START)
    put(project + "src-init/index.js", SCRIPT_START)
    put(project + "src/index.html", FINAL)
    put(project + "src/index.js", SCRIPT_FINAL)
    put(project + "test/init.spec.js", INIT_SPEC)
    put(project + "test/task-1.spec.js", TASK_SPEC)
    vite = "projects/with-vite/"  # served by a dev server: skipped with the reason
    put(vite + "package.json", json.dumps({"name": "@web-bench/with-vite", "eval": {"stable": True}}))
    put(vite + "playwright.config.js", CONFIG.replace("npx serve src -p ${PORT}", "npx vite --port ${PORT}"))
    return root


def test_a_web_bench_project_becomes_a_sound_task_graded_by_its_own_specs(tmp_path, capsys):
    out = tmp_path / "suite"
    code = webbench.main([str(checkout(tmp_path / "web-bench")), str(out)])
    printed = capsys.readouterr().out
    assert code == 0 and "ok   notes" in printed
    assert "skip with-vite: served by `npx vite --port ${PORT}`" in printed
    code, report, _ = gate_in(tmp_path / "gate", f"tasks.root={out}")
    assert code == 0, report
    oracle = verdicts(tmp_path, out, "oracle")
    assert {v["verdict"] for v in oracle.values()} == {"PASS"} and len(oracle) == 3
    (tmp_path / "noop").mkdir()
    noop = verdicts(tmp_path / "noop", out, "noop")
    assert noop["init-board"]["verdict"] == "PASS"  # the init test: a preservation
    changes = [v for k, v in noop.items() if k.startswith("task-1-")]
    assert len(changes) == 2 and all(v["verdict"] == "FAIL" and v["grader"] == "spec" for v in changes)


def test_a_checkout_that_is_not_web_bench_is_refused(tmp_path, capsys):
    assert webbench.main([str(tmp_path), str(tmp_path / "out")]) == 2
    assert "has no projects/ folder" in capsys.readouterr().err
