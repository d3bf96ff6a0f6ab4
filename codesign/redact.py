"""Secrets never land in what codesign stores: trajectories, evidence, logs, reports, W&B.

Two nets: the values of this process's secret-named environment variables (API keys, tokens, passwords
— whatever their shape), and strings shaped like well-known credentials wherever they come from. The
sandbox already keeps secrets away from solver commands and candidate apps; this is the second line.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any

MARK = "[redacted]"
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.I)
_SHAPES = re.compile(
    "|".join(
        [
            r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}",  # OpenAI, Anthropic
            r"\bAKIA[0-9A-Z]{16}\b",  # AWS access key id
            r"\bgh[pousr]_[A-Za-z0-9]{30,}",  # GitHub
            r"\bxox[abprs]-[A-Za-z0-9-]{10,}",  # Slack
            r"\bAIza[0-9A-Za-z_-]{35}",  # Google
            r"\bhf_[A-Za-z0-9]{30,}",  # Hugging Face
            r"\b[Bb]earer\s+[A-Za-z0-9._~+/-]{20,}=*",  # an Authorization header
        ]
    )
)
_MIN_SECRET = 8  # shorter values ("1", "true") would redact ordinary text


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret (``OPENAI_API_KEY``, ``RAY_AUTH_TOKEN``)."""
    return bool(_SECRET_NAME.search(name))


def secret_values() -> list[str]:
    """The values of secret-named environment variables, longest first (read each time: tests set them)."""
    values = {v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= _MIN_SECRET}
    return sorted(values, key=len, reverse=True)


@functools.lru_cache(maxsize=8)
def _pattern(values: tuple[str, ...]) -> re.Pattern[str]:
    """One pattern for these secret values (longest first) and the credential shapes: a single pass over a text."""
    return re.compile("|".join([*(re.escape(v) for v in values), _SHAPES.pattern]))


def _current_pattern() -> re.Pattern[str]:
    # Once per call of redact/redact_data, not per string (a trajectory line's hundreds of strings took 12 ms
    # of a trial's ~70 ms of CPU); and the environment's raw bytes decide whether its secrets are read again
    # (decoding every variable through os.environ costs ~60 µs, comparing the raw pairs ~3 µs).
    raw = getattr(os.environ, "_data", None)
    if raw is None:  # not CPython's os.environ: read it
        return _pattern(tuple(secret_values()))
    return _pattern(_secrets_of(tuple(raw.items())))


@functools.lru_cache(maxsize=8)
def _secrets_of(environment: tuple[tuple[bytes, bytes], ...]) -> tuple[str, ...]:
    del environment  # the cache key: the same raw environment has the same secrets
    return tuple(secret_values())


def redact(text: str) -> str:
    return _current_pattern().sub(MARK, text)


def redact_data(obj: Any) -> Any:
    """``redact`` applied to every string inside lists, tuples and dicts (keys included)."""
    return _redact_with(_current_pattern(), obj)


def _redact_with(pattern: re.Pattern[str], obj: Any) -> Any:
    if isinstance(obj, str):
        return pattern.sub(MARK, obj)
    if isinstance(obj, dict):
        return {_redact_with(pattern, k): _redact_with(pattern, v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_redact_with(pattern, v) for v in obj)
    return obj
