"""codesign's Hydra launcher: ``hydra/launcher=pooled`` (the default in conf/config.yaml)."""
