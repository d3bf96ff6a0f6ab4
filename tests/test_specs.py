"""Criteria graded by Playwright test specs: one `playwright test` run per evaluation, on codesign's Chromium."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from codesign.errors import TaskError
from codesign.tasks.loader import load_task
from tests.conftest import gate_in
from tests.helpers import REPO
from tests.test_scripts import make_task, verdicts

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SPEC = """import { test, expect } from '@playwright/test';

test('the note thanks the visitor', async ({ page }) => {
  await page.goto('/');
  await expect(page.locator('.note')).toHaveText('Thanks for visiting');
  expect(page.viewportSize()).toEqual({ width: 640, height: 640 });  // the project's own Chromium settings
});

test.describe('counter', () => {
  test('counts clicks, right of the button', async ({ page }) => {
    await page.goto('/');
    await page.locator('#add').click();
    await expect(page.locator('#n')).toHaveText('1');  // a check between steps
    await page.locator('#add').click({ button: 'right' });  // a right-click adds nothing
    await expect(page.locator('#n')).toHaveText('1');
    const a = await page.locator('#add').boundingBox();
    const b = await page.locator('#n').boundingBox();
    expect(a.x + a.width).toBeLessThanOrEqual(b.x + 1);  // geometry
  });
});
"""
# The project's own config serves the app itself; codesign drops that and points baseURL at its server, and
# keeps what the project's Chromium project sets (a viewport).
CONFIG = """module.exports = {
  webServer: { command: 'exit 1', port: 3999 },
  use: { baseURL: 'http://localhost:3999' },
  projects: [{ name: 'chromium', use: { viewport: { width: 640, height: 640 }, baseURL: 'http://localhost:3999' } }],
};
"""
CRITERIA = """spec_runner: {dir: specs, config: playwright.config.js}
criteria:
  - id: note-text
    text: The note says "Thanks for visiting".
    kind: content
    spec: {file: shop.spec.js, title: "the note thanks the visitor"}
  - id: counter-works
    text: Add still counts, and the count sits right of the button.
    kind: interaction
    preserve: true
    spec: {file: shop.spec.js, title: "counter > counts clicks, right of the button"}
