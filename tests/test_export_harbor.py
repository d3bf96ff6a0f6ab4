"""codesign tasks as Harbor task folders (``python -m codesign.export harbor TASKS OUT``): the layout, the
contents, the reference applied by solve.sh, every folder accepted by Harbor's own loader and lint (harbor
pinned, in its Python 3.13 image), and test.sh's grading run here, without Docker: the reference's reward 1,
the untouched app's below, a grader failure no reward at all."""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from codesign.export import harbor_tasks
from codesign.export.harbor_tasks import export, main
from codesign.tasks.loader import load_suite, load_task
from codesign.workspace import apply_patch, changed_files

SUITE = Path(harbor_tasks.__file__).resolve().parents[1] / "suite"
STATIC, NODE = "me-expense-receipt-pdf", "re-shop-cart-checkout"  # attachment and history; node, command criterion


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("harbor") / "out"
    result = export([SUITE], out)
    assert not result.errors, result.errors
    return out


def files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_every_bundled_task_becomes_a_harbor_folder_with_the_criteria_only_under_tests(exported):
    suite = load_suite(SUITE)
    assert sorted(p.name for p in exported.iterdir()) == sorted(t.id for t in suite.tasks)
    for task in suite.tasks:
        dest = exported / task.id
        top = {"task.toml", "instruction.md", "environment/Dockerfile", "tests/test.sh", "solution/solve.sh",
               "solution/solution.patch"}  # fmt: skip
        assert top <= files(dest), task.id
        assert os.access(dest / "tests" / "test.sh", os.X_OK) and os.access(dest / "solution" / "solve.sh", os.X_OK)
        assert files(dest / "environment" / "app") == files(task.app_dir)  # the pre-edit app, as it is
        assert (dest / "solution" / "solution.patch").read_text() == task.reference_patch()
        # The hidden material is in tests/ (Harbor copies it in for the verifier only), never in environment/.
        hidden = {f for f in files(task.dir) if not f.startswith(("app/", "solution/near-misses/"))}
        hidden -= {a.path for a in task.manifest.attachments} | {"task.yaml"}
        assert {"criteria.yaml", "solution/solution.patch"} <= hidden
        assert hidden <= files(dest / "tests" / task.id), task.id
        environment = files(dest / "environment")
        assert not {Path(f).name for f in environment} & {"criteria.yaml", "solution.patch", "test.sh"}, task.id
        assert {f for f in environment if not f.startswith(("app/", "attachments/"))} <= {
            "Dockerfile",
            "docker-compose.yaml",
        }
        for criterion in task.criteria:
            for f in environment:  # no criterion's text in any file the agent's image is built from
                data = (dest / "environment" / f).read_bytes()
                assert criterion.text.encode() not in data, (task.id, criterion.id, f)
        docker = (dest / "environment" / "Dockerfile").read_text()
        assert "ARG CODESIGN_IMAGE=codesign/worker:latest\nFROM ${CODESIGN_IMAGE}" in docker
        assert "COPY app/ /app/" in docker and "WORKDIR /app" in docker
        node = task.manifest.environment.kind == "node"
        assert ("npm ci" in docker) == node
        assert (dest / "environment" / "docker-compose.yaml").is_file() == node  # bubblewrap for the grader
        text = (dest / "instruction.md").read_text()
        assert task.manifest.request in text and task.manifest.title in text and "`/app`" in text
        for turn in task.manifest.history:
            assert turn.content in text
        for a in task.manifest.attachments:
            name = Path(a.path).name
            assert f"_attachments/{name}" in text and "COPY attachments/ /app/_attachments/" in docker
            assert filecmp.cmp(task.dir / a.path, dest / "environment" / "attachments" / name, shallow=False)


def test_task_toml_carries_the_labels_the_timeouts_and_a_separate_verifier(exported):
    task = load_task(SUITE / NODE)
    config = tomllib.loads((exported / NODE / "task.toml").read_text())
    assert config["schema_version"] == "1.4"
    meta = config["metadata"]
    assert meta["track"] == "RE" and meta["codesign_difficulty"] == 4 and meta["difficulty"] == "hard"
    labels = task.manifest.labels
    assert set(meta["tags"]) == {*labels.capability, *labels.categories, *labels.edit_types, "text"}
    assert meta["author_name"] == "codesign" and meta["category"] == "software_engineering"
    assert config["verifier"] == {"timeout_sec": 4200.0, "environment_mode": "separate"}
    assert config["agent"] == {"timeout_sec": 10800.0}
    assert config["environment"] == {"build_timeout_sec": 600.0, "cpus": 2, "memory_mb": 4096, "storage_mb": 10240}
    assert config["artifacts"] == [{"source": "/app", "exclude": ["node_modules", "dist", ".vite", "_attachments"]}]
    assert "task" not in config  # no registry name unless --org
    static = tomllib.loads((exported / STATIC / "task.toml").read_text())["metadata"]
    assert static["difficulty"] == "easy" and static["modality"] == "document" and static["track"] == "ME"


