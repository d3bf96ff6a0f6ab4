"""Every trial status for a constructed case, and the buckets they decide: what is averaged, what is an
error (with its cause), what is graded again. (``aborted`` and ``skipped`` are constructed in
test_judge.py and test_harnesses.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from codesign.runner import run
from tests.helpers import compose_config

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TASK_YAML = """\
id: {id}
track: ME
title: A page
request: Make the heading say hello.
environment:
  kind: static
labels:
  capability: [ui_transformation]
"""
CRITERIA_YAML = """\
criteria:
  - id: heading
    text: The heading says hello.
    kind: content
    probe:
      expect:
        - text: {selector: h1, contains: hello}
  - id: button-works
    text: The button shows a note.
    kind: interaction
    probe:
      steps:
        - click: "#go"
      expect:
        - visible: "#note"
"""


def make_task(root: Path, task_id: str, page: str) -> Path:
    folder = root / task_id
    (folder / "app").mkdir(parents=True)
    (folder / "solution").mkdir()
    (folder / "task.yaml").write_text(TASK_YAML.format(id=task_id))
    (folder / "criteria.yaml").write_text(CRITERIA_YAML)
    (folder / "app" / "index.html").write_text(page)
    (folder / "solution" / "solution.patch").write_text(
        "diff --git a/index.html b/index.html\n--- a/index.html\n+++ b/index.html\n@@ -1 +1 @@\n"
        f"-{page.splitlines()[0]}\n+{page.splitlines()[0].replace('<h1>', '<h1>hello ')}\n"
    )
    return folder


GOOD = '<h1>page</h1><button id="go" onclick="document.getElementById(\'note\').hidden=false">go</button>\n'
HANGS = "<h1>page</h1><script>while (true) {}</script>\n"  # never finishes loading: the app's own bug


def run_suite(tmp_path: Path, root: Path, *overrides: str) -> dict[str, pl.DataFrame]:
    cfg = compose_config("tasks=all", f"tasks.root={root}", "executor=inline", "tracker=none",
                         f"store.root={tmp_path / 'store'}", "attribution.below=null", *overrides)  # fmt: skip
    out = tmp_path / "run"
    out.mkdir(exist_ok=True)
    return run(cfg, out)


def test_an_app_that_hangs_is_its_failure_graded_again_next_run(tmp_path, monkeypatch):
    from codesign.runtime import waiting

    # The bound that runs out (90 s in real runs); each page spins a core until its calls give up (a 3 s bound
    # cost 26 CPU-s here, 1 s about a third of it).
    monkeypatch.setattr(waiting, "CALL_BOUND_S", 1.0)
    root = tmp_path / "suite"
    make_task(root, "hangs", HANGS)
    tables = run_suite(tmp_path, root, "model=noop")
    row = tables["tasks"].row(0, named=True)
    assert row["status"] == "ok" and row["strict"] == 0.0  # scored: the candidate's failure, not an error
    verdicts = tables["verdicts"]
    assert set(verdicts["failure_category"]) == {"timeout"}
    assert all("did not answer within 1 s" in r for r in verdicts["reason"])
    # Not stored as finished: the next run grades it again (the solve is reused).
    assert list((tmp_path / "store").glob("trials/*/solve.json"))
    assert not list((tmp_path / "store").glob("trials/*/evals/*/evaluation.json"))


def test_each_error_status_is_an_error_with_its_cause_never_a_zero(tmp_path, capsys):
    root = tmp_path / "suite"
    make_task(root, "good", GOOD)
    broken = make_task(root, "broken", GOOD)
    (broken / "task.yaml").write_text("id: broken\ntrack: ME\n")  # no title, request, labels
    tables = run_suite(tmp_path, root, "model=oracle")
    rows = {r["task_id"]: r for r in tables["tasks"].iter_rows(named=True)}
    assert rows["good"]["status"] == "ok" and rows["good"]["strict"] == 0.5  # the note stays hidden: FAIL
    assert rows["broken"]["status"] == "task_error" and "task.yaml" in rows["broken"]["message"]
    summary = tables["summary"].filter(pl.col("track") == "ALL").row(0, named=True)
    assert summary["tasks"] == 1 and summary["errors"] == 1 and summary["strict"] == 0.5
    assert "task_error ×1" in capsys.readouterr().err


def test_a_solve_the_framework_failed_is_an_error_not_an_empty_patch_graded(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CODESIGN_DEAD_KEY", "sk-x")
    root = tmp_path / "suite"
    make_task(root, "good", GOOD)
    tables = run_suite(tmp_path, root, "model=litellm", "model.name=dead", "model.model=openai/dead",
                       "model.api_base=http://127.0.0.1:9/v1", "model.api_key_env=CODESIGN_DEAD_KEY",
                       "model.max_retries=0")  # fmt: skip
    row = tables["tasks"].row(0, named=True)
    assert row["status"] == "infra_error" and row["exit_status"] == "infra_error"
    assert row["message"].startswith("solve:") and row["strict"] is None
    summary = tables["summary"].filter(pl.col("track") == "ALL").row(0, named=True)
    assert summary["errors"] == 1 and summary["tasks"] == 0 and summary["strict"] is None
    assert "infra_error (solve) ×1: solve:" in capsys.readouterr().err
    assert row["bucket"] == "infra_error:solve" and tables["denominators"]["infra_error_solve"][0] == 1
    assert not list((tmp_path / "store").glob("trials/*/solve.json"))  # solved again next run


def test_an_evaluation_the_framework_failed_is_an_error(tmp_path):
    root = tmp_path / "suite"
    make_task(root, "good", GOOD)
    not_a_browser = tmp_path / "chromium"
    not_a_browser.write_text("#!/bin/sh\nexit 1\n")
    not_a_browser.chmod(0o755)
    tables = run_suite(tmp_path, root, f"browser.executable={not_a_browser}")
    row = tables["tasks"].row(0, named=True)
    assert row["status"] == "infra_error" and "could not launch Chromium" in row["message"]
    assert row["stage"] == "evaluate" and row["eval_attempts"] == 2  # tried again in the run (max_retries=1)
    assert tables["denominators"].row(0, named=True)["infra_error_evaluate"] == 1


def test_solve_only_is_solved_and_not_scored(tmp_path):
    root = tmp_path / "suite"
    make_task(root, "good", GOOD)
    tables = run_suite(tmp_path, root, "stages.evaluate=false")
    assert tables["tasks"].row(0, named=True)["status"] == "solved"
    assert tables["summary"].filter(pl.col("track") == "ALL").row(0, named=True)["tasks"] == 0


def test_status_definitions_are_documented():
    """The README's tables name every trial status and every cause of an ungraded criterion the code can give."""
    from codesign._types import TrialStatus, Ungraded

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    for heading, values in (("| status |", TrialStatus), ("| cause |", Ungraded)):
        table = readme.split(heading, 1)[1].split("\n\n", 1)[0]
        for value in values:
            assert f"`{value.value}`" in table, value


