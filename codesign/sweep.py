"""A whole grid in one pool: ``python -m codesign.sweep model=kimi-k3,qwen3.8-27b harness=native,claude_code``.

``python -m codesign … -m`` runs Hydra's cells one after another, each fanning its own trials out; here
every cell's trials go to one executor pool at once (one set of Ray actors and browsers), so a grid of
thousands of trials keeps the cluster busy to the end instead of draining after each cell. Each cell
still gets its own output folder, tables and W&B run (grouped by sweep); a cell that cannot start (a
missing key, no tasks) is reported and the others run. Takes the same overrides as ``-m``, including an
``experiment=…`` whose ``hydra.sweeper.params`` declares its grid.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import polars as pl
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser

from codesign.config import compose_cli
from codesign.errors import CodesignError
from codesign.score.ranking import rank_stability


def expand(overrides: list[str]) -> list[list[str]]:
    """The cells of a grid: Hydra's own sweep expansion of the overrides plus any ``hydra.sweeper.params``
    the composed config declares (an experiment's grid); command-line values win."""
    parser = OverridesParser.create()
    given = parser.parse_overrides(overrides)
    plain = [o.input_line for o in given if not o.is_sweep_override()]
    declared = compose_cli(plain, return_hydra=True).hydra.sweeper.params or {}
    keys = {o.get_key_element() for o in given}
    extra = [f"{k}={v}" for k, v in declared.items() if k not in keys]
    everything = parser.parse_overrides([*overrides, *extra])
    return [list(cell) for batch in BasicSweeper.split_arguments(everything, max_batch_size=None) for cell in batch]


def cell_names(cells: list[list[str]]) -> list[str]:
    """``<n>_<the overrides that differ between cells>``, like Hydra's sweep subfolders."""
    shared = set.intersection(*(set(c) for c in cells)) if len(cells) > 1 else set()
    return [f"{i}_{re.sub(r'[^A-Za-z0-9_.,=+-]+', '_', ','.join(o for o in c if o not in shared))}"[:120]
            for i, c in enumerate(cells)]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    from codesign.runner import prepare, run_cells

    cells_overrides = expand(list(sys.argv[1:] if argv is None else argv))
    sweep_dir = (Path("outputs") / "sweeps" / time.strftime("%Y-%m-%d_%H-%M-%S")).resolve()
    cells, failed = [], []
    for name, overrides in zip(cell_names(cells_overrides), cells_overrides, strict=True):
        try:
            out = sweep_dir / name
            out.mkdir(parents=True, exist_ok=True)
            cells.append(prepare(compose_cli(overrides), out, name, group=sweep_dir.name))
        except CodesignError as e:
            failed.append(name)
            print(f"cell {name} cannot start: {e}", file=sys.stderr)
    print(f"sweep {sweep_dir}: {len(cells)} cells, {sum(len(c.specs) for c in cells)} trials in one pool", flush=True)
    if cells:
        tables = run_cells(cells)
        stability = rank_stability(pl.concat([t["summary"] for t in tables]))
        stability.write_parquet(sweep_dir / "rank_stability.parquet")
        if stability.height:
            with pl.Config(tbl_formatting="ASCII_MARKDOWN", tbl_hide_dataframe_shape=True,
                           tbl_hide_column_data_types=True, tbl_rows=-1, float_precision=2):  # fmt: skip
                print("ranking stability (Spearman's rho of strict completion):")
                print(stability)
    if failed:
        print(f"{len(failed)} of {len(cells_overrides)} cells could not start: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