def test_org_and_author_make_a_registry_package(tmp_path):
    code = main([str(SUITE / STATIC), str(tmp_path / "out"), "--org", "acme", "--author", "Ada Lovelace <ada@x.org>"])
    assert code == 0
    config = tomllib.loads((tmp_path / "out" / STATIC / "task.toml").read_text())
    assert config["task"]["name"] == f"acme/{STATIC}"
    assert config["task"]["authors"] == [{"name": "Ada Lovelace", "email": "ada@x.org"}]
    assert config["metadata"]["author_name"] == "Ada Lovelace" and config["metadata"]["author_email"] == "ada@x.org"


@pytest.mark.parametrize("task_id", [STATIC, NODE])
def test_solve_sh_applies_the_reference_patch_as_codesign_does(exported, tmp_path, task_id):
    task = load_task(SUITE / task_id)
    work, expected = tmp_path / "work", tmp_path / "expected"
    shutil.copytree(exported / task_id / "environment" / "app", work)
    shutil.copytree(task.app_dir, expected)
    apply_patch(expected, task.reference_patch())
    before = {f: (work / f).read_bytes() for f in files(work)}
    subprocess.run(["bash", str(exported / task_id / "solution" / "solve.sh")], check=True,
                   env={**os.environ, "CODESIGN_WORKSPACE": str(work)})  # fmt: skip
    changed = {
        f for f in files(work) | set(before) if not (work / f).is_file() or before.get(f) != (work / f).read_bytes()
    }
    assert changed == set(changed_files(task.reference_patch())) and changed
    assert files(work) == files(expected)
    assert all((work / f).read_bytes() == (expected / f).read_bytes() for f in files(work))


def run_test_sh(task_dir: Path, workspace: Path, logs: Path) -> subprocess.CompletedProcess[str]:
    """The exported test.sh as Harbor runs it, with the container's paths moved to this machine's."""
    env = {**os.environ, "CODESIGN_WORKSPACE": str(workspace), "CODESIGN_VERIFIER_LOGS": str(logs),
           "CODESIGN_PYTHON": sys.executable}  # fmt: skip
    return subprocess.run(["bash", str(task_dir / "tests" / "test.sh")], env=env, capture_output=True, text=True)


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("task_id", [STATIC, NODE])
def test_test_sh_rewards_the_reference_1_and_the_untouched_app_less_with_the_verdicts_beside(
    exported, tmp_path, task_id
):
    dest, task = exported / task_id, load_task(SUITE / task_id)
    solved = tmp_path / "solved"
    shutil.copytree(dest / "environment" / "app", solved)
    subprocess.run(["bash", str(dest / "solution" / "solve.sh")], check=True,
                   env={**os.environ, "CODESIGN_WORKSPACE": str(solved)})  # fmt: skip
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "reward.txt").write_text("1\n")  # what an agent may have left: never read as the grader's
    proc = run_test_sh(dest, solved, logs)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert float((logs / "reward.txt").read_text()) == 1.0
    record = json.loads((logs / "verdicts.json").read_text())
    assert [v["criterion_id"] for v in record["verdicts"]] == [c.id for c in task.criteria]
    assert {v["verdict"] for v in record["verdicts"]} == {"PASS"} and record["scores"]["full_pass"] is True
    assert not (logs / "grading_error.txt").exists()

    untouched = tmp_path / "untouched"
    shutil.copytree(dest / "environment" / "app", untouched)
    if task.manifest.attachments:  # given to the agent in the app's folder, left out of what is graded
        shutil.copytree(dest / "environment" / "attachments", untouched / "_attachments")
    logs = tmp_path / "logs-untouched"
    proc = run_test_sh(dest, untouched, logs)
    assert proc.returncode == 0, proc.stderr[-3000:]
    reward = float((logs / "reward.txt").read_text())
    record = json.loads((logs / "verdicts.json").read_text())
    passed = [v for v in record["verdicts"] if v["verdict"] == "PASS"]
    assert reward == record["scores"]["strict"] == len(passed) / len(task.criteria) < 1
    assert {v["criterion_id"] for v in passed} == {c.id for c in task.criteria if c.preserve}  # the changes FAIL
    assert (logs / "evidence" / "attempt-1" / "diff.patch").read_text() == ""  # nothing changed, nothing graded


