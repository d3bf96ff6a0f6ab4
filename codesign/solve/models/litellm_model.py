"""Any chat model litellm can reach, as a :class:`codesign.Model`.

Keys are never in configs: a config names the environment variable that holds the key
(``api_key_env``), which is read at call time and never logged. Rate-limit and server errors are
retried with exponential backoff (honouring ``Retry-After``); authentication and bad-request
errors are not.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import random
import time
from dataclasses import dataclass, field
from typing import Any

from codesign._protocols import ModelReply
from codesign._types import Count, NonNegative, Seconds, Usage
from codesign.errors import ConfigError
from codesign.runtime.clock import waiting
from codesign.solve.models.cache import CacheMode, keep, lookup, response_key
from codesign.solve.models.connections import per_thread_client
from codesign.solve.models.limits import endpoint_slot, endpoint_slot_async

log = logging.getLogger(__name__)


COST_HEADER = "llm_provider-x-litellm-response-cost"  # a provider's own figure for the call


@functools.cache
def _litellm() -> Any:
    """Import litellm (6-8 s: only when a model is really called) and quiet its banners. Cached: an import
    statement takes the import lock, which 64 trial threads would otherwise queue on."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the price table remotely
    import litellm

    litellm.suppress_debug_info = True
    # litellm logs every call at INFO; a Hydra job configures the root logger at INFO, so it would flood.
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx"):
        logging.getLogger(name).setLevel(logging.WARNING)
    litellm.drop_params = True  # a provider that lacks e.g. `seed` gets the call without it
    if litellm.client_session is None:  # trial threads each get a connection pool (codesign.solve.models.connections)
        from litellm.llms.custom_httpx.http_handler import get_ssl_configuration, http2_enabled

        http2 = http2_enabled()
        litellm.client_session = per_thread_client(get_ssl_configuration(http2=http2), http2)
    return litellm


@functools.cache
def _retryable() -> tuple[type[Exception], ...]:
    litellm = _litellm()
    return (
        litellm.RateLimitError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
        litellm.APIConnectionError,
        litellm.Timeout,
        litellm.BadGatewayError,
    )


def _supports_seed(model: str) -> bool:
    """Whether litellm sends a ``seed`` for this provider (others would refuse the call)."""
    try:
        return "seed" in (_litellm().get_supported_openai_params(model=model) or [])
    except Exception:  # an unknown provider: do not risk a refused call
        return False


def supports_structured(model: str) -> bool:
    """Whether litellm knows this model to honour ``response_format`` with a JSON schema."""
    try:
        return bool(_litellm().supports_response_schema(model=model))
    except Exception:  # an unknown model or provider: not assumed
        return False


def backoff_delay(first_s: float, cap_s: float, attempt: int) -> float:
    """Exponential backoff with jitter that stays under the cap: half to all of ``min(cap, first · 2^n)``."""
    return min(cap_s, first_s * 2**attempt) * random.uniform(0.5, 1.0)


