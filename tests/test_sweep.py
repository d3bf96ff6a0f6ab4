"""A grid in one executor pool (python -m codesign.sweep)."""

from __future__ import annotations

import polars as pl
import pytest

from codesign import sweep


def test_expand_is_hydras_grid_plus_an_experiments_declared_params():
    cells = sweep.expand(["model=oracle,noop", "harness=native,claude_code", "tracker=none"])
    assert len(cells) == 4 and ["model=oracle", "harness=claude_code", "tracker=none"] in cells
    grid = sweep.expand(["experiment=harness_sensitivity"])
    assert len(grid) == 6 and all("experiment=harness_sensitivity" in c for c in grid)
    narrowed = sweep.expand(["experiment=harness_sensitivity", "model=noop"])  # the command line wins
    assert len(narrowed) == 3 and all("model=noop" in c for c in narrowed)
    assert sweep.cell_names([["model=oracle", "x=1"], ["model=noop", "x=1"]]) == ["0_model=oracle", "1_model=noop"]


@pytest.mark.browser
@pytest.mark.slow
def test_cells_share_one_pool_and_a_failed_cell_does_not_stop_the_others(tmp_path, monkeypatch, suite_copy, capsys):
    root = suite_copy("me-bakery-header-mockup")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code = sweep.main(["model=oracle,noop,gpt-6-astra", "tasks=all", f"tasks.root={root}", "executor=inline",
                       f"store.root={tmp_path / 'store'}"])  # fmt: skip
    out = capsys.readouterr()
    assert code == 1 and "cannot start" in out.err and "OPENAI_API_KEY" in out.err
    assert "2 cells, 2 trials in one pool" in out.out
    cells = sorted(p for p in (tmp_path / "outputs" / "sweeps").glob("*/*") if (p / "tasks.parquet").exists())
    assert [c.name for c in cells] == ["0_model=oracle", "1_model=noop"]
    strict = [pl.read_parquet(c / "tasks.parquet")["strict"][0] for c in cells]
    assert strict[0] == 1.0 and strict[1] < 0.5
    for c in cells:  # one W&B run per cell, open side by side while the pool ran
        assert len(list((c / "wandb").glob("offline-run-*/run-*.wandb"))) == 1