PAGE = "<!doctype html><html><body><h1>Shop</h1>\n<p class=note>Come again soon</p>\n</body></html>\n"
PATCH = """diff --git a/index.html b/index.html
--- a/index.html
+++ b/index.html
@@ -1,3 +1,3 @@
 <!doctype html><html><body><h1>Shop</h1>
-<p class=note>Come again soon</p>
+<p class=note>Thanks for visiting</p>
 </body></html>
"""
CRITERIA = """criteria:
  - id: note-text
    text: The note says "Thanks for visiting".
    kind: content
    probe: {expect: [{text: {selector: ".note", contains: "Thanks for visiting"}}]}
  - id: reward
    text: A test script's reward decides.
    kind: content
    command: {run: "%s", pass_if: reward_file}
"""


def small_task(root: Path, reward_command: str) -> Path:
    """A static task whose second criterion is a command reporting a reward (Harbor's convention)."""
    task = root / "shop"
    for d in ("app", "solution"):
        (task / d).mkdir(parents=True)
    (task / "task.yaml").write_text(
        "id: shop\ntrack: ME\ntitle: Shop note\nrequest: 'Say \"Thanks for visiting\".'\n"
        "labels: {capability: [ui_transformation]}\n"
    )
    (task / "criteria.yaml").write_text(CRITERIA % reward_command)
    (task / "app" / "index.html").write_text(PAGE)
    (task / "solution" / "solution.patch").write_text(PATCH)
    return task