@dataclass
class LitellmModel:
    # Settings that do not change what it does: left out of content keys (codesign.build.behaviour).
    not_in_key = (
        "name",
        "family",
        "input_cost_per_mtok",
        "output_cost_per_mtok",
        "cached_input_cost_per_mtok",
        "max_retries",
        "backoff_s",
        "max_backoff_s",
        "timeout_s",
        "api_key_env",
        "stream",
        "max_concurrency",
        "cache",
    )
    name: str  # short name for tables, W&B and store keys
    model: str  # litellm model string, e.g. "openai/gpt-6-astra", "anthropic/claude-opus-4-8"
    api_key_env: str | None = None  # environment variable holding the key (None: the provider's default)
    api_base: str | None = None  # custom endpoint (OpenAI-compatible servers, proxies)
    temperature: float | None = 0.0
    max_tokens: Count = 8192
    seed: int | None = None
    timeout_s: Seconds = 600.0
    max_retries: NonNegative = 6  # retries of rate-limit / server / connection errors
    backoff_s: Seconds = 2.0  # first retry delay; doubles, with jitter, up to max_backoff_s
    max_backoff_s: Seconds = 60.0
    # Prices in USD per million tokens; when set they take precedence over litellm's price table.
    input_cost_per_mtok: float | None = None
    output_cost_per_mtok: float | None = None
    cached_input_cost_per_mtok: float | None = None
    context_window: Count | None = None  # tokens; single-shot regimes budget the prompt against it
    supports_vision: bool = True
    supports_audio: bool = False
    stream: bool = False  # stream replies (some gateways only stream); the chunks are rebuilt into one reply
    max_concurrency: Count | None = None  # calls in flight to this endpoint across the whole pool (None: no cap)
    extra: dict[str, Any] = field(default_factory=dict)  # passed to litellm.completion as-is
    cache: CacheMode = "off"  # responses kept in / answered from the store (codesign.solve.models.cache)
    family: str | None = None  # provider family for the same-family check (None: from ``model``)
    _calls: int = field(default=0, init=False, repr=False)  # calls so far: a cache miss names which one

    def check(self) -> None:
        """Fail before any trial starts when the key is missing, naming the variable (a replay needs none)."""
        if self.cache != "read" and self.api_key_env and not os.environ.get(self.api_key_env):
            raise ConfigError(
                f"model {self.name!r} needs an API key in ${self.api_key_env}, which is not set",
                f"export {self.api_key_env}=... (or choose an offline model: model=oracle / model=noop)",
            )

    def _kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"timeout": self.timeout_s, "max_tokens": self.max_tokens, **self.extra}
        if self.api_key_env:
            kwargs["api_key"] = os.environ.get(self.api_key_env)
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.seed is not None and _supports_seed(self.model):
            kwargs["seed"] = self.seed
        return kwargs

    def complete(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        """``litellm.completion`` with this model's settings and retries (or the response cache); returns
        litellm's response."""
        call, self._calls = self._calls, self._calls + 1
        if self.cache == "off":
            return self._call(messages, **kwargs)
        key = self._response_key(messages, kwargs)
        cached = self._cached(key, call)
        if cached is not None:
            return cached
        return self._kept(key, self._call(messages, **kwargs))

    async def acomplete(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        """:meth:`complete` as a coroutine (``litellm.acompletion``): no thread is held while the provider
        answers, and a cancelled call is abandoned at once, its endpoint slot given back."""
        call, self._calls = self._calls, self._calls + 1
        if self.cache == "off":
            return await self._acall(messages, **kwargs)
        key = self._response_key(messages, kwargs)
        cached = self._cached(key, call)
        if cached is not None:
            return cached
        return self._kept(key, await self._acall(messages, **kwargs))

    def _response_key(self, messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        # What determines the response; never the key, the endpoint's address or the client's timeout.
        params = {k: v for k, v in (self._kwargs() | kwargs).items() if k not in ("api_key", "api_base", "timeout")}
        return response_key(self.model, messages, params)

    def _cached(self, key: str, call: int) -> Any | None:
        cached = lookup(self.cache, key, self.name, call)
        if cached is None:
            return None
        response = _litellm().ModelResponse(**cached["response"])
        if cached.get("cost_header") is not None:
            response._hidden_params = {"additional_headers": {COST_HEADER: cached["cost_header"]}}
        return response

    def _kept(self, key: str, response: Any) -> Any:
        headers = (getattr(response, "_hidden_params", {}) or {}).get("additional_headers") or {}
        keep(self.cache, key, {"response": response.model_dump(), "cost_header": headers.get(COST_HEADER)})
        return response

    def _call(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        litellm = _litellm()

        for attempt in range(self.max_retries + 1):
            try:
                # A slot of the endpoint's pool-wide limit is held for the call, not for the retry wait.
                with endpoint_slot(self.model, self.api_base, self.max_concurrency):
                    if self.stream:
                        chunks = list(
                            litellm.completion(
                                model=self.model,
                                messages=messages,
                                num_retries=0,
                                stream=True,
                                stream_options={"include_usage": True},
                                **(self._kwargs() | kwargs),
                            )
                        )
                        return litellm.stream_chunk_builder(chunks, messages=messages)
                    return litellm.completion(
                        model=self.model, messages=messages, num_retries=0, **(self._kwargs() | kwargs)
                    )
            except _retryable() as e:
                if attempt == self.max_retries:
                    raise
                with waiting():  # a provider's back-off is its queue, not the call (codesign.runtime.clock)
                    time.sleep(self._backoff(e, attempt))
        raise AssertionError("unreachable")

    async def _acall(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        with waiting():  # the first call imports litellm (6-8 s): off the event loop, and not the call's time
            litellm = await asyncio.to_thread(_litellm)

        for attempt in range(self.max_retries + 1):
            try:
                async with endpoint_slot_async(self.model, self.api_base, self.max_concurrency):
                    if self.stream:
                        stream = await litellm.acompletion(
                            model=self.model,
                            messages=messages,
                            num_retries=0,
                            stream=True,
                            stream_options={"include_usage": True},
                            **(self._kwargs() | kwargs),
                        )
                        chunks = [chunk async for chunk in stream]
                        return litellm.stream_chunk_builder(chunks, messages=messages)
                    return await litellm.acompletion(
                        model=self.model, messages=messages, num_retries=0, **(self._kwargs() | kwargs)
                    )
            except _retryable() as e:
                if attempt == self.max_retries:
                    raise
                with waiting():
                    await asyncio.sleep(self._backoff(e, attempt))
        raise AssertionError("unreachable")

    def _backoff(self, error: Exception, attempt: int) -> float:
        wait = _retry_after(error) or backoff_delay(self.backoff_s, self.max_backoff_s, attempt)
        log.warning(
            "%s: %s; retry %d/%d in %.1fs", self.name, type(error).__name__, attempt + 1, self.max_retries, wait
        )
        return wait

    def query(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], response_format: dict[str, Any] | None = None
    ) -> ModelReply:
        """One reply; ``response_format`` (a JSON schema) asks the provider for a structured reply."""
        extra = {"response_format": response_format} if response_format else {}
        return self._reply(self.complete(messages, **({"tools": tools} if tools else {}), **extra))

    async def aquery(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], response_format: dict[str, Any] | None = None
    ) -> ModelReply:
        """:meth:`query` as a coroutine (judges and verifiers call this: cancellable, no thread held)."""
        extra = {"response_format": response_format} if response_format else {}
        return self._reply(await self.acomplete(messages, **({"tools": tools} if tools else {}), **extra))

    def supports_structured(self) -> bool:
        return supports_structured(self.model)

    def _reply(self, response: Any) -> ModelReply:
        message = response.choices[0].message.model_dump(exclude_none=True)
        message = {k: v for k, v in message.items() if k in ("role", "content", "tool_calls")}
        message.setdefault("content", None)
        usage = usage_of(response)
        cost, source = self.cost(response, usage)
        return ModelReply(message, usage, cost, source)

    def prompt_cost(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> tuple[float | None, str]:
        """What sending ``messages`` costs before any reply (a call abandoned on its time bound was still
        received and may be billed): its input tokens, counted by litellm, at the input price."""
        try:
            tokens = int(_litellm().token_counter(model=self.model, messages=messages, tools=tools or None))
        except Exception:
            return None, "unknown"
        if self.input_cost_per_mtok is not None:
            return tokens * self.input_cost_per_mtok / 1e6, "litellm_estimate"
        try:
            price = _litellm().get_model_info(self.model).get("input_cost_per_token")
        except Exception:
            price = None
        return (tokens * float(price), "litellm_estimate") if price else (None, "unknown")

    def price_known(self) -> bool:
        """Whether this model's calls can be priced: configured prices, or litellm's price table knows it."""
        if self.input_cost_per_mtok is not None and self.output_cost_per_mtok is not None:
            return True
        try:
            info = _litellm().get_model_info(self.model)
        except Exception:
            return False
        return bool(info.get("input_cost_per_token") or info.get("output_cost_per_token"))

    def cost(self, response: Any, usage: Usage) -> tuple[float | None, str]:
        """The call's cost and where the figure came from: config prices, the provider, litellm's table."""
        if self.input_cost_per_mtok is not None and self.output_cost_per_mtok is not None:
            cached_price = self.cached_input_cost_per_mtok
            cached_price = self.input_cost_per_mtok if cached_price is None else cached_price
            fresh = usage.input_tokens - usage.cached_tokens
            cost = (
                fresh * self.input_cost_per_mtok
                + usage.cached_tokens * cached_price
                + usage.output_tokens * self.output_cost_per_mtok
            ) / 1e6
            return cost, "config"
        hidden = getattr(response, "_hidden_params", {}) or {}
        header_cost = (hidden.get("additional_headers") or {}).get(COST_HEADER)
        if header_cost is not None:
            return float(header_cost), "provider"
        if "response_cost" in hidden:  # litellm priced the call already, or found no price (~1 ms to try again)
            priced = hidden["response_cost"]
            return (float(priced), "litellm_estimate") if priced is not None else (None, "unknown")
        try:
            return float(_litellm().completion_cost(completion_response=response, model=self.model)), "litellm_estimate"
        except Exception:  # unknown model: litellm raises; the cost is then honestly unknown
            return None, "unknown"


def usage_of(response: Any) -> Usage:
    u = getattr(response, "usage", None)
    if u is None:
        return Usage()
    details = getattr(u, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or 0
    return Usage(int(u.prompt_tokens or 0), int(u.completion_tokens or 0), int(cached))


def _retry_after(error: Exception) -> float | None:
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None) or {}
    value = headers.get("retry-after") if hasattr(headers, "get") else None
    try:
        return min(float(value), 120.0) if value is not None else None
    except ValueError:
        return None
