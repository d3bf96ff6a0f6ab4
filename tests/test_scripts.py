"""Criteria graded by the task author's own Playwright scripts, in real headless Chromium."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl
import pytest

from codesign.errors import TaskError
from codesign.tasks.loader import load_task
from tests.conftest import gate_in
from tests.helpers import graded_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PAGE = """<!doctype html><html><head><title>Shop</title></head><body>
<h1>Shop</h1>
<p class="note">Come again soon</p>
<button id="add" onclick="n.textContent = Number(n.textContent) + 1">Add</button>
<span id="n">0</span>
</body></html>
"""
PATCH = """diff --git a/index.html b/index.html
--- a/index.html
+++ b/index.html
@@ -2,3 +2,3 @@
 <h1>Shop</h1>
-<p class="note">Come again soon</p>
+<p class="note">Thanks for visiting</p>
 <button id="add" onclick="n.textContent = Number(n.textContent) + 1">Add</button>
"""
NOTE = """async def check(page, expect):
    await expect(page.locator(".note")).to_have_text("Thanks for visiting")
"""
COUNTER = """async def check(page, expect):
    add, count = page.locator("#add"), page.locator("#n")
    await add.click()
    await expect(count).to_have_text("1")  # a check between steps
    await add.click()
    await expect(count).to_have_text("2")
    a, b = await add.bounding_box(), await count.bounding_box()
    return a["x"] + a["width"] <= b["x"] + 1, f"the button ends at {a['x'] + a['width']}, the count starts at {b['x']}"
"""
CRITERIA = """criteria:
  - id: note-text
    text: The note says "Thanks for visiting".
    kind: content
    script: {file: checks/note.py}
  - id: counter-works
    text: Add still counts, and the count sits right of the button.
    kind: interaction
    preserve: true
    script: {file: checks/counter.py}
"""


def make_task(root: Path, criteria: str = CRITERIA, **checks: str) -> Path:
    task = root / "shop"
    (task / "app").mkdir(parents=True)
    (task / "solution").mkdir()
    (task / "checks").mkdir()
    (task / "task.yaml").write_text(
        "id: shop\ntrack: ME\ntitle: Shop note\nrequest: 'Say \"Thanks for visiting\".'\n"
        "labels: {capability: [ui_transformation]}\n"
    )
    (task / "criteria.yaml").write_text(criteria)
    (task / "app" / "index.html").write_text(PAGE)
    (task / "solution" / "solution.patch").write_text(PATCH)
    for name, code in {"note": NOTE, "counter": COUNTER, **checks}.items():
        (task / "checks" / f"{name}.py").write_text(code)
    return root


def graded(tmp_path: Path, root: Path, model: str, store: Path | None = None) -> dict[str, pl.DataFrame]:
    return graded_run(tmp_path, root, model, store)


def verdicts(tmp_path: Path, root: Path, model: str) -> dict[str, dict]:
    return {r["criterion_id"]: r for r in graded(tmp_path, root, model)["verdicts"].iter_rows(named=True)}


def test_scripts_grade_the_oracle_and_the_noop_and_the_gate_accepts_the_task(tmp_path):
    root = make_task(tmp_path / "suite")
    oracle = verdicts(tmp_path, root, "oracle")
    assert {k: v["verdict"] for k, v in oracle.items()} == {"note-text": "PASS", "counter-works": "PASS"}
    assert oracle["counter-works"]["grader"] == "script"
    noop = verdicts(tmp_path, root, "noop")
    assert noop["counter-works"]["verdict"] == "PASS"
    note = noop["note-text"]
    assert note["verdict"] == "FAIL" and note["failure_category"] == "wrong"
    assert "Thanks for visiting" in note["reason"] and "Come again soon" in note["reason"]  # expected and found
    evals = list((tmp_path / "store" / "trials").glob("*/evals/*"))
    assert any((e / "trace_counter-works.zip").stat().st_size > 0 for e in evals)  # the trace is kept
    evidence = json.loads((evals[0] / "evidence.json").read_text())
    actions = [i for i in evidence if i["id"] == "action:counter-works.1"]
    assert actions and actions[0]["data"]["state_changed"]  # the clicks changed the page
    code, out, _ = gate_in(tmp_path / "gate", f"tasks.root={root}")
    assert code == 0, out


def test_a_broken_script_is_ungraded_never_a_pass_nor_a_zero_and_a_missing_element_is_the_apps_fail(tmp_path):
    criteria = (
        CRITERIA
        + """  - id: buggy
    text: Uses a helper that does not exist.
    kind: content
    script: {file: checks/buggy.py}
  - id: refuses
    text: Says why not.
    kind: content
    script: {file: checks/refuses.py}
  - id: not-async
    text: A plain function.
    kind: content
    script: {file: checks/plain.py}
  - id: dark-mode
    text: A Dark button switches the theme.
    kind: interaction
    script: {file: checks/dark.py}
