"""``python -m codesign [overrides] [-m]``: compose the config with Hydra and run the pipeline.

With ``-m`` (or an experiment that sets ``hydra.mode: MULTIRUN``) Hydra expands the grid and codesign's
pooled launcher (``hydra_plugins/codesign_launcher``) runs every cell's trials in one executor pool."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# Before anything imports them: no remote cost-map fetch (litellm), no usage stats (Ray).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from codesign.config import CONF_DIR, register_resolvers
from codesign.errors import reported_to_user

register_resolvers()


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def main(cfg: DictConfig) -> Any:
    from codesign.runner import job
    from codesign.track.wandb import sweep_group

    hc = HydraConfig.get()
    assert hc.mode is not None  # Hydra sets the mode before it calls the task function
    sweep = Path(hc.sweep.dir) if hc.mode.name == "MULTIRUN" else None
    name = Path(hc.runtime.output_dir).name if sweep else hc.job.override_dirname or "default"
    group = sweep_group(hc.mode.name, str(hc.sweep.dir), hc.runtime.choices.get("experiment"))
    if sweep:  # a cell of a sweep: its error is the launcher's to report, the other cells go on
        return job(cfg, Path(hc.runtime.output_dir), name, group, str(sweep.resolve()))
    with reported_to_user():
        return job(cfg, Path(hc.runtime.output_dir), name, group, None)


if __name__ == "__main__":
    main()
