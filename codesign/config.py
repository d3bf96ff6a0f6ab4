"""Where the configs live and the resolvers they use."""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any, cast

from omegaconf import OmegaConf

# Package data, not a checkout folder: a built wheel carries it (a Ray worker image, `runtime_env: {pip: ...}`), so
# `python -m codesign` composes without the repository. The repository's top-level `conf` links here.
CONF_DIR = Path(__file__).resolve().parent / "conf"


def bundled_suite() -> Path:
    """The sample suite shipped with codesign (package data, like the configs)."""
    return Path(str(resources.files("codesign") / "suite"))


def register_resolvers() -> None:
    if not OmegaConf.has_resolver("codesign.suite"):
        OmegaConf.register_new_resolver("codesign.suite", lambda: str(bundled_suite()))
    if not OmegaConf.has_resolver("codesign.folder"):
        OmegaConf.register_new_resolver("codesign.folder", folder_name)


def folder_name(text: str, limit: int = 120) -> str:
    """``text`` as one folder name: a cell's overrides may hold paths and URLs (``tasks.root=/data/x``),
    whose slashes would nest folders; a name past the file system's limit is cut and made unique by a hash."""
    import hashlib

    safe = "".join("_" if c in '/\\:"<>|?*' or ord(c) < 32 else c for c in text)
    if len(safe.encode()) <= limit:
        return safe
    return safe.encode()[: limit - 9].decode(errors="ignore") + "~" + hashlib.sha256(text.encode()).hexdigest()[:8]


def compose_cli(argv: list[str], default_overrides: list[str] | None = None, return_hydra: bool = False):
    """Compose the main config from ``key=value`` overrides, for helper commands that are not Hydra apps
    (no output folder, no logging set-up). Later overrides win over ``default_overrides``."""
    from hydra import compose, initialize_config_dir

    register_resolvers()
    bad = [a for a in argv if "=" not in a]
    if bad:
        raise SystemExit(f"expected Hydra overrides like tasks=all, got {bad}")
    given = {a.split("=", 1)[0] for a in argv}
    overrides = [o for o in default_overrides or [] if o.split("=", 1)[0] not in given] + list(argv)
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=overrides, return_hydra_config=return_hydra)


def plain_dict(node: Any) -> dict[str, Any]:
    """A mapping config node as a plain dict, its interpolations resolved: what a component is built from."""
    out = OmegaConf.to_container(node, resolve=True)
    if not isinstance(out, dict):
        raise TypeError(f"expected a mapping config, got {type(out).__name__}: {out!r}")
    return cast(dict[str, Any], out)  # OmegaConf types keys loosely; a component config's keys are strings


def nested_dicts(node: Any) -> Iterator[dict[str, Any]]:
    """Every mapping in a plain config tree (a trial spec, a component's config), the outermost first: the
    model configs a spec holds sit at any depth (the solver's, a judge's, a verifier's)."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from nested_dicts(value)
    elif isinstance(node, list):
        for value in node:
            yield from nested_dicts(value)
