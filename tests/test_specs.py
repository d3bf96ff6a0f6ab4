"""Criteria graded by Playwright test specs: one `playwright test` run per evaluation, on codesign's Chromium."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from codesign.errors import TaskError
from codesign.evaluate.evaluators import ProbeEvaluator
from codesign.evaluate.run import evaluate_patch
from codesign.evaluate.specs import RERUN_FACTOR
from codesign.tasks.loader import load_task
from tests.conftest import gate_in
from tests.helpers import REPO
from tests.test_scripts import graded, make_task, verdicts

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
# A failing web-first assertion is a timeout, run again with RERUN_FACTOR× its bound: a short bound keeps it cheap.
CRITERIA = """spec_runner: {dir: specs, config: playwright.config.js, expect_timeout_s: 2}
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


@pytest.mark.duration(97)
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


def test_an_evaluation_without_pages_grades_its_specs_and_loads_no_route(tmp_path, browser, loop, node_cache):
    """``pages=False`` (a tool grading one app in several parts gathers its pages once): the specs load their own."""
    task = load_task(spec_task(tmp_path / "suite") / "shop")
    seen = {}
    for pages in (True, False):
        out = tmp_path / f"pages-{pages}"
        evaluation = loop.run(evaluate_patch(task, "", ProbeEvaluator(), browser, out, node_cache, pages=pages))
        assert {v.criterion_id: v.verdict for v in evaluation.verdicts} == {
            "note-text": "FAIL",
            "counter-works": "PASS",
        }
        seen[pages] = {i["kind"] for i in json.loads((out / "evidence.json").read_text())}
    assert {"route", "dom", "console"} <= seen[True], seen
    assert not seen[False] & {"route", "dom", "console", "network"} and {"diff", "build"} <= seen[False], seen


@pytest.mark.duration(38)
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
    broken = spec_task(tmp_path / "c" / "suite")  # a spec file that does not load: no test runs, the report says why
    (broken / "shop" / "specs" / "shop.spec.js").write_text(SPEC.replace("test.describe('counter', () => {", "{"))
    unloaded = verdicts(tmp_path / "c", broken, "oracle")
    assert {v["ungraded"] for v in unloaded.values()} == {"grader_error"}
    reason = unloaded["note-text"]["reason"]
    assert "does not load (the spec folder's own fault)" in reason and "SyntaxError: shop.spec.js" in reason, reason


# Web-Bench's esmodule specs import the candidate's own modules as they load; a spec folder may also lack a
# package it needs. Either keeps Playwright from running any test of any file.
APP_SPEC = """import { test, expect } from '@playwright/test';
const app = await import(process.env.SHOP_ROOT + '/greeting.mjs');
test('the greeting module says hello', async () => { expect(app.greeting).toBe('hello'); });
"""
OWN_FAULT_SPEC = """import { test, expect } from '@playwright/test';
import tinycolor from 'tinycolor2';
test('the brand colour is teal', async () => { expect(tinycolor('teal').toHex()).toBe('008080'); });
"""
ENV = 'spec_runner: {env: {SHOP_ROOT: "{workspace}"}, '
LOADING_CRITERIA = (
    CRITERIA.replace("spec_runner: {", ENV)
    + """\
  - id: greeting
    text: The greeting module says hello.
    kind: source
    spec: {file: app.spec.mjs, title: "the greeting module says hello"}
  - id: brand-colour
    text: The brand colour is teal.
    kind: content
    spec: {file: colour.spec.mjs, title: "the brand colour is teal"}
"""
)


