"""The whole pipeline, as a user runs it: real CLI, real Ray, real Chromium, W&B offline."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import polars as pl
import pytest

from codesign.errors import EnvironmentSetupError
from codesign.runner import run
from tests.conftest import SUITE
from tests.helpers import cli, compose_config

pytestmark = [pytest.mark.browser, pytest.mark.ray, pytest.mark.slow]


def _scores(run_dir: Path) -> pl.DataFrame:
    return pl.read_parquet(run_dir / "tasks.parquet")


@pytest.mark.duration(69)
def test_default_run_scores_oracle_perfectly_and_logs_wandb_offline(tmp_path):
    """`python -m codesign` with no arguments: bundled tasks, oracle, probes, W&B offline, own local Ray."""
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "WANDB_API_KEY", "WANDB_MODE")}
    env["CODESIGN_STORE"] = str(tmp_path / "store")
    env["NETRC"] = str(tmp_path / "no-netrc")  # no `wandb login` credentials: auto mode is offline
    proc = cli(f"hydra.run.dir={tmp_path / 'run'}", env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    table = [line for line in proc.stdout.splitlines() if line.startswith("| oracle")]
    assert len(table) == 3 and all("| 1.0 " in line for line in table), proc.stdout
    tasks = _scores(tmp_path / "run")
    assert tasks["status"].unique().to_list() == ["ok"] and tasks["strict"].to_list() == [1.0] * tasks.height
    assert set(tasks["track"]) == {"ME", "RE"}
    for name in ("verdicts", "tasks", "summary", "breakdowns", "ledger", "denominators"):
        assert (tmp_path / "run" / f"{name}.parquet").is_file()
    assert "5 planned, 5 scored; criteria in the scores: 45 (probe 45)" in proc.stdout  # the denominators
    report = (tmp_path / "run" / "report.html").read_text()  # self-contained: screenshots embedded
    assert "me-bakery-header-mockup" in report and "data:image/jpeg;base64," in report and 'class="PASS"' in report
    # W&B offline: a run file and the logged tables, and no network needed.
    runs = list((tmp_path / "run" / "wandb").glob("offline-run-*"))
    assert len(runs) == 1
    assert list(runs[0].glob("run-*.wandb"))
    tables = {p.name.split("_")[0] for p in (runs[0] / "files" / "media" / "table").glob("*.table.json")}
    assert {"tasks", "verdicts", "summary", "ledger", "denominators"} <= tables
    logged = next(runs[0].glob("run-*.wandb")).read_bytes().decode("latin-1")
    assert "denominators/planned" in logged and "ALL/scored" in logged  # the denominators in the run's summary
    assert "results-" in logged and "trials-" in logged  # the artifacts: tables, and patches + trajectories


def test_sweep_runs_two_cells_on_an_existing_ray_cluster(tmp_path, ray_instance):
    """`-m model=oracle,noop`, with RAY_ADDRESS pointing at an already running Ray (no code change)."""
    import ray
    from ray._private.state import jobs  # the cluster's job table (the public state API needs the dashboard)

    before = {j["JobID"] for j in jobs()}
    env = {
        **os.environ,
        "RAY_ADDRESS": ray.get_runtime_context().gcs_address,
        "CODESIGN_STORE": str(tmp_path / "store"),
    }
    # attribution is tested on its own; here it would only add two gate evaluations per task. Two tasks of the
    # sample (one per track) show the sweep on the cluster; the default run above grades all five.
    proc = cli(
        "-m",
        "model=oracle,noop",
        "tracker=none",
        "attribution.below=null",
        "tasks.include=[me-bakery-header-mockup,re-docs-rename-release]",
        f"hydra.sweep.dir={tmp_path / 'sweep'}",
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    # The sweep's driver joined this Ray, not a new local one: its job is in this cluster's table.
    drivers = [j["Entrypoint"] for j in jobs() if j["JobID"] not in before]
    assert any("codesign" in e and "model=oracle,noop" in e for e in drivers), drivers
    cells = sorted(p for p in (tmp_path / "sweep").iterdir() if p.is_dir() and (p / "tasks.parquet").exists())
    assert [c.name for c in cells] == ["0_model=oracle", "1_model=noop"]
    oracle, noop = (_scores(c) for c in cells)
    assert oracle["strict"].mean() == 1.0
    assert noop["strict"].mean() < 0.5
    # noop keeps what must be preserved, so exactly the preservation criteria pass.
    verdicts = pl.read_parquet(cells[1] / "verdicts.parquet")
    assert verdicts.filter(pl.col("verdict") == "PASS")["preserve"].all()


def test_broken_task_is_reported_as_error_not_zero(tmp_path, suite_copy, ray_instance):
    root = suite_copy("me-bakery-header-mockup", "me-expense-receipt-pdf")
    (root / "me-expense-receipt-pdf" / "criteria.yaml").write_text("criteria: [unclosed\n")
    cfg = compose_config("tasks=all", f"tasks.root={root}", "tracker=none", f"store.root={tmp_path / 'store'}")
    out = tmp_path / "run"
    out.mkdir()
    tables = run(cfg, out)
    tasks = tables["tasks"]
    broken = tasks.filter(pl.col("task_id") == "me-expense-receipt-pdf").row(0, named=True)
    assert broken["status"] == "task_error" and broken["strict"] is None
    assert "criteria.yaml" in broken["message"] and "malformed YAML" in broken["message"]
    all_ = tables["summary"].filter(pl.col("track") == "ALL").row(0, named=True)
    assert all_["strict"] == 1.0 and all_["tasks"] == 1 and all_["errors"] == 1


def test_resume_reuses_finished_stages(tmp_path, suite_copy):
    root = suite_copy("me-bakery-header-mockup")
    overrides = [
        "tasks=all",
        f"tasks.root={root}",
        "tracker=none",
        "executor=inline",
        f"store.root={tmp_path / 'store'}",
    ]
    first_dir, second_dir = tmp_path / "a", tmp_path / "b"
    first_dir.mkdir(), second_dir.mkdir()
    first = run(compose_config(*overrides), first_dir)
    # A lost evaluation (e.g. the run was killed while grading) is redone; the finished solve is not.
    trial_dir = next((tmp_path / "store" / "trials").iterdir())
    shutil.rmtree(trial_dir / "evals")
    solved_at = (trial_dir / "solve.json").stat().st_mtime_ns
    second = run(compose_config(*overrides), second_dir)
    assert first["verdicts"].drop("reason").equals(second["verdicts"].drop("reason"))
    trial_dirs = list((tmp_path / "store" / "trials").iterdir())
    assert len(trial_dirs) == 1
    assert len(list((trial_dirs[0] / "evals").iterdir())) == 1
    assert (trial_dir / "solve.json").stat().st_mtime_ns == solved_at  # the solve was not run again


def test_wandb_run_closes_cleanly_when_the_run_fails(tmp_path, suite_copy):
    import wandb

    root = suite_copy("me-bakery-header-mockup")
    (tmp_path / "file").write_text("a file where the store's folder should be")
    cfg = compose_config(
        "tasks=all",
        f"tasks.root={root}",
        f"store.root={tmp_path / 'file' / 'store'}",
        "executor=inline",
    )  # the executor refuses a machine whose store is not writable: the run fails after the tracker started
    out = tmp_path / "run"
    out.mkdir()
    store = tmp_path / "file" / "store"
    with pytest.raises(EnvironmentSetupError, match=rf"the store {re.escape(str(store))} is not writable: .*Not a dir"):
        run(cfg, out)
    assert wandb.run is None  # finished, not left dangling
    run_dir = next((out / "wandb").glob("offline-run-*"))
    assert list(run_dir.glob("run-*.wandb"))


@pytest.mark.ray
def test_a_node_that_is_not_ready_is_reported_by_name_before_any_trial(tmp_path, ray_instance):
    """Every Ray actor checks its own node (store writable, Node.js, bubblewrap, media libraries, browser)."""
    import socket

    from codesign.errors import EnvironmentSetupError
    from codesign.execute.ray_pool import RayExecutor
    from codesign.runner import trial_specs

    cfg = compose_config("tasks.include=[me-bakery-header-mockup]")
    specs = [vars(s) for s in trial_specs(cfg, [("me-bakery-header-mockup", SUITE / "me-bakery-header-mockup")])]
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the node's caches should be")
    specs[0]["store_root"] = str(tmp_path / "store")
    specs[0]["node_cache"] = str(blocked / "node_modules")
    seen: list = []
    with pytest.raises(EnvironmentSetupError) as err:
        RayExecutor(num_workers=1).run(specs, seen.append)
    assert "no node is ready" in str(err.value)
    assert f"{socket.gethostname()}: the node cache {blocked}" in str(err.value) and "not writable" in str(err.value)
    assert seen == []  # no trial started
    assert not list((tmp_path / "store" / ".codesign" / "node-check").iterdir())  # the run's check file is gone

    specs[0]["store_root"] = str(blocked / "store")  # the driver cannot write the store: refused before Ray work
    with pytest.raises(EnvironmentSetupError, match="not writable from this machine"):
        RayExecutor(num_workers=1).run(specs, seen.append)


@pytest.mark.ray
def test_a_solve_only_run_never_launches_a_browser_and_a_grading_run_checks_it(tmp_path, ray_instance):
    """A node's browser is checked (launched for real) only when the run grades: a solve-only run's actors run
    their trials without one, so a node with no working Chromium still solves."""
    from codesign.execute.ray_pool import RayExecutor
    from codesign.runner import trial_specs

    cfg = compose_config("tasks.include=[me-bakery-header-mockup]")
    specs = [vars(s) for s in trial_specs(cfg, [("me-bakery-header-mockup", SUITE / "me-bakery-header-mockup")])]
    specs[0]["store_root"] = str(tmp_path / "store")
    missing = str(tmp_path / "no-chromium")
    seen: list = []
    with pytest.raises(EnvironmentSetupError) as err:
        RayExecutor(num_workers=1, browser_executable=missing).run(specs, seen.append)
    assert f"Chromium: browser {missing!r} does not exist" in str(err.value) and seen == []

    specs[0]["evaluate"] = False
    records = RayExecutor(num_workers=1, browser_executable=missing).run(specs, seen.append)
    assert [(r.status, r.evaluation) for r in records] == [("solved", None)] and len(seen) == 1
    assert records[0].telemetry is not None and records[0].telemetry.exit_status == "submitted"  # the oracle's


def test_a_node_that_does_not_see_the_drivers_store_is_named(tmp_path):
    """A local-path store on a cluster must be one shared disk: a node reading another disk has no check file."""
    from codesign.execute.prerequisites import NodeRequirements, node_problems, store_token

    elsewhere = tmp_path / "node-b-disk" / "store"  # the same path on another machine: a different folder
    path, token = store_token(str(tmp_path / "store"))
    problems = node_problems(NodeRequirements(str(elsewhere), None, str(tmp_path / "cache" / "nm"), path, token))
    assert len(problems) == 1 and "is not the driver's store here" in problems[0] and "s3://" in problems[0]
    same = node_problems(NodeRequirements(str(tmp_path / "store"), None, str(tmp_path / "cache" / "nm"), path, token))
    assert same == []


def test_a_node_without_the_runs_model_keys_is_told_how_to_pass_them(tmp_path, monkeypatch):
    from codesign.execute.prerequisites import NodeRequirements, needed_keys, node_problems

    monkeypatch.delenv("CODESIGN_NODE_TEST_KEY", raising=False)
    specs = [{"model": {"api_key_env": "CODESIGN_NODE_TEST_KEY"}, "evaluator": {"judge": {"api_key_env": "J_KEY"}}}]
    assert needed_keys(specs) == {"CODESIGN_NODE_TEST_KEY", "J_KEY"}
    monkeypatch.setenv("J_KEY", "present")
    problems = node_problems(
        NodeRequirements(
            str(tmp_path / "s"), None, str(tmp_path / "c" / "nm"), keys=["CODESIGN_NODE_TEST_KEY", "J_KEY"]
        )
    )
    assert len(problems) == 1 and "CODESIGN_NODE_TEST_KEY" in problems[0] and "J_KEY" not in problems[0]
    assert "executor.env_from_driver=[CODESIGN_NODE_TEST_KEY]" in problems[0]


def test_ray_that_cannot_start_fails_with_a_hint():
    import subprocess
    import sys

    code = "from codesign.execute.ray_connect import ensure_ray; ensure_ray(None, num_cpus=-1)"  # Ray refuses it
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "Ray did not start" in proc.stderr and "executor=inline" in proc.stderr
