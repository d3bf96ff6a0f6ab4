"""Every component is built here, from the ``_target_`` of its config group (one place, one way)."""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import sys
import tempfile
import types
import typing
from pathlib import Path
from typing import Any

from hydra.utils import get_class, get_method, instantiate
from omegaconf import OmegaConf

from codesign.config import plain_dict
from codesign.construct import construct
from codesign.errors import ConfigError
from codesign.solve.models.family import config_family


def behaviour(cfg: Any) -> Any:
    """A component config without the keys that do not change what it does (prices, retries, timeouts,
    concurrency, display names): each component class lists them in ``not_in_key``. What else decides its
    behaviour is added: the text of its ``prompt_fields`` (the config's, or the file its default reads) and its
    ``key_material(cfg)`` (e.g. the content of prompt files it names), as digests. Nested component configs
    (an evaluator's judge) are reduced the same way. Content keys are built from this."""
    if isinstance(cfg, list):
        return [behaviour(v) for v in cfg]
    if not isinstance(cfg, dict):
        return cfg
    component = None
    if isinstance(cfg.get("_target_"), str):
        try:
            component = get_method(cfg["_target_"])
        except Exception:  # an unknown target is refused by preflight; the key needs no opinion on it
            component = None
    skip = tuple(getattr(component, "not_in_key", ()))
    out = {k: behaviour(v) for k, v in cfg.items() if k not in skip}
    if component is not None:
        material = prompt_digests(component, cfg, tuple(getattr(component, "prompt_fields", ())))
        if hasattr(component, "key_material"):
            material |= component.key_material(cfg)
        if material:
            out["_key_material"] = material
    return out


def prompt_digests(component: Any, cfg: dict[str, Any], fields: tuple[str, ...]) -> dict[str, str]:
    """A content digest of each prompt field's effective text: the config's, else its default (for a harness,
    a prompt file read by the field's default factory) — editing the file changes the key."""
    import hashlib

    defaults = {f.name: f for f in dataclasses.fields(component)} if dataclasses.is_dataclass(component) else {}
    out = {}
    for name in fields:
        text = cfg.get(name)
        if text is None and name in defaults:
            f = defaults[name]
            text = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        out[name] = hashlib.sha256(str(text).encode()).hexdigest()[:16]
    return out


def build_evaluator(cfg: dict[str, Any]) -> Any:
    return construct(cfg)


def build(cfg: dict[str, Any]) -> Any:
    """Build any other component (tracker, executor) from its config."""
    return instantiate(cfg, _convert_="all")


# Arguments codesign passes itself when it builds a component (not config keys).
_SUPPLIED = {"workspace", "home", "hide", "reference_patch"}


def validate_component(cfg: dict[str, Any], where: str) -> None:
    """Refuse a component config before any trial: an unknown ``_target_``, unknown keys (with the closest
    valid name), values of the wrong type or out of range (the component's own annotations and ``Field``
    constraints are the schema). Nested configs with a ``_target_`` (an evaluator's judge) are checked too."""
    import pydantic

    target = cfg.get("_target_")
    try:
        factory = get_method(target) if isinstance(target, str) else None
    except Exception:
        factory = None
    if factory is None:
        raise ConfigError(f"{where}._target_ {target!r} cannot be imported", "point it at a class or function")
    if dataclasses.is_dataclass(factory):
        allowed = {f.name for f in dataclasses.fields(factory) if f.init and not f.name.startswith("_")}
    else:
        allowed = set(inspect.signature(factory).parameters)
    hints = typing.get_type_hints(factory, include_extras=True)
    for key, value in cfg.items():
        if key.startswith("_"):
            continue
        if key not in allowed - _SUPPLIED:
            close = difflib.get_close_matches(key, sorted(allowed - _SUPPLIED), n=1)
            raise ConfigError(
                f"{where}.{key} is not a setting of {target}",
                (f"did you mean {where}.{close[0]}? " if close else "")
                + f"allowed: {', '.join(sorted(allowed - _SUPPLIED))}",
            )
        if isinstance(value, dict) and "_target_" in value:
            validate_component(value, f"{where}.{key}")
            continue
        if key in hints:
            try:
                pydantic.TypeAdapter(hints[key]).validate_python(value, strict=False)
            except pydantic.ValidationError as e:
                problem = "; ".join(err["msg"] for err in e.errors())
                raise ConfigError(
                    f"{where}.{key}={value!r} is not allowed: {problem}", f"expected {_describe(hints[key])}"
                ) from None