"""
    )
    dark = "async def check(page):\n    await page.get_by_role('button', name='Dark').click(timeout=2000)\n"
    root = make_task(tmp_path / "suite", criteria, buggy="async def check(page):\n    return undefined_helper(page)\n",
                     refuses="async def check(page):\n    return False, 'the banner is missing'\n",
                     plain="def check(page):\n    return True\n", dark=dark)  # fmt: skip
    tables = graded(tmp_path, root, "oracle")
    got = {r["criterion_id"]: r for r in tables["verdicts"].iter_rows(named=True)}
    assert got["buggy"]["verdict"] == "UNGRADED" and got["buggy"]["ungraded"] == "grader_error"
    assert "NameError" in got["buggy"]["reason"] and got["buggy"]["score"] is None
    assert got["not-async"]["ungraded"] == "grader_error" and "no async function" in got["not-async"]["reason"]
    # The app's own failures stay verdicts: a False return, and a step that waited for a button never shown.
    assert got["refuses"]["verdict"] == "FAIL" and got["refuses"]["reason"] == "the banner is missing"
    assert got["dark-mode"]["verdict"] == "FAIL" and got["dark-mode"]["failure_category"] == "element_never_reached"
    assert got["dark-mode"]["ungraded"] is None and "Timeout" in got["dark-mode"]["reason"]
    # The trial is a grading error: graded twice (max_retries=1), left out of the scores, counted, never stored.
    trial = tables["tasks"].row(0, named=True)
    assert trial["status"] == "grading_error" and trial["strict"] is None and trial["eval_attempts"] == 2
    assert trial["bucket"] == "grading_error:grader_error" and "grader_error ×2 (buggy, not-async)" in trial["message"]
    summary = tables["summary"].filter(pl.col("track") == "ALL").row(0, named=True)
    assert summary["planned"] == 1 and summary["scored"] == 0 and summary["grading_errors"] == 1
    assert summary["strict"] is None
    counts = tables["denominators"].row(0, named=True)
    assert counts["grading_error"] == counts["grading_error_grader_error"] == 1 and counts["ungraded_grader_error"] == 2
    assert not list((tmp_path / "store").glob("trials/*/evals/*/evaluation.json"))  # graded again next run
    ledger = tables["ledger"].filter(pl.col("criterion_id") == "buggy").row(0, named=True)
    assert ledger["bucket"] == "grading_error:grader_error" and ledger["grader"] == "script" and not ledger["scored"]


def test_a_script_imports_helpers_from_its_folder_and_editing_one_regrades(tmp_path):
    helper = "EXPECTED = 'Thanks for visiting'\n"
    note = "from notes import EXPECTED\n\nasync def check(page, expect):\n" \
           "    await expect(page.locator('.note')).to_have_text(EXPECTED)\n"  # fmt: skip
    root = make_task(tmp_path / "suite", note=note, notes=helper)
    first = graded(tmp_path, root, "oracle")
    verdict = first["verdicts"].filter(pl.col("criterion_id") == "note-text").row(0, named=True)
    assert verdict["verdict"] == "PASS", verdict["reason"]
    assert "notes" not in sys.modules  # loaded with the script, not left for another task's own ``notes``
    (root / "shop" / "checks" / "notes.py").write_text("EXPECTED = 'Come again soon'\n")  # only the helper
    second = graded(tmp_path / "again", root, "oracle", store=tmp_path / "store")
    regraded = second["verdicts"].filter(pl.col("criterion_id") == "note-text").row(0, named=True)
    assert regraded["verdict"] == "FAIL"  # graded again with the edited helper, not reused
    assert second["tasks"]["eval_key"][0] != first["tasks"]["eval_key"][0]
    assert second["tasks"]["trial_key"][0] == first["tasks"]["trial_key"][0]  # the solve is reused


@pytest.mark.parametrize(("file", "problem"), [("app/check.py", "outside app/"), ("checks/none.py", "is missing")])
def test_scripts_live_with_the_hidden_material(tmp_path, file, problem):
    root = make_task(tmp_path / "suite", CRITERIA.replace("checks/note.py", file))
    (root / "shop" / "app" / "check.py").write_text(NOTE)
    with pytest.raises(TaskError, match=problem):
        load_task(root / "shop")


def test_editing_a_script_changes_the_evaluation_key(tmp_path):
    root = make_task(tmp_path / "suite")
    before = load_task(root / "shop").criteria_hash
    (root / "shop" / "checks" / "note.py").write_text(NOTE.replace("Thanks", "Thank you"))
    assert load_task(root / "shop").criteria_hash != before


def test_the_gate_warns_about_criteria_only_an_llm_can_grade_and_flaky_ones(tmp_path):
    """--repeat 3 grades the reference three times: a script whose verdict alternates is flagged FLAKY."""
    counter = tmp_path / "runs.txt"
    flaky = (f"from pathlib import Path\nasync def check(page):\n    f = Path({str(counter)!r})\n"
             "    n = int(f.read_text()) + 1 if f.exists() else 1\n"
             "    f.write_text(str(n))\n    return n % 2 == 1\n")  # fmt: skip
    criteria = (
        CRITERIA
        + """  - id: alternates
    text: Passes every other time.
    kind: content
    script: {file: checks/flaky.py}
  - id: looks-friendly
    text: The shop looks friendly.
    kind: visual
"""
    )
    root = make_task(tmp_path / "suite", criteria, flaky=flaky)
    _, out, folder = gate_in(tmp_path / "gate", f"tasks.root={root}", "--repeat", "3")
    assert "warning         looks-friendly: no probe, script or spec" in out
    assert "alternates: FLAKY on the reference" in out
    warnings = pl.read_parquet(folder / "validation.parquet")["warnings"][0].to_list()
    assert any("FLAKY" in w for w in warnings) and any("looks-friendly" in w for w in warnings)
