"""A component from its config: the ``_target_`` called with the other keys (one way for every component)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra.utils import get_method

from codesign._protocols import Sandbox


def construct(cfg: dict[str, Any], **kwargs: Any) -> Any:
    """Build a component from a plain config: ``_target_`` called with the other keys. Nested configs are
    passed as plain dicts — a component that holds others (an evaluator's judge model) builds them itself.
    Cheaper than ``instantiate`` (no OmegaConf round trip, ~3 ms per component per trial)."""
    params = {k: v for k, v in cfg.items() if not k.startswith("_")}
    return get_method(cfg["_target_"])(**params, **kwargs)


def build_sandbox(cfg: dict[str, Any], workspace: Path, home: Path, hide: list[str] | None = None) -> Sandbox:
    return construct(cfg, workspace=workspace, home=home, hide=hide or [])
