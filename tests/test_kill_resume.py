"""A real SIGKILL of ``python -m codesign`` (a run, and a ``-m`` sweep) in the middle of an evaluation, then the
same command again: every trial once in the results, the finished solves reused as they were (same patch,
never solved again), and nothing of the killed process left behind (scratch folders, held locks)."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import SUITE

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TASKS = ("me-bakery-header-mockup", "me-recipe-servings-text")
GIVE_UP_S = 600  # only so that a broken product fails the test instead of hanging it; nothing is timed


@dataclass
class Stored:
    """What the store holds for one trial when the command was killed."""

    solve_mtime: int | None
    patch: bytes | None
    evaluation_mtime: int | None


def command(tmp_path: Path, *extra: str, sweep: bool = False) -> list[str]:
    overrides = ["tasks=all", f"tasks.root={tmp_path / 'suite'}", "tasks.include=[" + ",".join(TASKS) + "]",
                 "executor=inline", "tracker=none", "attribution.below=null", f"store.root={tmp_path / 'store'}",
                 f"paths.scratch={tmp_path / 'scratch'}", *extra]  # fmt: skip
    return [sys.executable, "-m", "codesign", *(["-m"] if sweep else []), *overrides]


def start(tmp_path: Path, argv: list[str]) -> subprocess.Popen:
    """The command in its own process group (so one signal reaches every process it started)."""
    log = (tmp_path / "killed.log").open("w")
    return subprocess.Popen(argv, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def kill_when(proc: subprocess.Popen, tmp_path: Path, ready: Callable[[], bool]) -> None:
    """SIGKILL the command's process group once ``ready()`` holds. The group is stopped first and the state
    checked again while nothing can move, so the kill lands in exactly that state."""
    deadline = time.monotonic() + GIVE_UP_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the command ended before the state to kill it in: {(tmp_path / 'killed.log').read_text()}")
        if ready():
            os.killpg(proc.pid, signal.SIGSTOP)
            if ready():
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return
            os.killpg(proc.pid, signal.SIGCONT)
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)
    pytest.fail("the state to kill the command in never came")


def evaluating(tmp_path: Path) -> list[Path]:
    """The scratch folders of evaluations in progress (codesign.evaluate.run makes one per evaluation)."""
    return [p for p in (tmp_path / "scratch").glob("codesign-*-eval-*") if p.is_dir()]


def finished_evaluations(tmp_path: Path) -> list[Path]:
    return list((tmp_path / "store").glob("trials/*/evals/*/evaluation.json"))


def snapshot(tmp_path: Path) -> dict[str, Stored]:
    out = {}
    for trial in (tmp_path / "store" / "trials").iterdir():
        solve, patch = trial / "solve.json", trial / "patch.diff"
        evaluation = next(trial.glob("evals/*/evaluation.json"), None)
        out[trial.name] = Stored(solve.stat().st_mtime_ns if solve.is_file() else None,
                                 patch.read_bytes() if solve.is_file() else None,
                                 evaluation.stat().st_mtime_ns if evaluation else None)  # fmt: skip
    return out


def assert_resumed_cleanly(tmp_path: Path, before: dict[str, Stored], trials: int) -> None:
    after = snapshot(tmp_path)
    assert len(after) == trials  # no trial solved under a second key
    for key, was in before.items():
        now = after[key]
        if was.solve_mtime is not None:  # a finished solve is reused as it was: never solved again
            assert (now.solve_mtime, now.patch) == (was.solve_mtime, was.patch), key
        if was.evaluation_mtime is not None:  # likewise a finished evaluation
            assert now.evaluation_mtime == was.evaluation_mtime, key
    for trial in (tmp_path / "store" / "trials").iterdir():
        evals = list(trial.glob("evals/*"))
        assert len(evals) == 1 and (evals[0] / "evaluation.json").is_file(), trial
    # Nothing of the killed process is left: its scratch folders are swept, and no lock is held.
    assert not list((tmp_path / "scratch").iterdir())
    locks = list((tmp_path / "store").rglob("*.lock"))
    assert locks
    for lock in locks:
        with lock.open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises BlockingIOError if still held


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    import shutil

    for t in TASKS:
        shutil.copytree(SUITE / t, tmp_path / "suite" / t, ignore=shutil.ignore_patterns("node_modules", "dist"))
    return tmp_path / "suite"


def test_a_run_killed_mid_evaluation_resumes_with_each_trial_once_and_its_solves_reused(tmp_path, suite):
    argv = command(tmp_path, f"hydra.run.dir={tmp_path / 'run'}")
    proc = start(tmp_path, argv)
    kill_when(proc, tmp_path, lambda: bool(evaluating(tmp_path)))
    left = evaluating(tmp_path)
    assert left  # killed mid-evaluation: its scratch folder is still there, and that evaluation is unfinished
    before = snapshot(tmp_path)
    assert any(s.solve_mtime is not None for s in before.values())
    assert sum(s.evaluation_mtime is None for s in before.values()) >= 1

    again = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=GIVE_UP_S)
    assert again.returncode == 0, again.stderr[-3000:]
    tasks = pl.read_parquet(tmp_path / "run" / "tasks.parquet")
    assert sorted(tasks["task_id"]) == sorted(TASKS)  # each trial once
    assert tasks["status"].to_list() == ["ok", "ok"] and tasks["strict"].to_list() == [1.0, 1.0]
    assert_resumed_cleanly(tmp_path, before, trials=len(TASKS))


def test_a_sweep_killed_mid_evaluation_resumes_with_each_trial_once_and_its_stages_reused(tmp_path, suite):
    """``-m model=oracle,noop`` over two tasks (four trials in one pool), killed once a trial is recorded and
    another is being evaluated."""
    argv = command(tmp_path, "model=oracle,noop", f"hydra.sweep.dir={tmp_path / 'sweep'}", sweep=True)
    proc = start(tmp_path, argv)
    kill_when(proc, tmp_path, lambda: bool(finished_evaluations(tmp_path)) and bool(evaluating(tmp_path)))
    before = snapshot(tmp_path)
    assert evaluating(tmp_path) and sum(s.evaluation_mtime is not None for s in before.values()) >= 1
    assert sum(s.evaluation_mtime is None for s in before.values()) >= 1 or len(before) < 2 * len(TASKS)

    again = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=GIVE_UP_S)
    assert again.returncode == 0, again.stderr[-3000:]
    cells = sorted(p for p in (tmp_path / "sweep").iterdir() if (p / "tasks.parquet").is_file())
    assert [c.name for c in cells] == ["0_model=oracle", "1_model=noop"]
    for cell in cells:
        tasks = pl.read_parquet(cell / "tasks.parquet")
        assert sorted(tasks["task_id"]) == sorted(TASKS) and set(tasks["status"]) == {"ok"}  # each trial once
    oracle, noop = (pl.read_parquet(c / "tasks.parquet")["strict"] for c in cells)
    assert oracle.to_list() == [1.0, 1.0] and noop.max() < 1.0
    assert_resumed_cleanly(tmp_path, before, trials=2 * len(TASKS))


def test_a_scratch_root_that_does_not_exist_yet_is_made(tmp_path):
    """``paths.scratch`` may name a new folder (before, every trial of such a run was an infra_error)."""
    from codesign.sandbox import scratch

    made = scratch.make("solve-x", tmp_path / "new" / "scratch")
    assert made.is_dir() and made.parent == tmp_path / "new" / "scratch"
    assert made.name.startswith(scratch.owned_prefix("solve-x"))
