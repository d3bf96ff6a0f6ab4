"""``python -m codesign.curate inputs=[…] [curation.select.min_session_score=8 …]``: see docs/curation.md."""

from __future__ import annotations

from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from codesign.config import plain_dict, register_resolvers
from codesign.curate.pipeline import Settings, curate


@hydra.main(config_path="../conf", config_name="curate", version_base="1.3")
def main(cfg: DictConfig) -> None:
    settings = Settings.from_config(plain_dict(cfg))
    if not settings.inputs:
        raise SystemExit("no inputs: name session logs, e.g. inputs=[~/.claude/projects/my-app] (docs/curation.md)")
    out = Path(HydraConfig.get().runtime.output_dir)
    result = curate(settings, out)
    print(result.funnel.text())
    print(f"candidates: {out / 'candidates.parquet'}  funnel: {out / 'funnel.html'}  drafts: {out / 'drafts'}")


if __name__ == "__main__":
    register_resolvers()
    main()