"""


def spec_task(root: Path, criteria: str = CRITERIA, config: str = CONFIG) -> Path:
    make_task(root, criteria)
    specs = root / "shop" / "specs"
    shutil.copytree(REPO / "tests" / "fixtures" / "spec_runner", specs)  # @playwright/test and its lockfile
    (specs / "shop.spec.js").write_text(SPEC)
    (specs / "playwright.config.js").write_text(config)
    return root


def test_specs_grade_the_oracle_and_the_noop_and_the_gate_accepts_the_task(tmp_path):
    root = spec_task(tmp_path / "suite")
    oracle = verdicts(tmp_path, root, "oracle")
    assert {k: v["verdict"] for k, v in oracle.items()} == {"note-text": "PASS", "counter-works": "PASS"}, oracle
    assert oracle["note-text"]["grader"] == "spec"
    noop = verdicts(tmp_path, root, "noop")
    assert noop["counter-works"]["verdict"] == "PASS"
    note = noop["note-text"]
    assert note["verdict"] == "FAIL" and note["failure_category"] == "wrong"
    assert "Thanks for visiting" in note["reason"] and "Come again soon" in note["reason"]  # Playwright's message
    assert "at shop.spec.js:" in note["reason"] and "codesign-" not in note["reason"]  # no scratch folder in it
    evals = list((tmp_path / "store" / "trials").glob("*/evals/*"))
    assert any((e / "spec_note-text_trace.zip").is_file() for e in evals)  # a failure keeps its trace
    report = (tmp_path / "run-noop" / "report.html").read_text()
    href = re.search(r'href="([^"]*spec_note-text_trace\.zip)"', report).group(1)  # ... linked from the report
    assert (tmp_path / "run-noop" / href).resolve().is_file()
    code, out, _ = gate_in(tmp_path / "gate", f"tasks.root={root}")
    assert code == 0, out


def test_a_runner_that_crashes_or_a_test_that_does_not_exist_is_ungraded_never_a_zero(tmp_path):
    renamed = CRITERIA.replace("the note thanks the visitor", "no such test")
    got = verdicts(tmp_path, spec_task(tmp_path / "a", renamed), "oracle")
    assert got["note-text"]["verdict"] == "UNGRADED" and got["note-text"]["ungraded"] == "grader_error"
    assert "did not run" in got["note-text"]["reason"]
    assert got["counter-works"]["verdict"] == "PASS"
    crashed = verdicts(tmp_path / "b", spec_task(tmp_path / "b" / "suite", config="throw new Error('bad config');\n"),
                       "oracle")  # fmt: skip
    assert {v["verdict"] for v in crashed.values()} == {"UNGRADED"}
    assert {v["ungraded"] for v in crashed.values()} == {"grader_error"}
    assert "no report" in crashed["note-text"]["reason"]


def test_specs_get_the_environment_they_name_the_workspace_and_their_own_packages(tmp_path):
    """As Web-Bench's specs do: a helper package kept in the spec folder (imported from an ES module, which
    ignores NODE_PATH) and a check that reads the candidate's source tree through an environment variable."""
    helper = "exports.exists = (root, file) => require('fs').existsSync(require('path').join(root, file));\n"
    spec = """import { test, expect } from '@playwright/test';
import { exists } from '@shop/util';
test('the page is index.html', async ({ page }) => {
  expect(exists(process.env.SHOP_ROOT, 'index.html')).toBe(true);
  expect(exists(process.env.SHOP_ROOT, 'missing.html')).toBe(false);
  await page.goto('/index.html');
  await expect(page.locator('h1')).toHaveText('Shop');
});
"""
    criteria = """spec_runner:
  dir: specs
  env: {SHOP_ROOT: "{workspace}"}
  packages: {"@shop/util": libraries/shop-util}
criteria:
  - id: source-and-page
    text: The shop page is index.html and shows its heading.
    kind: source
    preserve: true
    spec: {file: env.spec.mjs, title: "the page is index.html"}
"""
    root = spec_task(tmp_path / "suite", criteria)
    specs = root / "shop" / "specs"
    (specs / "env.spec.mjs").write_text(spec)
    (specs / "libraries" / "shop-util").mkdir(parents=True)
    (specs / "libraries" / "shop-util" / "index.js").write_text(helper)
    (specs / "libraries" / "shop-util" / "package.json").write_text('{"name": "@shop/util", "main": "index.js"}')
    got = verdicts(tmp_path, root, "noop")["source-and-page"]
    assert got["verdict"] == "PASS", got["reason"]
    (root / "shop" / "criteria.yaml").write_text(criteria.replace("{workspace}", "{nowhere}"))
    (tmp_path / "b").mkdir()
    bad = verdicts(tmp_path / "b", root, "noop")["source-and-page"]
    assert bad["ungraded"] == "grader_error" and "spec_runner.env" in bad["reason"]


@pytest.mark.parametrize(
    ("packages", "error"),
    [
        ('{"../evil": libraries/x}', "is not an npm package name"),
        ('{"@shop/util": ../../outside}', "must be a folder inside the spec folder"),
        ('{"@shop/util": libraries/absent}', "has no package.json"),
    ],
)
def test_spec_packages_must_be_named_packages_inside_the_spec_folder(tmp_path, packages, error):
    criteria = f"""spec_runner:
  dir: specs
  packages: {packages}
criteria:
  - id: note-text
    text: The note says thanks.
    kind: content
    spec: {{file: shop.spec.js, title: "the note thanks the visitor"}}
"""
    root = spec_task(tmp_path / "suite", criteria)
    with pytest.raises(TaskError, match=re.escape(error)):
        load_task(root / "shop")
