"""``python -m codesign.curate inputs=[…] [curation.select.min_session_score=8 …]``: see docs/curation.md."""

from __future__ import annotations

import os
from pathlib import Path

# Before anything imports them: no remote cost-map fetch (litellm, for the LLM scorer), no usage stats (Ray).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from codesign.config import CONF_DIR, plain_dict, register_resolvers
from codesign.curate.pipeline import Settings, curate
from codesign.errors import ConfigError, reported_to_user

register_resolvers()


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="curate")
def main(cfg: DictConfig) -> None:
    with reported_to_user():
        settings = Settings.from_config(plain_dict(cfg))
        if not settings.inputs:
            raise ConfigError(
                "no inputs", "name session logs, e.g. inputs=[~/.claude/projects/my-app] (docs/curation.md)"
            )
        out = Path(HydraConfig.get().runtime.output_dir)
        result = curate(settings, out)
        print(result.funnel.text())
        print(f"candidates: {out / 'candidates.parquet'}  funnel: {out / 'funnel.html'}  drafts: {out / 'drafts'}")


if __name__ == "__main__":
    main()