@pytest.mark.parametrize(
    ("greeting", "expected"),
    [
        (None, "FAIL"),  # the module the spec imports from the app is missing
        ("export const greeting = ;\n", "FAIL"),  # … does not parse
        ("throw new Error('not yet');\n", "FAIL"),  # … throws as it loads
        ("export const greeting = 'hello';\n", "PASS"),
    ],
    ids=["missing", "syntax-error", "throws", "fine"],
)
def test_a_spec_file_that_does_not_load_is_the_app_s_fail_only_through_the_app_and_the_others_still_run(
    tmp_path, browser, loop, node_cache, greeting, expected
):
    root = spec_task(tmp_path / "suite", LOADING_CRITERIA)
    (root / "shop" / "specs" / "app.spec.mjs").write_text(APP_SPEC)
    (root / "shop" / "specs" / "colour.spec.mjs").write_text(OWN_FAULT_SPEC)
    if greeting is not None:
        (root / "shop" / "app" / "greeting.mjs").write_text(greeting)
    task = load_task(root / "shop")
    patch = task.reference_patch()  # the shop's note as asked: its file's tests pass at once (no run again)
    graded = evaluate_patch(task, patch, ProbeEvaluator(), browser, tmp_path / "out", node_cache, pages=False)
    got = {v.criterion_id: v for v in loop.run(graded).verdicts}
    # The file that loads is graded as ever, though two others do not load.
    assert (got["note-text"].verdict, got["counter-works"].verdict) == ("PASS", "PASS"), got["note-text"].reason
    # The app's module kept its spec from loading: the app's FAIL, with what Node said.
    assert got["greeting"].verdict == expected, got["greeting"].reason
    if expected == "FAIL":
        assert got["greeting"].failure_category == "wrong" and got["greeting"].ungraded is None
        assert "app.spec.mjs does not load with the candidate's app" in got["greeting"].reason
        assert "workspace: greeting.mjs" in got["greeting"].reason  # where, as the candidate's files say it
    # The spec folder's own missing package is no verdict about the app, whatever the app.
    colour = got["brand-colour"]
    assert (colour.verdict, colour.ungraded) == ("UNGRADED", "grader_error"), colour.reason
    assert "spec folder's own fault" in colour.reason and "tinycolor2" in colour.reason


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


# A page whose note appears 8 s after it loads: past the first run's 4 s expect bound whatever the load (the
# wait starts after the page's script), within the run again's 16 s by a margin of 8 s.
LATE_PAGE = """<!doctype html><html><head><title>Shop</title></head><body><h1>Shop</h1>
<script>setTimeout(() => document.body.insertAdjacentHTML('beforeend', '<p id="late">here</p>'), 8000)
setTimeout(() => { window.settled = true }, 8000)</script>
</body></html>
"""
TIMED_SPEC = """import { test, expect } from '@playwright/test';
import { appendFileSync } from 'fs';
// each test's runs: its title, the run's workers and the worker slot it ran in
test.beforeEach(async ({}, info) => {
  appendFileSync(process.env.RUNS, `${info.title}\\t${info.config.workers}\\t${info.parallelIndex}\\n`);
});
// A serial group's later test does not run once an earlier one failed: it goes with a timed-out one into the
// run again, and fails with a plain assertion's failure.
test.describe('late', () => {
  test.describe.configure({ mode: 'serial' });
  test('the late note shows', async ({ page }) => {
    await page.goto('/late.html');
    await expect(page.locator('#late')).toBeVisible();
  });
  test('the heading follows the note', async ({ page }) => {
    await page.goto('/late.html');
    await expect(page.locator('h1')).toHaveText('Shop');
  });
});
test('the missing button shows', async ({ page }) => {
  await page.goto('/');
  await expect(page.locator('#never')).toBeVisible();
});
test.describe('plain', () => {
  test.describe.configure({ mode: 'serial' });
  test('the title is another', async ({ page }) => {  // a plain assertion: it fails at once, never run again
    await page.goto('/');
    expect(await page.title()).toBe('Not the shop');
  });
  test('the heading follows the title', async ({ page }) => {
    await page.goto('/');
    await expect(page.locator('h1')).toHaveText('Shop');
  });
});
test('the heading shows', async ({ page }) => {
  await page.goto('/');
  await expect(page.locator('h1')).toHaveText('Shop');
});
test('the page settles', async ({ page }) => {  // waits on the page's state, not an element: run again alone
  await page.goto('/late.html');
  await expect.poll(() => page.evaluate(() => window.settled === true)).toBe(true);
});
"""
TIMED_CRITERIA = """spec_runner: {dir: specs, expect_timeout_s: 4, rerun_workers: AT_ONCE, env: {RUNS: "RUNS_FILE"}}
criteria:
  - {id: late-note, text: The late note shows., kind: content, spec: {file: timed.spec.mjs, title: the late note shows}}
  - {id: missing, text: The button shows., kind: content, spec: {file: timed.spec.mjs, title: the missing button shows}}
  - {id: title, text: The title is another., kind: content, spec: {file: timed.spec.mjs, title: the title is another}}
  - {id: heading, text: The heading shows., kind: content, spec: {file: timed.spec.mjs, title: the heading shows}}
  - {id: after-note, text: Then the heading., kind: content,
     spec: {file: timed.spec.mjs, title: the heading follows the note}}
  - {id: after-title, text: Then the heading., kind: content,
     spec: {file: timed.spec.mjs, title: plain > the heading follows the title}}
  - {id: settles, text: The page settles., kind: content, spec: {file: timed.spec.mjs, title: the page settles}}
"""


