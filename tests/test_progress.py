"""What a run shows while it runs: a line per trial in logs, a live table per cell for a grid in a terminal."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

import pytest

from codesign._types import Telemetry, TrialRecord
from codesign.track.progress import Progress
from tests.helpers import REPO


def record(cell: str, status: str = "ok", cost: float = 0.0, node: str = "") -> TrialRecord:
    r = TrialRecord("k", None, "task-a", "ME", {"run": cell}, {}, status, node=node)
    r.telemetry = Telemetry(cost_usd=cost)
    return r


def test_lines_in_a_log_and_counts_per_cell(capsys):
    progress = Progress({"0_model=a": 2, "1_model=b": 1}, live=False)
    progress.started({"cell": {"run": "0_model=a"}})
    progress.started({"cell": {"run": "1_model=b"}})
    progress.finished(record("0_model=a", cost=0.25, node="abcdef0123"))
    progress.finished(record("1_model=b", status="infra_error"))
    progress.close()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("[1/3") and "0_model=a: task-a 0/0 PASS on abcdef01" in lines[0]
    assert lines[1].startswith("[2/3") and "1_model=b: task-a infra_error" in lines[1]
    assert progress.counts["0_model=a"] == {"done": 1, "running": 0}
    assert progress.counts["1_model=b"]["failed"] == 1 and progress.spend["0_model=a"] == 0.25
    table = progress._table()
    assert "2/3 trials" in str(table.title) and "$0.2500" in str(table.title)


@pytest.mark.slow
@pytest.mark.browser
def test_a_grid_in_a_terminal_shows_a_live_table(tmp_path):
    """Run as a person would, in a pseudo-terminal: no line per trial, one table with every cell."""
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": "160", "TERM": "xterm"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "codesign", "-m", "model=oracle,noop", "tasks=all",
         "tasks.include=[me-recipe-servings-text]", "executor=inline", "tracker=none", "evaluator=probe",
         f"store.root={tmp_path / 'store'}", f"hydra.sweep.dir={tmp_path / 'grid'}"],
        stdin=follower, stdout=follower, stderr=follower, cwd=REPO, env=env,
    )  # fmt: skip
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    assert proc.wait(timeout=600) == 0
    screen = b"".join(chunks).decode(errors="replace")
    assert "running" in screen and "failed" in screen and "spend $" in screen
    assert "0_model=oracle" in screen and "1_model=noop" in screen and "2/2 trials" in screen
    assert "[1/2 " not in screen  # no line per trial
