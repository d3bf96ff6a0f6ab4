"""The benchmark scripts still run (tiny sizes; their figures are not asserted: speed lives in benchmarks/)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import REPO

pytestmark = pytest.mark.slow


def bench(*args: str) -> str:
    proc = subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_evidence_benchmark_runs():
    out = bench("benchmarks/evidence.py", "--repeats", "1", "--tasks", "me-bakery-header-mockup")
    assert "me-bakery-header-mockup" in out and "median ratio to the floor" in out


@pytest.mark.duration(231)
def test_solver_benchmark_runs():
    out = bench("benchmarks/solvers.py", "--trials", "4", "--runs", "1", "--batch", "2", "--turns", "3")
    assert "framework overhead per trial" in out and "medians of 1 runs of 2" in out and "ms per trial" in out
    assert "CPU per agent turn" in out
    assert "of the reachable rate" in out


def test_capacity_benchmark_runs():
    out = bench("benchmarks/capacity.py", "--latency", "0.1", "--calls", "3", "--in-flight", "2",
                "--trials-per-level", "2", "--split-trials", "1", "--tasks", "me-bakery-header-mockup")  # fmt: skip
    assert "CPU per trial by stage" in out and "model client" in out and "evidence" in out
    level = out.strip().splitlines()[-1].split()
    assert level[:2] == ["2", "2"], out  # the level's trials all finished, graded (a failed trial stops it)


def test_load_benchmark_runs():
    out = bench("benchmarks/load.py", "--levels", "1", "2", "--tasks", "me-bakery-header-mockup")
    assert "agreement" in out and "100.0%" in out.splitlines()[-1]


def test_curation_stages_benchmark_runs():
    out = bench("benchmarks/curation.py", "--records", "2000", "--sample", "300")
    assert "records/s (target: under 60 s on 2 cores" in out and "curate() end to end" in out, out
    assert "every count and id as planted" in out and "LSH and every pair: equal" in out, out


def test_sandbox_benchmark_runs():
    out = bench("benchmarks/sandbox.py", "--repeats", "3")
    assert "bubblewrap" in out and "unconfined" in out


@pytest.mark.duration(94)
def test_grid_benchmark_runs():
    out = bench(
        "benchmarks/grid.py", "--tasks", "me-bakery-header-mockup", "--latency", "0.2", "--solve-only", "--workers", "1"
    )  # one actor (and browser) per pool: the basic launcher starts a pool per cell
    assert "faster than Hydra's basic launcher on a 2 × 2 grid (4 trials, latency 0.2 s)" in out


@pytest.mark.duration(141)
def test_cluster_benchmark_runs():
    out = bench("benchmarks/cluster.py", "--seeds", "1", "--latency", "0.2", "--solve-only")
    assert "two local nodes:" in out and "× the trials/s of one" in out
    rows = [line.split() for line in out.splitlines() if line[:5].strip() in ("1", "2")]
    assert [(r[0], r[1]) for r in rows] == [("1", "1"), ("2", "2")]  # the two-node run used both nodes
