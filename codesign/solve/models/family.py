"""Which provider family a model belongs to, so a judge of the solver's own family can be flagged.

Multimodal judges prefer their own family's outputs (self-preference), so a run whose judge or verifier is
of the solver's family says so before it starts (``evaluator.forbid_same_family=true`` refuses it). The
family comes from the model's name where it says (``openrouter/anthropic/claude-…`` is Anthropic's, not
OpenRouter's), else from the litellm provider prefix; a model config's ``family`` overrides both (a
fine-tune served under another name, a gateway alias). Unknown: ``None``, never compared.
"""

from __future__ import annotations

import re

# Model-name patterns, checked against each part of the model's name (after the provider), from its end.
_BY_NAME = [
    (r"claude", "anthropic"),
    (r"gpt|^o[1-9](\b|-)|chatgpt|davinci", "openai"),
    (r"gemini|gemma|palm", "google"),
    (r"kimi|moonshot", "moonshot"),
    (r"qwen|qwq", "alibaba"),
    (r"glm|z-ai|zhipu", "zhipu"),
    (r"deepseek", "deepseek"),
    (r"grok|x-ai", "xai"),
    (r"minimax|abab", "minimax"),
    (r"llama", "meta"),
    (r"mistral|mixtral|codestral|magistral", "mistral"),
    (r"^anthropic$", "anthropic"),  # a gateway's vendor segment: openrouter/anthropic/<name>
    (r"^openai$", "openai"),
    (r"^google$", "google"),
]
# litellm providers that are one family's own API (gateways such as openrouter, bedrock or together are not).
_BY_PROVIDER = {
    "openai": "openai",
    "azure": "openai",
    "anthropic": "anthropic",
    "gemini": "google",
    "vertex_ai": "google",
    "moonshot": "moonshot",
    "dashscope": "alibaba",
    "xai": "xai",
    "deepseek": "deepseek",
    "mistral": "mistral",
    "zhipuai": "zhipu",
}


def family_of(model: str | None, override: str | None = None, api_base: str | None = None) -> str | None:
    """The family of a litellm model string (``provider/model``), or ``override`` when given. With an
    ``api_base``, ``openai/…`` is any OpenAI-compatible server: its family is only what the name says."""
    if override:
        return override.strip().lower()
    if not model:
        return None  # an offline stand-in (oracle, noop) or a model without a litellm string
    provider, *name = [p.lower() for p in model.split("/") if p]
    for part in reversed(name):
        for pattern, family in _BY_NAME:
            if re.search(pattern, part):
                return family
    if not name or (api_base and provider == "openai"):
        return None
    return _BY_PROVIDER.get(provider)


def config_family(node: dict[str, object] | None) -> str | None:
    """The family of a model config (the model group's, or an evaluator's judge or verifier)."""
    if not node:
        return None
    text = {k: v if isinstance(v, str) else None for k, v in node.items() if k in ("model", "family", "api_base")}
    return family_of(text.get("model"), text.get("family"), text.get("api_base"))
