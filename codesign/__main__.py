"""``python -m codesign [overrides] [-m]``: compose the config with Hydra and run the pipeline."""

from __future__ import annotations

import os
from pathlib import Path

# Before anything imports them: no remote cost-map fetch (litellm), no usage stats (Ray).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from codesign.config import CONF_DIR, register_resolvers

register_resolvers()


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def main(cfg: DictConfig) -> None:
    from codesign.runner import run

    hc = HydraConfig.get()
    group = Path(hc.sweep.dir).name if hc.mode.name == "MULTIRUN" else None
    run(cfg, Path(hc.runtime.output_dir), run_name=hc.job.override_dirname or "default", group=group)


if __name__ == "__main__":
    main()