def _describe(hint: Any) -> str:
    """A type as a user reads it: ``int ≥ 1``, ``float > 0 or None``."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) is typing.Annotated:
        signs = (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<"))
        constraints = [c for meta in args[1:] for c in getattr(meta, "metadata", [meta])]
        bounds = [f"{sign} {getattr(c, attr)}" for c in constraints for attr, sign in signs if hasattr(c, attr)]
        return " ".join([_describe(args[0]), *bounds])
    if args and typing.get_origin(hint) in (typing.Union, types.UnionType):
        return " or ".join(_describe(a) for a in args)
    if args:
        return str(hint).replace("typing.", "")
    return "None" if hint is type(None) else getattr(hint, "__name__", str(hint))


def _validate_run_settings(cfg: Any) -> None:
    """The run-wide keys of ``conf/config.yaml`` (not components): each with its type and range."""
    import pydantic

    from codesign._types import Dollars

    schema: dict[str, Any] = {
        "seeds": typing.Annotated[list[int], pydantic.Field(min_length=1)],
        "budget.max_cost_usd": Dollars | None,
        "budget.allow_unknown_cost": bool,
        "attribution.below": typing.Annotated[float, pydantic.Field(ge=0, le=1)] | None,
        "stages.evaluate": bool,
        "store.reuse": bool | typing.Literal["stale"],
    }
    for key, hint in schema.items():
        value = OmegaConf.select(cfg, key)
        value = OmegaConf.to_container(value) if OmegaConf.is_config(value) else value
        try:
            pydantic.TypeAdapter(hint).validate_python(value, strict=False)
        except pydantic.ValidationError as e:
            problem = "; ".join(err["msg"] for err in e.errors())
            raise ConfigError(f"{key}={value!r} is not allowed: {problem}", f"expected {_describe(hint)}") from None


def _check_prices(cfg: Any) -> None:
    """A cost cap or budget over a model whose price is unknown could never fire: refused, unless allowed."""
    budget, cap = cfg.budget.get("max_cost_usd"), cfg.regime.get("max_cost_usd")
    if (budget is None and cap is None) or cfg.budget.get("allow_unknown_cost"):
        return
    priced = [("model", cfg.model)]
    if budget is not None:  # the budget is charged with grading too
        roles = [r for r in ("judge", "verifier") if cfg.evaluator.get(r)]
        priced += [(f"evaluator.{role}", cfg.evaluator[role]) for role in roles]
    for where, node in priced:
        model = construct(plain_dict(node)) if not node.get("uses_reference") else None
        if model is not None and hasattr(model, "price_known") and not model.price_known():
            what = "budget.max_cost_usd" if budget is not None else "regime.max_cost_usd"
            raise ConfigError(
                f"{where} {node.get('name')!r} has no known price, so {what} could never be reached",
                f"set {where}.input_cost_per_mtok and {where}.output_cost_per_mtok (USD per million tokens), "
                "or accept it: budget.allow_unknown_cost=true",
            )


def families(cfg: Any) -> dict[str, str | None]:
    """The provider family of the solver's model and of the evaluator's judge and verifier (None: unknown or
    none), as the tables show them (codesign.solve.models.family)."""
    evaluator = plain_dict(cfg.evaluator) if cfg.get("evaluator") is not None else {}
    return {
        "solver_family": config_family(plain_dict(cfg.model)),
        "judge_family": config_family(evaluator.get("judge")),
        "verifier_family": config_family(evaluator.get("verifier")),
    }


def check_families(cfg: Any) -> list[str]:
    """Warnings for a judge or verifier of the solver's family (self-preference); an error instead with
    ``evaluator.forbid_same_family=true``."""
    found = families(cfg)
    solver = found["solver_family"]
    same = [role for role in ("judge", "verifier") if solver is not None and found[f"{role}_family"] == solver]
    if not same:
        return []
    evaluator = plain_dict(cfg.evaluator)
    names = ", ".join(f"the {role} {evaluator[role].get('name')!r}" for role in same)
    message = (
        f"{names} and the solver {cfg.model.name!r} are both of the {solver} family: "
        "judges tend to prefer their own family's work"
    )
    if evaluator.get("forbid_same_family"):
        raise ConfigError(
            message,
            "choose a judge and verifier of another family (e.g. evaluator.judge=…), set their family if it is "
            "wrong (evaluator.judge.family=…), or allow it: evaluator.forbid_same_family=false",
        )
    return [f"{message} (evaluator.forbid_same_family=true refuses this)"]


def preflight(cfg: Any) -> None:
    """Checks that must fail before any trial starts (a missing API key, a missing CLI or engine):
    the model, harness and sandbox classes may define ``check()``; each is built once here and checked."""
    harness, sandbox = get_class(cfg.harness._target_), cfg.sandbox._target_.rsplit(".", 1)[-1]
    supported = getattr(harness, "supported_sandboxes", None)
    uses_harness = getattr(get_class(cfg.regime._target_), "uses_harness", True)
    if supported and uses_harness and sandbox not in supported:
        raise ConfigError(
            f"harness {cfg.harness.name!r} cannot run in sandbox {sandbox}",
            f"use a sandbox of type {', '.join(supported)} (e.g. sandbox=local or sandbox=confined)",
        )
    # Dependency installs and candidates' builds run under bubblewrap whatever the sandbox kind.
    from codesign.sandbox.local import LocalSandbox

    scratch = Path(tempfile.gettempdir())  # nothing is created where the user launched codesign
    LocalSandbox(scratch, scratch, confine=True).check()
    _validate_run_settings(cfg)
    _check_prices(cfg)
    for warning in check_families(cfg):
        print(f"warning: {warning}", file=sys.stderr)
    for group in ("model", "harness", "regime", "sandbox", "evaluator", "tracker", "executor"):
        if cfg.get(group) is not None:
            validate_component(plain_dict(cfg[group]), group)
    for group in ("model", "harness", "sandbox", "evaluator"):
        node = cfg.get(group)
        if node is None or node.get("uses_reference") or not hasattr(get_class(node._target_), "check"):
            continue
        extra = {"workspace": scratch, "home": scratch} if group == "sandbox" else {}
        construct(plain_dict(node), **extra).check()