@pytest.mark.duration(74)
@pytest.mark.parametrize("at_once", [1, 3])
def test_a_test_that_timed_out_is_run_again_alone_with_longer_bounds_and_that_run_decides(tmp_path, at_once):
    """Alone (``rerun_workers: 1``), or side by side with the same verdicts (``3``: a serial group in one
    worker, the other test in another)."""
    runs = tmp_path / "runs.txt"
    criteria = TIMED_CRITERIA.replace("RUNS_FILE", str(runs)).replace("AT_ONCE", str(at_once))
    root = spec_task(tmp_path / "suite", criteria)
    (root / "shop" / "specs" / "timed.spec.mjs").write_text(TIMED_SPEC)
    (root / "shop" / "app" / "late.html").write_text(LATE_PAGE)
    got = verdicts(tmp_path, root, "noop")
    late, missing = got["late-note"], got["missing"]
    assert late["verdict"] == "PASS", late["reason"]  # what the run again showed, not the first run's timeout
    rerun = "re-run alone" if at_once == 1 else "re-run (3 at once)"
    assert late["reason"].startswith(f"{rerun} with {RERUN_FACTOR}× the bounds after a timeout (failed:")
    assert missing["verdict"] == "FAIL" and missing["failure_category"] == "element_never_reached", missing
    assert rerun in missing["reason"] and "element(s) not found" in missing["reason"]
    assert got["title"]["verdict"] == "FAIL" and got["title"]["failure_category"] == "wrong"
    assert "re-run" not in got["title"]["reason"] and got["heading"]["verdict"] == "PASS"
    # The serial groups' later tests: skipped in the first run after the failure before them (never ungraded).
    after_note, after_title = got["after-note"], got["after-title"]
    assert after_note["verdict"] == "PASS" and rerun in after_note["reason"], after_note  # in the run again
    assert after_title["verdict"] == "FAIL" and after_title["failure_category"] == "wrong", after_title
    assert "did not run: 'plain > the title is another', earlier in its serial group, failed" in after_title["reason"]
    lines = [line.split("\t") for line in runs.read_text().splitlines()]
    ran = [title for title, _, _ in lines]  # each test's runs: the two that timed out twice, the others once
    assert {t: ran.count(t) for t in set(ran)} == {"the late note shows": 2, "the missing button shows": 2,
                                                   "the title is another": 1, "the heading shows": 1,
                                                   "the heading follows the note": 1,
                                                   "the page settles": 2}  # fmt: skip
    # A test that timed out on something else than an element (a poll of the page's state) is run again alone.
    assert got["settles"]["verdict"] == "PASS" and got["settles"]["reason"].startswith("re-run alone with"), got
    assert [workers for title, workers, _ in lines if title == "the page settles"] == ["1", "1"]
    slots = {title: slot for title, workers, slot in lines if workers == str(at_once) and at_once > 1}
    if at_once > 1:  # the run again, side by side: the late note and its follower in one worker, the button in another
        late, follower, button = (slots[t] for t in ("the late note shows", "the heading follows the note",
                                                     "the missing button shows"))  # fmt: skip
        assert late == follower != button
    else:
        assert {workers for _, workers, _ in lines} == {"1"}
    (evals,) = list((tmp_path / "store" / "trials").glob("*/evals/*"))
    evidence = {i["id"]: i for i in json.loads((evals / "evidence.json").read_text())}
    record = evidence["action:late-note.1"]["data"]
    assert record["status"] == "passed" and record["rerun"]["factor"] == RERUN_FACTOR
    assert record["rerun"]["at_once"] == at_once
    assert record["rerun"]["first"]["status"] == "failed" and "Timeout: 4000ms" in record["rerun"]["first"]["message"]
    assert "Timeout: 16000ms" in missing["reason"]  # the run again's bound: RERUN_FACTOR× the first
    assert "spec-rerun" in evidence and (evals / "spec-rerun.log").is_file()
    assert "action:title.1" in evidence and "rerun" not in evidence["action:title.1"]["data"]