@pytest.mark.browser
@pytest.mark.slow
def test_a_grader_failure_writes_no_reward_and_exits_non_zero(tmp_path):
    good = 'echo 1 > \\"$REWARD_DIR/reward.txt\\"'
    export([small_task(tmp_path / "good", good)], tmp_path / "out-good")
    # The command of this one writes no reward: its criterion is ungraded (grader_error), the grading failed.
    export([small_task(tmp_path / "broken", "true")], tmp_path / "out-broken")
    solved = tmp_path / "solved"
    shutil.copytree(tmp_path / "out-good" / "shop" / "environment" / "app", solved)
    apply_patch(solved, PATCH)

    proc = run_test_sh(tmp_path / "out-good" / "shop", solved, tmp_path / "logs-good")  # the control: graded
    assert proc.returncode == 0 and float((tmp_path / "logs-good" / "reward.txt").read_text()) == 1.0, proc.stderr

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "reward.txt").write_text("0.5\n")  # a stale reward is removed, not left for Harbor to read
    proc = run_test_sh(tmp_path / "out-broken" / "shop", solved, logs)
    assert proc.returncode == 1
    assert not (logs / "reward.txt").exists() and not (logs / "reward.json").exists()
    record = json.loads((logs / "verdicts.json").read_text())
    assert record["status"] == "grading_error" and "scores" not in record
    by_id = {v["criterion_id"]: v for v in record["verdicts"]}
    assert by_id["reward"]["ungraded"] == "grader_error" and by_id["note-text"]["verdict"] == "PASS"
    assert "grader_error" in (logs / "grading_error.txt").read_text()
    assert "no reward" in proc.stderr

    # Where bubblewrap cannot start (no user namespaces, as in a container without the compose file's options),
    # every build would fail as if the candidate's: the grader refuses instead. bwrap --disable-userns makes one.
    logs = tmp_path / "logs-no-userns"
    proc = subprocess.run(
        ["bwrap", "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-user", "--disable-userns",
         "bash", str(tmp_path / "out-good" / "shop" / "tests" / "test.sh")],
        env={**os.environ, "CODESIGN_WORKSPACE": str(solved), "CODESIGN_VERIFIER_LOGS": str(logs),
             "CODESIGN_PYTHON": sys.executable}, capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 1 and not (logs / "reward.txt").exists(), proc.stderr
    assert "bubblewrap cannot create a sandbox" in (logs / "grading_error.txt").read_text()

    # The task folder itself broken: the grader cannot even load it.
    criteria = tmp_path / "out-broken" / "shop" / "tests" / "shop" / "criteria.yaml"
    criteria.write_text(criteria.read_text().replace("kind: content", "kind: contents", 1))
    proc = run_test_sh(tmp_path / "out-broken" / "shop", solved, logs)
    assert proc.returncode == 1 and not (logs / "reward.txt").exists()
    assert "criteria.yaml" in (logs / "grading_error.txt").read_text() and "could not grade" in proc.stderr


def test_a_folder_that_is_not_a_task_is_named_and_the_rest_exported(tmp_path, capsys):
    stray = tmp_path / "notes"
    stray.mkdir()
    (stray / "readme.txt").write_text("not a task")
    suite = tmp_path / "suite"
    shutil.copytree(SUITE / STATIC, suite / STATIC)
    (suite / "half-task").mkdir()
    (suite / "half-task" / "criteria.yaml").write_text("criteria: []\n")
    code = main([str(stray), str(tmp_path / "missing"), str(suite), str(SUITE / NODE), str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1
    assert f"{stray}: not a codesign task folder (no task.yaml)" in err
    assert f"{tmp_path / 'missing'}: no such folder" in err
    assert f"{suite / 'half-task'}: task 'half-task': task.yaml: file is missing" in err
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [STATIC, NODE]  # the rest, exported


def test_an_export_replaces_its_earlier_one_but_never_a_folder_of_something_else(tmp_path):
    out = tmp_path / "out"
    assert main([str(SUITE / STATIC), str(out)]) == 0
    (out / STATIC / "instruction.md").write_text("edited")
    (out / STATIC / "extra.txt").write_text("left over")
    assert main([str(SUITE / STATIC), str(out)]) == 0
    assert "Correct the hotel line" in (out / STATIC / "instruction.md").read_text()
    assert not (out / STATIC / "extra.txt").exists()
    assert sorted(p.name for p in out.iterdir()) == [STATIC]  # no staging folder left behind
    (out / NODE).mkdir()
    (out / NODE / "mine.txt").write_text("someone's work")
    assert main([str(SUITE / NODE), str(out)]) == 1
    assert (out / NODE / "mine.txt").read_text() == "someone's work"


@pytest.mark.slow
@pytest.mark.duration(110)
def test_harbors_own_loader_and_lint_accept_every_exported_task_and_catch_a_broken_one(exported, docker_engine):
    from codesign.export.harbor_image import HARBOR_VERSION, check_tasks

    tasks = sorted(exported.iterdir())
    broken = exported.parent / "broken" / NODE
    shutil.copytree(exported / NODE, broken)
    toml = broken / "task.toml"
    toml.write_text(toml.read_text().replace('environment_mode = "separate"\n', "timeout = 5\n"))
    shutil.copytree(exported / STATIC, exported.parent / "no-tests" / STATIC)
    (exported.parent / "no-tests" / STATIC / "tests" / "test.sh").unlink()

    reports = check_tasks([*tasks, broken, exported.parent / "no-tests" / STATIC])
    for task_dir, report in zip(tasks, reports, strict=False):
        assert report["harbor"] == HARBOR_VERSION
        assert report["valid_dir"] and "error" not in report and "lint_error" not in report, report
        assert report["findings"] == [], (task_dir.name, report["findings"])
        assert report["name"] == task_dir.name
        assert report["instruction"] == (task_dir / "instruction.md").read_text()
        assert report["verifier_mode"] == "separate"
        assert report["test_script"].endswith("/tests/test.sh") and report["solve_script"].endswith("/solve.sh")
        assert report["config"]["artifacts"][0]["source"] == "/app"
    bad, missing = reports[-2], reports[-1]
    rules = {f["rule"] for f in bad["findings"]}
    assert rules == {"unknown-config-field", "shared-verifier"}, bad["findings"]
    assert not missing["valid_dir"] and "test.sh" in missing["error"]
    assert {f["rule"] for f in missing["findings"]} == {"invalid-task-files"}


# Alone: Harbor's compose project creates a network on the engine, and Chromium fails the requests in flight
# in every other test's browser when the host's interfaces change (net::ERR_NETWORK_CHANGED: seen once under
# make test, two gate verdicts of the bundled suite disturbed while this ran beside them).
@pytest.mark.slow
@pytest.mark.alone
def test_harbor_runs_the_oracle_to_reward_1_and_the_nop_to_the_preservation_share(tmp_path, docker_engine):
    """Harbor itself (harbor run, its docker environment and oracle / nop agents) on exported tasks, on codesign's
    worker image built from this checkout. (A grader that cannot start bubblewrap writes no reward: tested by
    running test.sh here, test_a_grader_failure_writes_no_reward_and_exits_non_zero.)"""
    from codesign.export.harbor_image import harbor_run, worker_image

    image = worker_image(Path(harbor_tasks.__file__).resolve().parents[2])
    bakery = "me-bakery-header-mockup"
    out = tmp_path / "out"
    assert not export([SUITE / bakery, SUITE / NODE], out, image=image).errors

    oracle = harbor_run(out / NODE, "oracle", tmp_path / "jobs")  # node app, bubblewrap in the container
    assert oracle["exception_info"] is None and oracle["verifier_environment_mode"] == "separate", oracle
    assert oracle["verifier_result"]["rewards"] == {"reward": 1.0}
    record = json.loads((Path(oracle["trial_dir"]) / "verifier" / "verdicts.json").read_text())
    assert record["scores"]["full_pass"] and len(record["verdicts"]) == len(load_task(SUITE / NODE).criteria)

    nop = harbor_run(out / bakery, "nop", tmp_path / "jobs")
    task = load_task(SUITE / bakery)
    kept = sum(c.preserve for c in task.criteria) / len(task.criteria)  # the untouched app keeps what it had
    assert nop["exception_info"] is None and nop["verifier_result"]["rewards"] == {"reward": kept} and kept < 1