def test_a_node_app_without_dependencies_is_evaluated(tmp_path):
    """`npm ci` with nothing to install creates no node_modules: that is a success, not an install failure."""
    root = tmp_path / "suite"
    folder = make_task(root, "nodeps", GOOD)
    (folder / "app" / "package.json").write_text(
        '{"name": "nodeps", "version": "1.0.0", "private": true,\n'
        ' "scripts": {"build": "mkdir -p dist && cp index.html dist/index.html"}}\n'
    )
    (folder / "app" / "package-lock.json").write_text(
        '{"name": "nodeps", "version": "1.0.0", "lockfileVersion": 3, "requires": true,\n'
        ' "packages": {"": {"name": "nodeps", "version": "1.0.0"}}}\n'
    )
    node = "  kind: node\n  serve:\n    static_dir: dist\n"
    (folder / "task.yaml").write_text((folder / "task.yaml").read_text().replace("  kind: static\n", node))
    row = run_suite(tmp_path, root, "model=oracle")["tasks"].row(0, named=True)
    assert row["status"] == "ok" and row["strict"] == 0.5, row  # graded like the static app


def node_task(root: Path, task_id: str, build: str) -> Path:
    folder = make_task(root, task_id, GOOD)
    (folder / "app" / "package.json").write_text(json.dumps({"name": task_id, "version": "1.0.0", "private": True,
                                                             "scripts": {"build": build}}))  # fmt: skip
    (folder / "app" / "package-lock.json").write_text(json.dumps({
        "name": task_id, "version": "1.0.0", "lockfileVersion": 3, "requires": True,
        "packages": {"": {"name": task_id, "version": "1.0.0"}}}))  # fmt: skip
    node = "  kind: node\n  serve:\n    static_dir: dist\n"
    (folder / "task.yaml").write_text((folder / "task.yaml").read_text().replace("  kind: static\n", node))
    return folder


def test_a_build_the_machine_killed_is_built_again_and_only_a_death_on_every_attempt_is_the_candidates(tmp_path):
    """A bundler killed by SIGBUS once (seen beside busy workers) is not the candidate's failing build: the build
    runs again and its page is graded. A build that dies so every time is the candidate's, and says so."""
    root = tmp_path / "suite"
    dies = "sh -c 'kill -BUS $$'"  # the shell running the script reports its child's death: exit 135, "Bus error"
    build = "mkdir -p dist && cp index.html dist/index.html"
    node_task(root, "crashes-once", f"test -e .crashed || {{ touch .crashed && {dies}; }} && {build}")
    node_task(root, "crashes-always", f"{dies} && {build}")
    tables = run_suite(tmp_path, root, "model=oracle")
    rows = {r["task_id"]: r for r in tables["tasks"].to_dicts()}
    assert rows["crashes-once"]["status"] == "ok" and rows["crashes-once"]["strict"] == 0.5, rows  # like GOOD
    assert rows["crashes-always"]["status"] == "ok" and rows["crashes-always"]["strict"] == 0.0, rows
    logs = sorted((p.read_text() for p in (tmp_path / "store").rglob("evals/*/build.log")), key=len)
    once, always = logs
    assert once.count("Bus error") == 1 and "built again, attempt 2 of 3" in once and "failed" not in once, once
    assert always.count("Bus error") == 3 and always.endswith("killed by SIGBUS on each of 3 attempts"), always
