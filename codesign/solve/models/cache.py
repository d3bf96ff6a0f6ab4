"""An opt-in cache of model responses in the store, so a published grid re-runs and re-grades without keys.

``model.cache`` (and ``evaluator.judge.cache`` / ``evaluator.verifier.cache``):
- ``off`` (default): every call goes to the endpoint;
- ``write``: every call goes to the endpoint and its response is kept;
- ``read``: every call is answered from the cache, offline — a miss is an error naming the trial and call;
- ``read_write``: answered from the cache when there, else called and kept.

A response is keyed by everything that determines it: the model string, the messages, the tools and every
sampling parameter (temperature, max tokens, seed, extra parameters) — never the key or the endpoint's
address. Responses are stored under ``<store>/responses/`` (local or object storage), redacted like every
stored file. Replaying a stored trial: ``model.cache=read store.reuse=false``.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from codesign.errors import CodesignError

CacheMode = Literal["off", "read", "write", "read_write"]


class CacheMiss(CodesignError):
    """``cache=read`` and no stored response for this call."""


@dataclass
class _Where:
    store: Any  # codesign.store.Store
    trial: str  # named in a miss: task and seed


_WHERE: contextvars.ContextVar[_Where | None] = contextvars.ContextVar("codesign_response_cache", default=None)


@contextlib.contextmanager
def responses_in(store: Any, trial: str) -> Iterator[None]:
    """Calls made inside (and in threads started from it) use ``store``'s response cache."""
    token = _WHERE.set(_Where(store, trial))
    try:
        yield
    finally:
        _WHERE.reset(token)


def response_key(model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    from codesign.store import content_key

    return content_key("response-v1", model, messages, params)


def lookup(mode: CacheMode, key: str, model: str, call: int) -> dict[str, Any] | None:
    """The cached response for ``key``, or None when the call must go to the endpoint."""
    where = _WHERE.get()
    if mode in ("off", "write"):
        return None
    if where is None:
        if mode == "read":
            raise CacheMiss(
                f"{model}: cache=read, but this call is not inside a trial with a store",
                "replay through python -m codesign (the cache lives in the run's store)",
            )
        return None
    data = where.store.read_bytes(f"responses/{key}.json")
    if data is not None:
        return json.loads(data)
    if mode == "read":
        raise CacheMiss(
            f"no cached response for {model}, call {call + 1} of trial {where.trial} (cache key {key})",
            "record it first with cache=write (or read_write), against the endpoint, into this store",
        )
    return None


def keep(mode: CacheMode, key: str, response: dict[str, Any]) -> None:
    where = _WHERE.get()
    if where is None or mode not in ("write", "read_write"):
        return
    from codesign.redact import redact_data

    where.store.write_bytes(f"responses/{key}.json", json.dumps(redact_data(response)).encode())
