"""Verdicts do not depend on how busy the machine is: the gate on RE tasks under a CPU burner that
saturates every core gives exactly the verdicts each task declares — the reference passes every graded
criterion, the untouched app fails every change and keeps every preservation, each near miss gets the verdicts
its ``.yaml`` lists — the verdicts the gate on the whole bundled suite gives idle (``tests/test_validate.py``).

CI runs the four RE tasks whose interaction steps failed under load before evaluation waited on the app's
state (select, fill, click on a nav link, a switch); all nine take ~3.5 min under this load on 2 cores,
with the same result (README, *Verdicts do not depend on load*)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codesign.tasks.loader import Task, load_suite
from tests.conftest import SUITE, gate_in

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.alone]
BURNERS_PER_CORE = 4
LOADED = ["re-kanban-wip-limits", "re-recipes-search", "re-settings-theme-persist", "re-team-directory-favorites"]
# Self-terminating: the burner can never outlive the test by more than this, whatever happens to pytest.
BURN = "import time\nend = time.monotonic() + 1200\nwhile time.monotonic() < end: pass\n"


def declared(task: Task) -> dict[tuple[str, str, str], tuple[str, str | None]]:
    """The verdict (and cause, for no verdict about the app) the probe evaluator must give every criterion of
    every gate evaluation of ``task``, read from its files alone: a criterion with no deterministic grader is
    ``not_gradable`` (a FAIL) whatever the candidate."""
    out: dict[tuple[str, str, str], tuple[str, str | None]] = {}
    for c in task.criteria:
        cannot = ("FAIL", "not_gradable")
        out[(task.id, "reference", c.id)] = ("PASS", None) if c.deterministic else cannot
        out[(task.id, "baseline", c.id)] = ("PASS" if c.preserve else "FAIL", None) if c.deterministic else cannot
        for near in task.near_misses():
            out[(task.id, f"near-miss-{near.name}", c.id)] = (near.verdicts[c.id], None) if c.deterministic else cannot
    return out


def verdicts(folder: Path, keys: set[tuple[str, str, str]]) -> dict[tuple[str, str, str], tuple[str, str | None]]:
    """What the gate in ``folder`` gave, for the evaluations ``keys`` name (none for one the gate did not reach:
    it stops a task at its first failed step)."""
    out = {}
    for task_id, which in {(t, w) for t, w, _ in keys}:
        graded = folder / task_id / which / "verdicts.json"
        for v in json.loads(graded.read_text()) if graded.is_file() else []:
            out[(task_id, which, v["criterion_id"])] = (v["verdict"], v.get("ungraded"))
    return out


def test_the_gate_gives_the_declared_verdicts_on_a_saturated_machine(tmp_path):
    tasks = [t for t in load_suite(SUITE).tasks if t.id in LOADED]
    assert len(tasks) == len(LOADED)
    expected = {k: v for t in tasks for k, v in declared(t).items()}
    assert len(expected) >= 200 and all(len(t.near_misses()) == 2 for t in tasks)  # 55 criteria × 4 evaluations
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(BURNERS_PER_CORE * (os.cpu_count() or 1))]
    try:
        code, out, folder = gate_in(tmp_path, f"tasks.include=[{','.join(LOADED)}]")
        assert all(b.poll() is None for b in burners)  # the load lasted the whole run
    finally:
        for b in burners:
            b.kill()
            b.wait()
    loaded = verdicts(folder, set(expected))
    differ = {k: (v, loaded.get(k)) for k, v in expected.items() if loaded.get(k) != v}
    assert not differ, f"(task, evaluation, criterion): (declared, under load) {differ}\n{out[-3000:]}"
    assert code == 0, out
