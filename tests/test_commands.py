"""Criteria graded by a command on the candidate's final workspace (``command:``), in the candidate sandbox."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from codesign.errors import TaskError
from codesign.tasks.loader import load_task
from tests.conftest import gate_in
from tests.helpers import graded_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PAGE = "<!doctype html><html><head><title>Shop</title></head><body><h1>Shop</h1>\n<p class=note>Come again soon</p>\n</body></html>\n"  # noqa: E501
PRICE = "export const price = (cents) => `$${(cents / 100).toFixed(2)}`;\n"
PATCH = """diff --git a/index.html b/index.html
--- a/index.html
+++ b/index.html
@@ -1,3 +1,3 @@
 <!doctype html><html><head><title>Shop</title></head><body><h1>Shop</h1>
-<p class=note>Come again soon</p>
+<p class=note>Thanks for visiting</p>
 </body></html>
"""
# The hidden test: Node's own runner on the final workspace's module (node_modules-free, so any sandbox runs it).
PRICE_TEST = """import { test } from 'node:test';
import assert from 'node:assert/strict';
const { price } = await import(`${process.cwd()}/price.js`);
test('prices in cents format as before', () => { assert.equal(price(1700), '$17.00'); });
"""
CRITERIA = """criteria:
  - id: note-text
    text: The note says "Thanks for visiting".
    kind: content
    command: {run: "grep -q 'Thanks for visiting' index.html"}
  - id: price-unchanged
    text: The price helper formats cents as before.
    kind: preservation
    preserve: true
    command: {run: 'node --test "$CRITERION_FILES/price.test.mjs"', files: tests}
  - id: reward
    text: A test script's reward decides (Harbor's convention).
    kind: content
    command: {run: 'bash "$CRITERION_FILES/reward.sh"', files: tests, pass_if: reward_file}
"""
REWARD = """if grep -q 'Thanks for visiting' index.html; then echo 1 > "$REWARD_DIR/reward.txt"
else echo 0 > "$REWARD_DIR/reward.txt"; fi
echo "graded from $(pwd)"
"""


def make_task(root: Path, criteria: str = CRITERIA, **tests: str) -> Path:
    task = root / "shop"
    for d in ("app", "solution", "tests"):
        (task / d).mkdir(parents=True, exist_ok=True)
    (task / "task.yaml").write_text(
        "id: shop\ntrack: RE\ntitle: Shop note\nrequest: 'Say \"Thanks for visiting\".'\n"
        "labels: {capability: [ui_transformation]}\n"
    )
    (task / "criteria.yaml").write_text(criteria)
    (task / "app" / "index.html").write_text(PAGE)
    (task / "app" / "price.js").write_text(PRICE)
    (task / "solution" / "solution.patch").write_text(PATCH)
    for name, text in {"price.test.mjs": PRICE_TEST, "reward.sh": REWARD, **tests}.items():
        (task / "tests" / name).write_text(text)
    return root


def graded(tmp_path: Path, root: Path, model: str, store: Path | None = None) -> dict[str, pl.DataFrame]:
    return graded_run(tmp_path, root, model, store)


def verdicts(tables: dict[str, pl.DataFrame]) -> dict[str, dict]:
    return {r["criterion_id"]: r for r in tables["verdicts"].iter_rows(named=True)}


def evidence_log(store: Path, criterion: str) -> str:
    logs = sorted(store.glob(f"trials/*/evals/*/command_{criterion}.log"), key=lambda p: p.stat().st_mtime)
    return logs[-1].read_text()


def test_commands_grade_the_oracle_and_the_noop_with_output_as_evidence_and_the_gate_accepts(tmp_path):
    root = make_task(tmp_path / "suite")
    oracle = verdicts(graded(tmp_path, root, "oracle"))
    assert {k: v["verdict"] for k, v in oracle.items()} == dict.fromkeys(("note-text", "price-unchanged", "reward"),
                                                                         "PASS")  # fmt: skip
    assert {v["grader"] for v in oracle.values()} == {"command"}
    assert oracle["reward"]["reason"] == "reward 1 ≥ 1"
    log = evidence_log(tmp_path / "store", "reward")
    assert "graded from" in log and "[exit code 0]" in log  # the output is evidence
    assert "price.test.mjs" not in {p.name for p in (root / "shop" / "app").rglob("*")}  # hidden until grading
    noop = verdicts(graded(tmp_path, root, "noop"))
    assert noop["price-unchanged"]["verdict"] == "PASS"
    assert noop["note-text"]["verdict"] == "FAIL" and noop["note-text"]["reason"].startswith("exit code 1")
    assert noop["reward"]["verdict"] == "FAIL" and noop["reward"]["reason"].startswith("reward 0 < 1")
    assert noop["note-text"]["failure_category"] == "wrong"
    code, out, _ = gate_in(tmp_path / "gate", f"tasks.root={root}")
    assert code == 0, out


def test_a_broken_unit_test_fails_the_candidate_who_broke_what_it_checks(tmp_path):
    root = make_task(tmp_path / "suite")
    breaking = (
        PATCH
        + """diff --git a/price.js b/price.js
