"""Verdicts do not depend on how busy the machine is: the gate on RE tasks under a CPU burner that
saturates every core gives exactly the verdicts of the idle run.

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

from codesign.tasks.loader import load_suite
from tests.conftest import SUITE, gate_in

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.alone]
BURNERS_PER_CORE = 4
LOADED = ["re-kanban-wip-limits", "re-recipes-search", "re-settings-theme-persist", "re-team-directory-favorites"]
# Self-terminating: the burner can never outlive the test by more than this, whatever happens to pytest.
BURN = "import time\nend = time.monotonic() + 1200\nwhile time.monotonic() < end: pass\n"


def verdicts(folder: Path, task_ids: list[str]) -> dict[tuple[str, str, str], str]:
    out = {}
    for task_id in task_ids:
        for which in ("baseline", "reference"):
            for v in json.loads((folder / task_id / which / "verdicts.json").read_text()):
                out[(task_id, which, v["criterion_id"])] = v["verdict"]
    return out


def test_the_gate_gives_the_same_verdicts_on_a_saturated_machine(tmp_path):
    re_tasks = [t for t in LOADED if t in {t.id for t in load_suite(SUITE).tasks}]
    assert len(re_tasks) == len(LOADED)
    include = f"tasks.include=[{','.join(re_tasks)}]"
    idle_code, idle_out, idle_folder = gate_in(tmp_path / "idle", include)  # this run has the machine to itself
    assert idle_code == 0, idle_out
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(BURNERS_PER_CORE * (os.cpu_count() or 1))]
    try:
        code, out, folder = gate_in(tmp_path / "loaded", include)
        assert all(b.poll() is None for b in burners)  # the load lasted the whole run
    finally:
        for b in burners:
            b.kill()
            b.wait()
    assert code == 0, out
    idle, loaded = verdicts(idle_folder, re_tasks), verdicts(folder, re_tasks)
    assert len(loaded) > 90  # every criterion of these tasks, graded twice (baseline and reference)
    differ = {k: (idle[k], loaded[k]) for k in idle if idle[k] != loaded.get(k)}
    assert not differ, differ
