"""Hydra launcher ``pooled`` (codesign's default): every cell of a grid in one executor pool.

Hydra's basic launcher runs a grid's cells one after another and each waits for its slowest trial; a
grid of thousands of trials then drains the cluster after every cell. This launcher lets Hydra set up
each cell exactly as it always does (output folder ``<sweep>/<n>_<overrides>/`` with ``.hydra/``, job
config, logging), but the job only *prepares* its cell; once all are prepared, their trials run in one
pool (one set of Ray actors and browsers, one budget), and each cell is concluded in its own folder with
its own tables and W&B run. A cell that cannot start is reported and the others run; Hydra then ends the
command with the first such error. ``hydra/launcher=basic`` (or any other launcher) still works.

No ``from __future__ import annotations``: Hydra's plugin scan runs this module outside ``sys.modules``,
where dataclasses cannot resolve string annotations.
"""

import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.core.utils import JobReturn, JobStatus, configure_log, filter_overrides, run_job, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, open_dict

log = logging.getLogger(__name__)


@dataclass
class PooledLauncherConf:
    _target_: str = "hydra_plugins.codesign_launcher.pooled_launcher.PooledLauncher"


ConfigStore.instance().store(group="hydra/launcher", name="pooled", node=PooledLauncherConf, provider="codesign")


class PooledLauncher(Launcher):
    def __init__(self) -> None:
        self.config: DictConfig | None = None
        self.task_function: TaskFunction | None = None
        self.hydra_context: HydraContext | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config, self.task_function, self.hydra_context = config, task_function, hydra_context

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from codesign.config import folder_name
        from codesign.errors import ConfigError, reported_to_user
        from codesign.runner import Cell, Command, check_something_ran, pooling, run_cells

        assert self.config is not None and self.task_function is not None and self.hydra_context is not None
        setup_globals()
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        returns: list[JobReturn] = []
        # A cell's folder is named by what sets it apart (``3_model=noop,regime=agentic``), not by every
        # override of the command (store paths, server URLs, executor settings).
        shared = set.intersection(*(set(o) for o in job_overrides)) if len(job_overrides) > 1 else set()
        with pooling(Command()):
            for idx, overrides in enumerate(job_overrides, start=initial_job_idx):
                log.info(f"#{idx} : {' '.join(filter_overrides(overrides))}")
                cfg = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
                with open_dict(cfg):
                    cfg.hydra.job.id = cfg.hydra.job.num = idx
                    if shared:
                        varying = ",".join(o for o in filter_overrides(overrides) if o not in shared)
                        cfg.hydra.sweep.subdir = f"{idx}_{folder_name(varying)}"
                returns.append(run_job(hydra_context=self.hydra_context, task_function=self.task_function,
                                       config=cfg, job_dir_key="hydra.sweep.dir",
                                       job_subdir_key="hydra.sweep.subdir"))  # fmt: skip
                configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)

        started = [r for r in returns if r.status == JobStatus.COMPLETED and isinstance(r._return_value, Cell)]
        failed = [r for r in returns if r not in started]
        for r in failed:
            print(f"cell {_name(r)} cannot start: {r._return_value}", file=sys.stderr)
        cells = [r._return_value for r in started]
        n_trials = sum(len(c.specs) for c in cells)
        print(f"sweep {sweep_dir}: {len(cells)} cells, {n_trials} trials in one pool", flush=True)
        if cells:
            try:
                for r, tables in zip(started, run_cells(cells), strict=True):
                    r.return_value = tables
            except Exception as e:  # the pool itself failed: every started cell carries the error
                for r in started:
                    r.status, r.return_value = JobStatus.FAILED, e
                raise
            _rank_stability([r.return_value for r in started], sweep_dir)
            with reported_to_user():
                check_something_ran([r.return_value for r in started])
        if failed:  # the cells that started are run and written; the command still fails, without a traceback
            names = ", ".join(_name(r) for r in failed)
            with reported_to_user():
                hint = "each cell's own error is printed above; fix it and run the same command again"
                raise ConfigError(f"{len(failed)} of {len(returns)} cells could not start: {names}", hint)
        return returns


def _name(r: JobReturn) -> str:
    return Path(r.hydra_cfg.hydra.runtime.output_dir).name if r.hydra_cfg else "?"


def _rank_stability(tables: list[dict[str, Any]], sweep_dir: Path) -> None:
    import polars as pl

    from codesign.score.metrics import whole_tables
    from codesign.score.ranking import rank_stability

    stability = rank_stability(pl.concat([t["summary"] for t in tables], how="diagonal_relaxed"))
    stability.write_parquet(sweep_dir / "rank_stability.parquet")
    if stability.height:
        with whole_tables(float_precision=2):
            print("ranking stability (Spearman's rho of strict completion):")
            print(stability)
