"""Where the configs live and the resolvers they use."""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"


def register_resolvers() -> None:
    from codesign.tasks.select import bundled_suite

    if not OmegaConf.has_resolver("codesign.suite"):
        OmegaConf.register_new_resolver("codesign.suite", lambda: str(bundled_suite()))