--- a/price.js
+++ b/price.js
@@ -1 +1 @@
-export const price = (cents) => `$${(cents / 100).toFixed(2)}`;
+export const price = (cents) => `$${cents / 100}`;
"""
    )
    (root / "shop" / "solution" / "solution.patch").write_text(breaking)
    got = verdicts(graded(tmp_path, root, "oracle"))
    assert got["note-text"]["verdict"] == "PASS"
    assert got["price-unchanged"]["verdict"] == "FAIL" and got["price-unchanged"]["failure_category"] == "regressed"
    assert "'$17'" in got["price-unchanged"]["reason"] or "$17" in got["price-unchanged"]["reason"]


def test_no_reward_is_the_commands_failure_never_the_apps_and_a_timeout_is_run_again_alone(tmp_path):
    criteria = (
        CRITERIA
        + """  - id: no-reward
    text: A test script that crashes before writing its reward.
    kind: content
    command: {run: 'exit 3', pass_if: reward_file}
  - id: not-a-number
    text: A reward that is not a number.
    kind: content
    command: {run: 'echo lots > "$REWARD_DIR/reward.txt"', pass_if: reward_file}
  - id: slow-once
    text: Slow the first time only (a loaded machine), passes when run again alone.
    kind: content
    command: {run: 'if [ ! -e .slow-once ]; then touch .slow-once; sleep 30; fi; true', timeout_s: 1}
  - id: always-slow
    text: Never ends within any bound.
    kind: content
    command: {run: 'sleep 30', timeout_s: 0.5}
"""
    )
    root = make_task(tmp_path / "suite", criteria)
    tables = graded(tmp_path, root, "oracle")
    got = verdicts(tables)
    for cid in ("no-reward", "not-a-number"):
        assert got[cid]["verdict"] == "UNGRADED" and got[cid]["ungraded"] == "grader_error", got[cid]
        assert got[cid]["score"] is None
    assert "neither reward.txt nor reward.json" in got["no-reward"]["reason"]
    assert "'lots'" in got["not-a-number"]["reason"] or "lots" in got["not-a-number"]["reason"]
    assert got["slow-once"]["verdict"] == "PASS", got["slow-once"]
    log = evidence_log(tmp_path / "store", "slow-once")
    assert "[timed out]" in log and "run again alone" in log and log.rstrip().endswith("[exit code 0]")
    assert got["always-slow"]["verdict"] == "FAIL" and got["always-slow"]["failure_category"] == "timeout"
    trial = tables["tasks"].row(0, named=True)
    assert trial["status"] == "grading_error" and trial["strict"] is None  # never averaged in as a zero
    assert "grader_error ×2 (no-reward, not-a-number)" in trial["message"]
    assert not list((tmp_path / "store").glob("trials/*/evals/*/evaluation.json"))  # graded again next run


def test_a_command_killed_by_a_crash_signal_is_run_again_and_only_a_death_on_every_attempt_counts(tmp_path):
    criteria = """criteria:
  - id: killed-once
    text: Killed by the machine once.
    kind: content
    command: {run: 'if [ ! -e .killed ]; then touch .killed; kill -BUS $$; fi; true'}
  - id: killed-always
    text: Dies every time.
    kind: content
    command: {run: 'kill -SEGV $$'}
"""
    root = make_task(tmp_path / "suite", criteria)
    got = verdicts(graded(tmp_path, root, "oracle"))
    assert got["killed-once"]["verdict"] == "PASS", got["killed-once"]
    assert "killed by SIGBUS: run again" in evidence_log(tmp_path / "store", "killed-once")
    assert (
        got["killed-always"]["verdict"] == "FAIL" and "SIGSEGV on each of 3 attempts" in got["killed-always"]["reason"]
    )


def test_editing_a_command_or_its_files_changes_the_evaluation_key_and_files_stay_hidden(tmp_path):
    root = make_task(tmp_path / "suite")
    before = load_task(root / "shop").criteria_hash
    (root / "shop" / "tests" / "reward.sh").write_text(REWARD.replace("echo 1", "echo 0.5"))
    edited = load_task(root / "shop").criteria_hash
    assert edited != before
    (root / "shop" / "criteria.yaml").write_text(CRITERIA.replace("grep -q", "grep -qi"))
    assert load_task(root / "shop").criteria_hash not in (before, edited)
    (root / "shop" / "criteria.yaml").write_text(CRITERIA.replace("files: tests", "files: app"))
    with pytest.raises(TaskError, match="outside app/"):
        load_task(root / "shop")
    (root / "shop" / "criteria.yaml").write_text(CRITERIA.replace("files: tests", "files: nowhere"))
    with pytest.raises(TaskError, match="command files folder nowhere is missing"):
        load_task(root / "shop")
    (root / "shop" / "criteria.yaml").write_text(
        CRITERIA.replace(
            "kind: content\n    command:", "kind: content\n    script: {file: tests/x.py}\n    command:", 1
        )
    )
    with pytest.raises(TaskError, match="one of probe, script, spec or command"):
        load_task(root / "shop")


def test_the_output_evidence_is_listed_with_the_verdict(tmp_path):
    root = make_task(tmp_path / "suite")
    graded(tmp_path, root, "oracle")
    evals = list((tmp_path / "store" / "trials").glob("*/evals/*"))
    evidence = json.loads((evals[0] / "evidence.json").read_text())
    item = next(i for i in evidence if i["id"] == "command:price-unchanged")
    assert item["kind"] == "command" and item["path"] == "command_price-unchanged.log"
    stored = json.loads((evals[0] / "verdicts.json").read_text())
    assert next(v for v in stored if v["criterion_id"] == "price-unchanged")["evidence_ids"] == [
        "command:price-unchanged"
    ]


def test_commands_run_in_a_docker_candidate_sandbox(node_image, tmp_path):
    """The same criteria with sandbox=docker: files go in and the reward comes out through the container."""
    root = make_task(tmp_path / "suite")
    got = verdicts(graded_run(tmp_path, root, "oracle", None, "sandbox=docker", f"sandbox.image={node_image}"))
    assert {k: v["verdict"] for k, v in got.items()} == dict.fromkeys(("note-text", "price-unchanged", "reward"),
                                                                      "PASS"), got  # fmt: skip
    assert "graded from /" in evidence_log(tmp_path / "store", "reward")