@pytest.mark.duration(40)
def test_with_run_again_off_a_timeout_stands_and_every_test_runs_once(tmp_path):
    """``run_again: false`` (the Web-Bench importer's starting-app grading, with a run again's bounds from the
    start, ``workers`` tests at once): the first run decides, a timeout included; nothing runs twice."""
    runs = tmp_path / "runs.txt"
    off = "run_again: false, workers: 3"  # … as the importer grades a starting app: its tests side by side
    criteria = TIMED_CRITERIA.replace("RUNS_FILE", str(runs)).replace("rerun_workers: AT_ONCE", off)
    criteria = criteria.replace("expect_timeout_s: 4", f"expect_timeout_s: {4 * RERUN_FACTOR}")
    root = spec_task(tmp_path / "suite", criteria)
    (root / "shop" / "specs" / "timed.spec.mjs").write_text(TIMED_SPEC)
    (root / "shop" / "app" / "late.html").write_text(LATE_PAGE)
    got = verdicts(tmp_path, root, "noop")
    assert got["late-note"]["verdict"] == "PASS" and got["settles"]["verdict"] == "PASS", got  # 8 s < 16 s
    missing = got["missing"]
    assert missing["verdict"] == "FAIL" and missing["failure_category"] == "element_never_reached", missing
    assert "Timeout: 16000ms" in missing["reason"]
    assert not any("re-run" in v["reason"] for v in got.values()), got
    lines = [line.split("\t") for line in runs.read_text().splitlines()]
    ran = [title for title, _, _ in lines]
    assert sorted(ran) == sorted(set(ran)) and "the missing button shows" in ran, ran  # each test once
    assert {workers for _, workers, _ in lines} == {"3"} and len({slot for _, _, slot in lines}) > 1, lines
    (evals,) = list((tmp_path / "store" / "trials").glob("*/evals/*"))
    assert not list(evals.glob("spec-rerun*.log"))


def test_a_spec_folder_whose_dependencies_do_not_install_leaves_every_spec_criterion_ungraded(tmp_path):
    root = spec_task(tmp_path / "suite")
    manifest = root / "shop" / "specs" / "package.json"
    package = json.loads(manifest.read_text())
    package["devDependencies"]["codesign-no-such-package"] = "1.0.0"  # not in the lockfile: npm ci refuses
    manifest.write_text(json.dumps(package))
    tables = graded(tmp_path, root, "oracle")
    trial = tables["tasks"].row(0, named=True)
    assert trial["status"] == "grading_error" and trial["bucket"] == "grading_error:grader_error", trial["message"]
    got = {r["criterion_id"]: r for r in tables["verdicts"].iter_rows(named=True)}
    assert {v["verdict"] for v in got.values()} == {"UNGRADED"} and len(got) == 2
    assert {v["ungraded"] for v in got.values()} == {"grader_error"}
    assert "spec runner not installed" in got["note-text"]["reason"], got["note-text"]["reason"]
    assert not list((tmp_path / "store").glob("trials/*/evals/*/evaluation.json"))  # never stored as finished
